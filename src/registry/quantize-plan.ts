// Which type each tensor of a model becomes when /api/create quantizes it. For Ollama's types
// (Q8_0, Q4_K_S, Q4_K_M) this follows Ollama's choice (server/quantization.go, ported from
// llama.cpp's llama_tensor_get_type): the output matrix as Q6_K, attn_v and ffn_down of some layers
// with more bits (Q6_K for Q4_K_M, Q5_K for the first layers in Q4_K_S), Q8_0 for MLA and the
// attention of 8-expert models; a row length that the block size does not divide falls back to a
// 32-weight type, then to F16. Q4_0 (an ollamats extra) quantizes every matrix alike, as
// `llama-quantize --pure`; F32, F16 and BF16 convert every float tensor of two or more dimensions.
import type { EncodeTarget } from "./ggml-encode.js";
import { ggmlType, type GgufInfo, type GgufTensorInfo } from "./gguf.js";

export type QuantizeTarget = "F32" | "F16" | "BF16" | "Q8_0" | "Q4_0" | "Q4_K_S" | "Q4_K_M";

/** general.file_type of each target (llama_ftype). */
export const FTYPE: Readonly<Record<QuantizeTarget, number>> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7, Q4_K_S: 14, Q4_K_M: 15, BF16: 32 };

const ENCODE_TARGETS: readonly EncodeTarget[] = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"];

/** ggml tensor type id, weights per block, bytes per block, of every type we write. */
export const TENSOR_TYPES = Object.fromEntries(
  ENCODE_TARGETS.map((n) => {
    const t = ggmlType(n);
    return [n, [t.id, t.block, t.bytes] as const];
  }),
) as Readonly<Record<EncodeTarget, readonly [number, number, number]>>;

/** The float types a tensor can be quantized from: F32, F16, BF16. */
const SOURCE_TYPES: ReadonlySet<number> = new Set([0, 1, 30]);

const FLOAT_TARGETS: ReadonlySet<QuantizeTarget> = new Set(["F32", "F16", "BF16"]);

/** Whether a tensor is a weight matrix that quantization may touch (Ollama's newType checks). */
function isQuantizableMatrix(t: GgufTensorInfo): boolean {
  const n = t.name;
  if (!n.endsWith("weight") || t.dims.length < 2) return false;
  if (n.startsWith("v.") || n.includes("mm.")) return false; // vision encoder and projector
  if (n === "position_embd.weight" || n === "token_types.weight") return false;
  const keep = ["_norm.weight", "ffn_gate_inp.weight", "ffn_gate_inp_shexp.weight", "ssm_conv1d.weight", "shortconv.conv.weight", "time_mix_first.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight", "per_layer_token_embd.weight"];
  return !keep.some((k) => n.includes(k));
}

/** Layers that get more bits in Q4_K_M: the first and last eighth and every third one between. */
function useMoreBits(i: number, n: number): boolean {
  return i < Math.floor(n / 8) || i >= Math.floor((7 * n) / 8) || (i - Math.floor(n / 8)) % 3 === 2;
}

/** Qwen3-Next / Qwen3.5 linear-attention models: Ollama's fixed map for Q4_K_S and Q4_K_M. */
function qwenLinearAttnType(name: string): EncodeTarget | undefined {
  if (/\.(attn_v|ffn_down_exps|ffn_down_shexp)\.weight$/.test(name)) return "Q6_K";
  if (/\.(attn_q|attn_k|attn_output|attn_qkv|attn_gate|ssm_ba|ssm_beta|ssm_alpha|ssm_out|ffn_gate_exps|ffn_gate_shexp|ffn_up_exps|ffn_up_shexp)\.weight$/.test(name)) return "Q4_K";
  return undefined;
}

/** A type whose block divides the row length: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, else F16. */
function fitRow(type: EncodeTarget, row: number): EncodeTarget {
  if (row % TENSOR_TYPES[type][1] === 0) return type;
  const fallback: EncodeTarget = type === "Q4_K" ? "Q5_0" : type === "Q5_K" ? "Q5_1" : type === "Q6_K" ? "Q8_0" : type;
  return row % TENSOR_TYPES[fallback][1] === 0 ? fallback : "F16";
}

/**
 * The new type of every tensor of `info` (in file order) for `target`, or null where the tensor is
 * copied as it is.
 */
export function planTensorTypes(info: GgufInfo, target: QuantizeTarget): Array<EncodeTarget | null> {
  const tensors = info.tensors;
  if (FLOAT_TARGETS.has(target)) {
    const id = TENSOR_TYPES[target as EncodeTarget][0];
    return tensors.map((t) => (SOURCE_TYPES.has(t.type) && t.dims.length >= 2 && t.type !== id ? (target as EncodeTarget) : null));
  }
  const arch = String(info.metadata["general.architecture"] ?? "");
  const experts = Math.max(1, Number(info.metadata[`${arch}.expert_count`] ?? 0) || 0);
  const layers = new Set(tensors.filter((t) => t.name.startsWith("blk.")).map((t) => t.name.split(".")[1])).size;
  const nAttnV = tensors.filter((t) => /attn_v\.weight|attn_qkv\.weight|attn_kv_b\.weight/.test(t.name)).length;
  const hasOutput = tensors.some((t) => t.name === "output.weight");
  const kQuant = target === "Q4_K_S" || target === "Q4_K_M";
  const base: EncodeTarget = kQuant ? "Q4_K" : (target as EncodeTarget);
  let iAttnV = 0;
  let iFfnDown = 0;

  const choose = (t: GgufTensorInfo): EncodeTarget => {
    const n = t.name;
    const row = t.dims[0] ?? 1;
    if (target === "Q4_0") return fitRow(base, row);
    if (kQuant && ["qwen3next", "qwen35", "qwen35moe"].includes(arch)) {
      const q = qwenLinearAttnType(n);
      if (q) return q;
    }
    let type = base;
    if (n === "output.weight" || (!hasOutput && n === "token_embd.weight")) {
      type = row % TENSOR_TYPES[base][1] !== 0 ? "Q8_0" : base === "Q8_0" ? "Q8_0" : "Q6_K";
    } else if (n.includes("attn_v.weight")) {
      if (target === "Q4_K_M" && useMoreBits(iAttnV, nAttnV)) type = "Q6_K";
      else if (target === "Q4_K_S" && iAttnV < 4) type = "Q5_K";
      if (experts === 8) type = "Q8_0";
      iAttnV++;
    } else if (n.includes("attn_k.weight")) {
      if (experts === 8) type = "Q8_0";
    } else if (/attn_k_b\.weight|attn_v_b\.weight|attn_kv_a_mqa\.weight|attn_q_a\.weight|attn_q_b\.weight/.test(n)) {
      type = "Q8_0"; // MLA: low-rank projections lose too much at 4 bits
    } else if (n.includes("ffn_down")) {
      if (target === "Q4_K_M" && useMoreBits(iFfnDown, layers)) type = "Q6_K";
      else if (target === "Q4_K_S" && iFfnDown < Math.floor(layers / 8)) type = "Q5_K";
      iFfnDown++;
    } else if (n.includes("attn_output.weight")) {
      if (experts === 8 && kQuant) type = "Q5_K";
    } else if (n.includes("attn_qkv.weight")) {
      if (target === "Q4_K_M") type = "Q5_K";
    }
    return fitRow(type, row);
  };

  return tensors.map((t) => {
    if (!SOURCE_TYPES.has(t.type) || !isQuantizableMatrix(t)) return null;
    const type = choose(t);
    return TENSOR_TYPES[type][0] === t.type ? null : type;
  });
}
