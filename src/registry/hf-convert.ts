// A Hugging Face model directory (config.json, *.safetensors, a tokenizer) converted to one GGUF,
// as Ollama's converter does for `create` (convert/convert.go): Llama-family models
// (LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM), Qwen2 and Qwen3 (Qwen2ForCausalLM,
// Qwen3ForCausalLM, Qwen3MoeForCausalLM),
// Gemma 1–3 text models (GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM) and Phi-3 / Phi-4
// (Phi3ForCausalLM), and BERT encoders for embeddings (BertModel: hf-convert-bert.ts).
// Tensors are renamed to llama.cpp's names, Llama's q/k rows reordered from Hugging Face's
// rotate-half layout to llama.cpp's interleaved one (Qwen's rope is already Hugging Face's),
// matrices written as F16 and vectors (norms, biases) as F32; the
// metadata comes from config.json and the tokenizer files (hf-tokenizer.ts). Everything is read
// and checked before the first byte is written, so a bad directory is a 400, not a broken model.
import { open, type FileHandle } from "node:fs/promises";
import { readFullyAt } from "../fs/read-at.js";
import { decode, encode } from "./ggml-encode.js";
import { ggmlType } from "./gguf.js";
import { kv, writeGgufAt, type KvEntry, type StreamedTensorSpec } from "./gguf-write.js";
import { BERT_ARCHITECTURES, planBertConversion } from "./hf-convert-bert.js";
import { ConvertError, count, modelNameOf, num, readJson, readSources, readTokenizer, type ConvertPlan, type PlannedTensor, type Source } from "./hf-source.js";
import { obj } from "./hf-tokenizer.js";

type Arch = "llama" | "qwen2" | "qwen3" | "qwen3moe" | "gemma" | "gemma2" | "gemma3" | "phi3";
const ARCHITECTURES: Readonly<Record<string, Arch>> = {
  LlamaForCausalLM: "llama",
  MistralForCausalLM: "llama",
  MixtralForCausalLM: "llama",
  Qwen2ForCausalLM: "qwen2",
  Qwen3ForCausalLM: "qwen3",
  Qwen3MoeForCausalLM: "qwen3moe",
  GemmaForCausalLM: "gemma",
  Gemma2ForCausalLM: "gemma2",
  Gemma3ForCausalLM: "gemma3",
  Phi3ForCausalLM: "phi3",
};
const isGemma = (a: Arch) => a === "gemma" || a === "gemma2" || a === "gemma3";
/** Gemma 2 and 3 norm before and after attention and the MLP (before RENAMES' Llama names). */
const GEMMA2_RENAMES: ReadonlyArray<[string, string]> = [
  ["post_attention_layernorm", "post_attention_norm"],
  ["pre_feedforward_layernorm", "ffn_norm"],
  ["post_feedforward_layernorm", "post_ffw_norm"],
];
/** Phi-3's fused matrices: q, k and v rows in one, gate and up rows in another. */
const PHI3_RENAMES: ReadonlyArray<[string, string]> = [
  ["self_attn.qkv_proj", "attn_qkv"],
  ["mlp.gate_up_proj", "ffn_up"],
];
const renamesFor = (a: Arch) => (a === "gemma2" || a === "gemma3" ? [...GEMMA2_RENAMES, ...RENAMES] : a === "phi3" ? [...PHI3_RENAMES, ...RENAMES] : RENAMES);

/** Hugging Face names → llama.cpp's, applied in order (Ollama's Replacements). */
const RENAMES: ReadonlyArray<[string, string]> = [
  ["lm_head", "output"],
  ["model.embed_tokens", "token_embd"],
  ["model.norm", "output_norm"],
  ["model.layers", "blk"],
  ["input_layernorm", "attn_norm"],
  ["self_attn.q_proj", "attn_q"],
  ["self_attn.k_proj", "attn_k"],
  ["self_attn.v_proj", "attn_v"],
  ["self_attn.o_proj", "attn_output"],
  ["self_attn.q_norm", "attn_q_norm"],
  ["self_attn.k_norm", "attn_k_norm"],
  ["mlp.gate_proj", "ffn_gate"],
  ["mlp.down_proj", "ffn_down"],
  ["mlp.up_proj", "ffn_up"],
  ["post_attention_layernorm", "ffn_norm"],
  // a mixture of experts' router (Mixtral's, Qwen3-MoE's)
  ["block_sparse_moe.gate.weight", "ffn_gate_inp.weight"],
  ["mlp.gate.weight", "ffn_gate_inp.weight"],
];
/** One expert's matrix: the layer, the expert, and which of gate / up / down it is. */
const EXPERT = /^model\.layers\.(\d+)\.(?:block_sparse_moe|mlp)\.experts\.(\d+)\.(w1|w2|w3|gate_proj|up_proj|down_proj)\.weight$/;
const EXPERT_KIND: Readonly<Record<string, "gate" | "up" | "down">> = { w1: "gate", w3: "up", w2: "down", gate_proj: "gate", up_proj: "up", down_proj: "down" };
const KNOWN: Readonly<Record<Arch, RegExp>> = {
  llama: /^(token_embd\.weight|output_norm\.weight|output\.weight|blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|ffn_norm|ffn_gate|ffn_up|ffn_down|ffn_gate_inp)\.weight)$/,
  qwen2: /^(token_embd\.weight|output_norm\.weight|output\.weight|blk\.\d+\.((attn_norm|attn_q|attn_k|attn_v|attn_output|ffn_norm|ffn_gate|ffn_up|ffn_down)\.weight|(attn_q|attn_k|attn_v)\.bias))$/,
  qwen3: /^(token_embd\.weight|output_norm\.weight|output\.weight|blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|attn_q_norm|attn_k_norm|ffn_norm|ffn_gate|ffn_up|ffn_down)\.weight)$/,
  qwen3moe: /^(token_embd\.weight|output_norm\.weight|output\.weight|blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|attn_q_norm|attn_k_norm|ffn_norm|ffn_gate_inp)\.weight)$/,
  gemma: /^(token_embd\.weight|output_norm\.weight|blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|ffn_norm|ffn_gate|ffn_up|ffn_down)\.weight)$/,
  gemma2: /^(token_embd\.weight|output_norm\.weight|blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|post_attention_norm|ffn_norm|ffn_gate|ffn_up|ffn_down|post_ffw_norm)\.weight)$/,
  gemma3: /^(token_embd\.weight|output_norm\.weight|output\.weight|blk\.\d+\.(attn_norm|attn_q|attn_k|attn_v|attn_output|attn_q_norm|attn_k_norm|post_attention_norm|ffn_norm|ffn_gate|ffn_up|ffn_down|post_ffw_norm)\.weight)$/,
  phi3: /^(token_embd\.weight|output_norm\.weight|output\.weight|blk\.\d+\.(attn_norm|attn_qkv|attn_output|ffn_norm|ffn_up|ffn_down)\.weight)$/,
};
/** Every layer's tensors. */
const LLAMA_LAYER = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"].map((n) => `${n}.weight`);
const PER_LAYER: Readonly<Record<Arch, string[]>> = {
  llama: LLAMA_LAYER,
  qwen2: [...LLAMA_LAYER, "attn_q.bias", "attn_k.bias", "attn_v.bias"],
  qwen3: [...LLAMA_LAYER, "attn_q_norm.weight", "attn_k_norm.weight"],
  qwen3moe: [...LLAMA_LAYER, "attn_q_norm.weight", "attn_k_norm.weight"],
  gemma: LLAMA_LAYER,
  gemma2: [...LLAMA_LAYER, "post_attention_norm.weight", "post_ffw_norm.weight"],
  gemma3: [...LLAMA_LAYER, "attn_q_norm.weight", "attn_k_norm.weight", "post_attention_norm.weight", "post_ffw_norm.weight"],
  phi3: ["attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"].map((n) => `${n}.weight`),
};

/** As llama.cpp's Gemma converters: no space prefix, and the turn and fill-in-the-middle tokens. */
const GEMMA_TOKENS = { spacePrefix: false, named: { eot: "<end_of_turn>", prefix: "<|fim_prefix|>", middle: "<|fim_middle|>", suffix: "<|fim_suffix|>" } };

/** Read and check the directory (`files`: file name → path on disk) and plan the GGUF. */
export async function planConversion(files: Map<string, string>): Promise<ConvertPlan> {
  const config = (await readJson(files, "config.json")) as Record<string, unknown> | undefined;
  if (!config || typeof config !== "object") throw new ConvertError("config.json is missing: a safetensors model directory needs its config.json");
  const archName = Array.isArray(config.architectures) ? String(config.architectures[0]) : undefined;
  if (archName && BERT_ARCHITECTURES.has(archName)) return planBertConversion(files, config);
  const arch = archName && Object.hasOwn(ARCHITECTURES, archName) ? ARCHITECTURES[archName] : undefined;
  if (!arch) {
    throw new ConvertError(
      `unsupported architecture ${JSON.stringify(archName ?? "")}: ollamats converts ${[...Object.keys(ARCHITECTURES), ...BERT_ARCHITECTURES].join(", ")}; convert other models to GGUF with llama.cpp's convert_hf_to_gguf.py`,
    );
  }
  const hidden = count(config.hidden_size);
  const layers = count(config.num_hidden_layers);
  const heads = count(config.num_attention_heads);
  const ffn = count(config.intermediate_size);
  if (!hidden || !layers || !heads || !ffn) throw new ConvertError("config.json lacks hidden_size, num_hidden_layers, num_attention_heads or intermediate_size");
  const headsKv = count(config.num_key_value_heads) ?? heads;
  const headDim = count(config.head_dim) ?? Math.floor(hidden / heads);
  // a mixture of experts: Mixtral's num_local_experts, Qwen3-MoE's num_experts (0: dense)
  const experts = count(config.num_local_experts) ?? count(config.num_experts) ?? 0;
  const expertFfn = count(config.moe_intermediate_size) ?? ffn;
  const dims: ModelDims = { hidden, ffn, up: arch === "phi3" ? 2 * ffn : ffn, q: heads * headDim, kv: headsKv * headDim, head: headDim, experts, expertFfn };

  const sources = await readSources(files);
  const plan: ConvertPlan = { kvs: [], tensors: [], totalBytes: 0 };
  const seen = new Set<string>();
  if (arch === "qwen3moe" && !experts) throw new ConvertError("config.json lacks num_experts");
  if (arch === "qwen3moe" && ((count(config.decoder_sparse_step) ?? 1) !== 1 || (Array.isArray(config.mlp_only_layers) && config.mlp_only_layers.length > 0))) {
    throw new ConvertError("a Qwen3-MoE model with dense layers among its expert layers (decoder_sparse_step, mlp_only_layers) is not converted; use llama.cpp's convert_hf_to_gguf.py");
  }
  /** Each layer's experts' matrices, by llama.cpp name (blk.N.ffn_gate_exps.weight …), by expert. */
  const expertParts = new Map<string, Source[]>();
  for (const s of sources) {
    if (s.name.endsWith("rotary_emb.inv_freq")) continue; // recomputed by the engine
    const ex = experts ? EXPERT.exec(s.name) : null;
    if (ex) {
      const [, layer, e, kind] = ex;
      if (Number(layer) >= layers || Number(e) >= experts) throw new ConvertError(`tensor ${s.name} is beyond config.json's ${layers} layers of ${experts} experts`);
      const name = `blk.${layer}.ffn_${EXPERT_KIND[kind!]}_exps.weight`;
      const parts = expertParts.get(name) ?? expertParts.set(name, []).get(name)!;
      if (parts[Number(e)]) throw new ConvertError(`tensor ${s.name} appears twice`);
      parts[Number(e)] = s;
      continue;
    }
    // Gemma and Gemma 2 always tie their output to the embeddings (llama.cpp drops an lm_head).
    if ((arch === "gemma" || arch === "gemma2") && s.name === "lm_head.weight") continue;
    // a text-only Gemma 3 fine-tune may keep the multimodal model's `language_model.` prefix
    let name = arch === "gemma3" ? s.name.replace(/^(model\.)?language_model\.(model\.)?/, "model.") : s.name;
    for (const [from, to] of renamesFor(arch)) name = name.split(from).join(to);
    if (!KNOWN[arch].test(name)) throw new ConvertError(`tensor ${s.name} is not part of a ${archName} model as ollamats converts it`);
    if (seen.has(name)) throw new ConvertError(`tensor ${s.name} appears twice`);
    seen.add(name);
    const shape = s.tensor.shape;
    const vector = shape.length === 1 || name.endsWith(".bias");
    const layer = /^blk\.(\d+)\./.exec(name);
    if (layer && Number(layer[1]) >= layers) throw new ConvertError(`tensor ${s.name} is for layer ${layer[1]}, but config.json says ${layers} layers`);
    const want = expectedShape(name.replace(/^blk\.\d+\./, ""), dims, s.tensor.shape[0]);
    if (want.join() !== shape.join() || shape.includes(0)) throw new ConvertError(`tensor ${s.name} has shape [${shape.join(", ")}]; config.json makes it [${want.join(", ")}]`);
    const repackHeads = arch === "llama" && /\.attn_q\.weight$/.test(name) ? heads : arch === "llama" && /\.attn_k\.weight$/.test(name) ? headsKv : undefined;
    if (repackHeads && (shape.length !== 2 || shape[0]! % (repackHeads * 2) !== 0)) throw new ConvertError(`tensor ${s.name}: ${shape[0]} rows do not split into ${repackHeads} heads`);
    // Gemma's RMS norms scale by (1 + w) where llama.cpp's scale by w: 1 is added on the way.
    const add = isGemma(arch) && name.endsWith("norm.weight") ? { add: 1 } : {};
    plan.tensors.push({ source: s, name, dims: [...shape].reverse(), type: vector ? "F32" : "F16", ...(repackHeads ? { repackHeads } : {}), ...add });
    plan.totalBytes += s.tensor.bytes;
  }
  // The experts' matrices stacked on a third axis, expert 0 first: one tensor per layer and kind.
  for (const [name, parts] of expertParts) {
    const kind = /ffn_(gate|up|down)_exps/.exec(name)![1];
    const want = kind === "down" ? [hidden, expertFfn] : [expertFfn, hidden];
    for (let e = 0; e < experts; e++) {
      const p = parts[e];
      if (!p) throw new ConvertError(`${name.replace(/^blk\.(\d+)\..*/, "layer $1")} lacks expert ${e}'s ${kind} matrix`);
      if (p.tensor.shape.join() !== want.join()) throw new ConvertError(`tensor ${p.name} has shape [${p.tensor.shape.join(", ")}]; config.json makes it [${want.join(", ")}]`);
    }
    seen.add(name);
    plan.tensors.push({ name, dims: [want[1]!, want[0]!, experts], type: "F16", sources: parts });
    plan.totalBytes += parts.reduce((a, p) => a + p.tensor.bytes, 0);
  }
  for (const n of ["token_embd.weight", "output_norm.weight"]) if (!seen.has(n)) throw new ConvertError(`the safetensors files have no ${n === "token_embd.weight" ? "model.embed_tokens.weight" : "model.norm.weight"}`);
  // with experts, a router and the stacked experts in place of the one MLP
  const perLayer = experts ? [...PER_LAYER[arch].filter((n) => !/^ffn_(gate|up|down)\.weight$/.test(n)), "ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"] : PER_LAYER[arch];
  for (let i = 0; i < layers; i++) {
    const missing = perLayer.filter((n) => !seen.has(`blk.${i}.${n}`));
    if (missing.length === perLayer.length) throw new ConvertError(`the safetensors files have no weights for layer ${i} (config.json says ${layers} layers)`);
    if (missing.length > 0) throw new ConvertError(`layer ${i} lacks ${missing.join(", ")}`);
  }
  const vocabRows = plan.tensors.find((t) => t.name === "token_embd.weight")!.dims[1];
  const out = plan.tensors.find((t) => t.name === "output.weight");
  if (out && out.dims[1] !== vocabRows) throw new ConvertError(`lm_head.weight has ${out.dims[1]} rows, model.embed_tokens.weight ${vocabRows}`);

  // tokenizer: as many tokens as the embedding has rows (padded when it has fewer, as Ollama pads)
  const rows = plan.tensors.find((t) => t.name === "token_embd.weight")!.dims[1] ?? 0;
  const tokenizer = await readTokenizer(files, rows, isGemma(arch) ? GEMMA_TOKENS : {});

  const p = (k: string) => `${arch}.${k}`;
  const modelName = modelNameOf(config);
  const kvs: KvEntry[] = [
    kv.str("general.architecture", arch),
    ...(modelName ? [kv.str("general.name", modelName)] : []),
    kv.u32("general.file_type", 1),
    kv.u32("general.quantization_version", 2),
    ...tokenizer,
    kv.u32(p("vocab_size"), rows),
    kv.u32(p("block_count"), layers),
    kv.u32(p("embedding_length"), hidden),
    kv.u32(p("feed_forward_length"), ffn),
    kv.u32(p("attention.head_count"), heads),
    kv.u32(p("attention.head_count_kv"), headsKv),
  ];
  const ctx = count(config.max_position_embeddings);
  if (ctx) kvs.push(kv.u32(p("context_length"), ctx));
  // rope_theta, or transformers 5's rope_parameters (per attention kind for Gemma 3)
  const ropeParams = obj(config.rope_parameters);
  const theta = num(config.rope_theta) ?? num(obj(ropeParams?.full_attention)?.rope_theta) ?? num(ropeParams?.rope_theta) ?? (arch === "gemma3" ? 1_000_000 : undefined);
  if (theta && theta > 0) kvs.push(kv.f32(p("rope.freq_base"), theta));
  const eps = num(config.rms_norm_eps);
  if (eps && eps > 0) kvs.push(kv.f32(p("attention.layer_norm_rms_epsilon"), eps));
  const scaling = obj(config.rope_scaling) ?? {};
  const scalingType = scaling.type ?? scaling.rope_type;
  if (scalingType === "linear" && num(scaling.factor)) kvs.push(kv.str(p("rope.scaling.type"), "linear"), kv.f32(p("rope.scaling.factor"), num(scaling.factor)!));
  if (arch === "llama") {
    kvs.push(kv.u32(p("rope.dimension_count"), headDim));
    if (count(config.head_dim)) kvs.push(kv.u32(p("attention.head_dim"), headDim), kv.u32(p("attention.key_length"), headDim), kv.u32(p("attention.value_length"), headDim));
    const factors = llama3RopeFactors(scaling, headDim, theta ?? 0);
    if (factors) plan.tensors.unshift({ name: "rope_freqs.weight", dims: [factors.length], type: "F32", values: factors });
  } else if (arch !== "qwen2") {
    kvs.push(kv.u32(p("attention.key_length"), headDim), kv.u32(p("attention.value_length"), headDim));
  }
  if (isGemma(arch)) kvs.push(...gemmaKvs(arch, config, layers));
  if (experts) {
    const used = count(config.num_experts_per_tok);
    if (!used || used > experts) throw new ConvertError("config.json lacks num_experts_per_tok, or names more than its experts");
    kvs.push(kv.u32(p("expert_count"), experts), kv.u32(p("expert_used_count"), used));
    if (arch === "qwen3moe") kvs.push(kv.u32(p("expert_feed_forward_length"), expertFfn));
  }
  if (arch === "phi3") {
    const phi = phi3Rope(config, hidden, heads, ctx);
    kvs.push(...phi.kvs);
    plan.tensors.unshift(...phi.tensors);
  }
  if (arch !== "llama" && scaling.type === "yarn" && num(scaling.factor)) {
    kvs.push(kv.str(p("rope.scaling.type"), "yarn"), kv.f32(p("rope.scaling.factor"), num(scaling.factor)!));
  }
  plan.kvs = kvs;
  return plan;
}

/**
 * Phi-3's rope: a partial rotary dimension (Phi-4-mini), the original context, the sliding window
 * (0 for Phi-4), and for the long-context models LongRoPE's per-dimension factors as llama.cpp's
 * rope_factors_long / _short with their attention factor.
 */
function phi3Rope(c: Record<string, unknown>, hidden: number, heads: number, ctx: number | undefined): { kvs: KvEntry[]; tensors: PlannedTensor[] } {
  const p = (k: string) => `phi3.${k}`;
  const rotary = num(c.partial_rotary_factor) ?? 1;
  if (!(rotary > 0 && rotary <= 1)) throw new ConvertError(`config.json: partial_rotary_factor ${rotary} is out of range`);
  const ropeDims = Math.floor(Math.floor(rotary * hidden) / heads);
  const original = count(c.original_max_position_embeddings) ?? ctx;
  const kvs: KvEntry[] = [kv.u32(p("rope.dimension_count"), ropeDims), kv.u32(p("attention.sliding_window"), count(c.sliding_window) ?? 0)];
  if (original) kvs.push(kv.u32(p("rope.scaling.original_context_length"), original));
  const s = obj(c.rope_scaling);
  const long = s?.long_factor;
  if (!s || !Array.isArray(long) || long.length === 0) return { kvs, tensors: [] };
  const type = String(s.type ?? s.rope_type ?? "").toLowerCase();
  const short = s.short_factor;
  const factors = (v: unknown[], name: string) => {
    if (v.length !== ropeDims / 2 || !v.every((x) => num(x) !== undefined)) throw new ConvertError(`config.json: rope_scaling.${name} needs ${ropeDims / 2} numbers`);
    return Float32Array.from(v as number[]);
  };
  if (!Array.isArray(short)) throw new ConvertError("config.json: rope_scaling has long_factor but no short_factor");
  const scale = ctx && original ? ctx / original : 1;
  let attn: number;
  if (type === "su" || type === "longrope") attn = scale > 1 ? Math.sqrt(1 + Math.log(scale) / Math.log(original!)) : 1;
  else if (type === "yarn") attn = scale > 1 ? 0.1 * Math.log(scale) + 1 : 1;
  else throw new ConvertError(`config.json: rope_scaling type ${JSON.stringify(type)} is not one Phi-3 uses (longrope, su, yarn)`);
  kvs.push(kv.f32(p("rope.scaling.attn_factor"), attn));
  const tensors: PlannedTensor[] = [
    { name: "rope_factors_long.weight", dims: [ropeDims / 2], type: "F32", values: factors(long, "long_factor") },
    { name: "rope_factors_short.weight", dims: [ropeDims / 2], type: "F32", values: factors(short, "short_factor") },
  ];
  return { kvs, tensors };
}

/** Gemma 2's and 3's attention: sliding windows, soft caps, and Gemma 3's local rope base. */
function gemmaKvs(arch: Arch, c: Record<string, unknown>, layers: number): KvEntry[] {
  const p = (k: string) => `${arch}.${k}`;
  const out: KvEntry[] = [];
  const window = count(c.sliding_window);
  const finalCap = num(c.final_logit_softcapping);
  if (arch === "gemma2") {
    if (window) out.push(kv.u32(p("attention.sliding_window"), window));
    const attnCap = num(c.attn_logit_softcapping);
    if (attnCap) out.push(kv.f32(p("attn_logit_softcapping"), attnCap));
    if (finalCap) out.push(kv.f32(p("final_logit_softcapping"), finalCap));
  } else if (arch === "gemma3") {
    if (num(c.attn_logit_softcapping)) throw new ConvertError("config.json sets attn_logit_softcapping, which Gemma 3 does not have");
    // llama.cpp takes one local:global period (6 unless told); layer_types may say another
    const types = Array.isArray(c.layer_types) ? c.layer_types : undefined;
    const period = count(c.sliding_window_pattern) ?? (types ? types.indexOf("full_attention") + 1 : undefined);
    if (window && period !== 1) out.push(kv.u32(p("attention.sliding_window"), window));
    if (period && period > 1 && period !== 6 && period <= layers) out.push(kv.u32(p("attention.sliding_window_pattern"), period));
    if (finalCap) out.push(kv.f32(p("final_logit_softcapping"), finalCap));
    const ropeParams = obj(c.rope_parameters);
    const local = num(c.rope_local_base_freq) ?? num(obj(ropeParams?.sliding_attention)?.rope_theta) ?? 10_000;
    // llama.cpp's key, and Ollama's own engine's
    out.push(kv.f32(p("rope.freq_base_swa"), local), kv.f32(p("rope.local.freq_base"), local));
  }
  return out;
}

interface ModelDims {
  hidden: number;
  ffn: number;
  /** Rows of the up projection: Phi-3's holds the gate's rows too. */
  up: number;
  /** Experts per layer (0: none), and each one's MLP width. */
  experts: number;
  expertFfn: number;
  /** Rows of the query projection (heads × head size) and of the key and value ones. */
  q: number;
  kv: number;
  head: number;
}

/** The Hugging Face shape config.json gives a tensor (its llama.cpp name without `blk.N.`). */
function expectedShape(name: string, d: ModelDims, rows: number | undefined): number[] {
  switch (name) {
    case "token_embd.weight":
    case "output.weight":
      return [rows ?? 0, d.hidden]; // as many rows as the vocabulary, checked against the tokenizer
    case "output_norm.weight":
    case "attn_norm.weight":
    case "ffn_norm.weight":
    case "post_attention_norm.weight":
    case "post_ffw_norm.weight":
      return [d.hidden];
    case "attn_q.weight":
      return [d.q, d.hidden];
    case "attn_k.weight":
    case "attn_v.weight":
      return [d.kv, d.hidden];
    case "attn_output.weight":
      return [d.hidden, d.q];
    case "ffn_gate.weight":
      return [d.ffn, d.hidden];
    case "ffn_up.weight":
      return [d.up, d.hidden];
    case "attn_qkv.weight":
      return [d.q + 2 * d.kv, d.hidden];
    case "ffn_gate_inp.weight":
      return [d.experts, d.hidden];
    case "ffn_down.weight":
      return [d.hidden, d.ffn];
    case "attn_q.bias":
      return [d.q];
    case "attn_q_norm.weight":
    case "attn_k_norm.weight":
      return [d.head];
    default:
      return [d.kv]; // attn_k.bias, attn_v.bias
  }
}

/** Llama 3.1's frequency factors (rope_scaling.rope_type "llama3"), as Ollama computes them. */
function llama3RopeFactors(s: Record<string, unknown>, dim: number, theta: number): Float32Array | undefined {
  if (s.rope_type !== "llama3" || theta === 0 || dim < 2) return undefined;
  const factor = num(s.factor) || 8;
  const low = num(s.low_freq_factor) || 1;
  const high = num(s.high_freq_factor) || 4;
  const original = count(s.original_max_position_embeddings) ?? 8192;
  const out = new Float32Array(dim / 2);
  for (let i = 0; i < dim; i += 2) {
    const lambda = 2 * Math.PI * theta ** (i / dim);
    if (lambda < original / high) out[i / 2] = 1;
    else if (lambda > original / low) out[i / 2] = factor;
    else {
      const smooth = (original / lambda - low) / (high - low);
      out[i / 2] = 1 / ((1 - smooth) / factor + smooth);
    }
  }
  return out;
}

const CHUNK_BYTES = 1 << 20;

/** float32 values as the GGUF type `type` (F16 or F32). */
function encodeAs(type: "F16" | "F32", v: Float32Array): Buffer {
  const out = Buffer.alloc(v.length * ggmlType(type).bytes);
  encode(type, v, v.length, out);
  return out;
}

/**
 * Llama's q/k rows from Hugging Face's order (per head: the first halves of the rotary pairs,
 * then the second halves) to llama.cpp's (the pairs side by side).
 */
export function repackRows(v: Float32Array, rows: number, rowLen: number, heads: number): Float32Array {
  const out = new Float32Array(v.length);
  const perHead = rows / heads;
  const half = perHead / 2;
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < 2; j++) {
      for (let k = 0; k < half; k++) {
        const from = (h * perHead + j * half + k) * rowLen;
        const to = (h * perHead + 2 * k + j) * rowLen;
        out.set(v.subarray(from, from + rowLen), to);
      }
    }
  }
  return out;
}

/** A row-major [rows, cols] matrix as [cols, rows]. */
function transpose(v: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = v[r * cols + c]!;
  return out;
}

/** Write the planned GGUF at `file`; `onProgress(bytes read so far)`. */
export async function writeConversion(plan: ConvertPlan, file: string, onProgress: (done: number) => void, signal?: AbortSignal): Promise<{ digest: string; size: number }> {
  let done = 0;
  // each shard opened once, for all of its tensors
  const handles = new Map<string, Promise<FileHandle>>();
  const handle = (f: string) => handles.get(f) ?? handles.set(f, open(f, "r")).get(f)!;
  const tensors: StreamedTensorSpec[] = plan.tensors.map((t) => ({
    name: t.name,
    dims: t.dims,
    type: t.type,
    data: async function* () {
      const sources = t.sources ?? (t.source ? [t.source] : []);
      if (t.values || sources.length === 0) {
        yield encodeAs(t.type, t.values ?? new Float32Array(0));
        return;
      }
      for (const source of sources) {
        const src = source.tensor;
        const type = ggmlType(src.dtype);
        const elements = src.bytes / type.bytes;
        // Whole heads at a time for q/k (their rows are reordered within each head), else any
        // run of values: a few MB per read whatever the tensor's size.
        const rowLen = t.dims[0]!;
        const rows = elements / rowLen;
        const head = t.repackHeads ? (rows / t.repackHeads) * rowLen : 1;
        const unit = t.transposed ? elements : head;
        const step = unit * Math.max(1, Math.floor(CHUNK_BYTES / (unit * type.bytes)));
        const fh = await handle(source.file);
        for (let e = 0; e < elements; e += step) {
          if (signal?.aborted) throw signal.reason ?? new Error("canceled");
          const n = Math.min(step, elements - e);
          const raw = Buffer.alloc(n * type.bytes);
          if (!(await readFullyAt(fh, raw, raw.length, src.offset + e * type.bytes))) throw new ConvertError(`${src.name}: the file ends early`);
          if (src.dtype === t.type && !t.repackHeads && !t.transposed && t.scale === undefined && t.add === undefined) yield raw; // F16 → F16, F32 → F32: as it is
          else {
            let v: Float32Array = new Float32Array(n);
            decode(type.id, raw, v, n);
            if (t.scale !== undefined) for (let i = 0; i < n; i++) v[i] = v[i]! * t.scale;
            if (t.add !== undefined) for (let i = 0; i < n; i++) v[i] = v[i]! + t.add;
            if (t.transposed) v = transpose(v, rowLen, rows);
            yield encodeAs(t.type, t.repackHeads ? repackRows(v, n / rowLen, rowLen, n / head) : v);
          }
          done += raw.length;
          onProgress(done);
        }
      }
    },
  }));
  try {
    return await writeGgufAt(file, plan.kvs, tensors);
  } finally {
    for (const h of handles.values()) await h.then((fh) => fh.close()).catch(() => undefined);
  }
}
