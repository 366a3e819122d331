// A generated GGUF test model written back out as a Hugging Face model directory, the way
// transformers saves one: config.json, safetensors shards with Hugging Face's tensor names and
// q/k row order, and the tokenizer as tokenizer.json (byte-level BPE) or tokenizer.model
// (SentencePiece protobuf) with tokenizer_config.json. Converting it back must give the model
// that was exported: the test of the converter.
import { mkdir, open, writeFile } from "node:fs/promises";
import path from "node:path";
import { bf16Bits, HALF_TABLE } from "../../src/registry/ggml-half.js";
import { readGgufInfo } from "../../src/registry/gguf.js";

const LLAMA3_SPLIT = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;

const HF_NAMES: ReadonlyArray<[RegExp, string]> = [
  [/^token_embd\.weight$/, "model.embed_tokens.weight"],
  [/^output_norm\.weight$/, "model.norm.weight"],
  [/^output\.weight$/, "lm_head.weight"],
  [/^blk\.(\d+)\.attn_norm\.weight$/, "model.layers.$1.input_layernorm.weight"],
  [/^blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$/, "model.layers.$1.self_attn.$2_proj.$3"],
  [/^blk\.(\d+)\.attn_output\.weight$/, "model.layers.$1.self_attn.o_proj.weight"],
  [/^blk\.(\d+)\.attn_(q|k)_norm\.weight$/, "model.layers.$1.self_attn.$2_norm.weight"],
  [/^blk\.(\d+)\.ffn_norm\.weight$/, "model.layers.$1.post_attention_layernorm.weight"],
  [/^blk\.(\d+)\.ffn_(gate|up|down)\.weight$/, "model.layers.$1.mlp.$2_proj.weight"],
];

// Gemma 2 and 3 norm before and after attention and the MLP; Gemma (1) names its MLP norm as Llama.
const GEMMA2_NAMES: ReadonlyArray<[RegExp, string]> = [
  [/^blk\.(\d+)\.post_attention_norm\.weight$/, "model.layers.$1.post_attention_layernorm.weight"],
  [/^blk\.(\d+)\.ffn_norm\.weight$/, "model.layers.$1.pre_feedforward_layernorm.weight"],
  [/^blk\.(\d+)\.post_ffw_norm\.weight$/, "model.layers.$1.post_feedforward_layernorm.weight"],
];

// Phi-3's fused matrices
const PHI3_NAMES: ReadonlyArray<[RegExp, string]> = [
  [/^blk\.(\d+)\.attn_qkv\.weight$/, "model.layers.$1.self_attn.qkv_proj.weight"],
  [/^blk\.(\d+)\.ffn_up\.weight$/, "model.layers.$1.mlp.gate_up_proj.weight"],
];

function hfName(name: string, arch = "llama"): string {
  const first = arch === "gemma2" || arch === "gemma3" ? GEMMA2_NAMES : arch === "phi3" ? PHI3_NAMES : [];
  for (const [re, to] of [...first, ...HF_NAMES]) if (re.test(name)) return name.replace(re, to);
  throw new Error(`no Hugging Face name for ${name}`);
}

/** llama.cpp's interleaved q/k rows back to Hugging Face's rotate-half order (per head). */
export function unpermute(data: Buffer, rows: number, rowBytes: number, heads: number): Buffer {
  const out = Buffer.alloc(data.length);
  const perHead = rows / heads;
  const half = perHead / 2;
  for (let h = 0; h < heads; h++)
    for (let k = 0; k < half; k++)
      for (let j = 0; j < 2; j++) data.copy(out, (h * perHead + j * half + k) * rowBytes, (h * perHead + 2 * k + j) * rowBytes, (h * perHead + 2 * k + j + 1) * rowBytes);
  return out;
}

function pbVarint(n: number): number[] {
  const out: number[] = [];
  while (n >= 128) {
    out.push((n % 128) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
function pbField(field: number, wire: number, body: Buffer | number): Buffer {
  if (wire === 0) return Buffer.from([...pbVarint(field * 8), ...pbVarint(body as number)]);
  if (wire === 5) {
    const b = Buffer.alloc(4);
    b.writeFloatLE(body as number);
    return Buffer.concat([Buffer.from(pbVarint(field * 8 + 5)), b]);
  }
  const b = body as Buffer;
  return Buffer.concat([Buffer.from(pbVarint(field * 8 + 2)), Buffer.from(pbVarint(b.length)), b]);
}

/** A SentencePiece ModelProto: the pieces, then a normalizer spec saying whether to add a leading space. */
export function sentencePieceModel(tokens: string[], scores: number[], types: number[], addDummyPrefix: boolean): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < tokens.length; i++) {
    parts.push(pbField(1, 2, Buffer.concat([pbField(1, 2, Buffer.from(tokens[i]!, "utf8")), pbField(2, 5, scores[i]!), pbField(3, 0, types[i]!)])));
  }
  parts.push(pbField(3, 2, Buffer.concat([pbField(1, 2, Buffer.from("identity")), pbField(3, 0, addDummyPrefix ? 1 : 0)])));
  return Buffer.concat(parts);
}

export async function writeSafetensors(file: string, tensors: Array<{ name: string; dtype: "F16" | "F32" | "BF16"; shape: number[]; data: Buffer }>): Promise<void> {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  let off = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.data.length] };
    off += t.data.length;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  await writeFile(file, Buffer.concat([len, json, ...tensors.map((t) => t.data)]));
}

/** F16 tensor bytes as bfloat16 (each value rounded to bfloat16's 8 mantissa bits). */
export function f16ToBf16(data: Buffer): Buffer {
  const out = Buffer.alloc(data.length);
  for (let i = 0; i < data.length; i += 2) out.writeUInt16LE(bf16Bits(HALF_TABLE[data.readUInt16LE(i)]!), i);
  return out;
}

/**
 * Write `gguf` (an F16/F32 llama or qwen2 test model) as a Hugging Face directory at `dir`, in
 * `shards` files; `bf16` stores the matrices as bfloat16, as most checkpoints are.
 */
export async function exportHfModel(gguf: string, dir: string, shards = 2, bf16 = false): Promise<void> {
  const info = await readGgufInfo(gguf, { arrays: "full" });
  const m = info.metadata;
  const arch = String(m["general.architecture"]);
  const u = (k: string) => Number(m[`${arch}.${k}`]);
  const heads = u("attention.head_count");
  const headsKv = u("attention.head_count_kv");
  await mkdir(dir, { recursive: true });
  const fh = await open(gguf, "r");
  const tensors: Array<{ name: string; dtype: "F16" | "F32" | "BF16"; shape: number[]; data: Buffer }> = [];
  try {
    for (const t of info.tensors) {
      if (t.typeName !== "F16" && t.typeName !== "F32") throw new Error(`export needs an F16/F32 model, ${t.name} is ${t.typeName}`);
      let data: Buffer = Buffer.alloc(t.bytes);
      await fh.read(data, 0, t.bytes, info.dataOffset + t.offset);
      const shape = [...t.dims].reverse();
      const qk = arch === "llama" && /\.attn_(q|k)\.weight$/.exec(t.name);
      if (qk) data = unpermute(data, shape[0]!, t.bytes / shape[0]!, qk[1] === "q" ? heads : headsKv);
      // Gemma's RMS norms multiply by (1 + w): Hugging Face stores w, llama.cpp 1 + w.
      if (arch.startsWith("gemma") && t.name.endsWith("norm.weight")) {
        if (t.typeName !== "F32") throw new Error(`${t.name}: a Gemma norm is F32`);
        const v = new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)).map((x) => x - 1);
        data = Buffer.from(v.buffer);
      }
      // experts: one matrix per expert, as Mixtral (w1 gate, w2 down, w3 up) and Qwen3-MoE name them
      const exps = /^blk\.(\d+)\.ffn_(gate|up|down)_exps\.weight$/.exec(t.name);
      const parts: Array<{ name: string; shape: number[]; data: Buffer }> = [];
      if (exps) {
        const [, layer, kind] = exps;
        const n = shape[0]!;
        const each = data.length / n;
        for (let e = 0; e < n; e++) {
          const name = arch === "llama" ? `model.layers.${layer}.block_sparse_moe.experts.${e}.${{ gate: "w1", down: "w2", up: "w3" }[kind!]}.weight` : `model.layers.${layer}.mlp.experts.${e}.${kind}_proj.weight`;
          parts.push({ name, shape: shape.slice(1), data: data.subarray(e * each, (e + 1) * each) });
        }
      } else if (/\.ffn_gate_inp\.weight$/.test(t.name)) {
        parts.push({ name: t.name.replace(/^blk\.(\d+)\.ffn_gate_inp\.weight$/, arch === "llama" ? "model.layers.$1.block_sparse_moe.gate.weight" : "model.layers.$1.mlp.gate.weight"), shape, data });
      } else parts.push({ name: hfName(t.name, arch), shape, data });
      for (const x of parts) {
        if (bf16 && t.typeName === "F16") tensors.push({ ...x, dtype: "BF16", data: f16ToBf16(x.data) });
        else tensors.push({ ...x, dtype: t.typeName });
      }
    }
  } finally {
    await fh.close();
  }
  const per = Math.ceil(tensors.length / shards);
  for (let s = 0; s < shards; s++) {
    await writeSafetensors(path.join(dir, `model-${String(s + 1).padStart(5, "0")}-of-${String(shards).padStart(5, "0")}.safetensors`), tensors.slice(s * per, (s + 1) * per));
  }
  const vocab = (m["tokenizer.ggml.tokens"] as string[]).length;
  await writeFile(
    path.join(dir, "config.json"),
    JSON.stringify({
      _name_or_path: `ollamats/${String(m["general.name"])}`,
      architectures: [
        { qwen2: "Qwen2ForCausalLM", qwen3: "Qwen3ForCausalLM", qwen3moe: "Qwen3MoeForCausalLM", gemma: "GemmaForCausalLM", gemma2: "Gemma2ForCausalLM", gemma3: "Gemma3ForCausalLM", phi3: "Phi3ForCausalLM" }[arch] ??
          (m["llama.expert_count"] ? "MixtralForCausalLM" : "LlamaForCausalLM"),
      ],
      ...(arch === "llama" && m["llama.expert_count"] ? { num_local_experts: u("expert_count"), num_experts_per_tok: u("expert_used_count") } : {}),
      ...(arch === "qwen3moe" ? { num_experts: u("expert_count"), num_experts_per_tok: u("expert_used_count"), moe_intermediate_size: u("expert_feed_forward_length"), norm_topk_prob: true, decoder_sparse_step: 1, mlp_only_layers: [] } : {}),
      ...(arch === "phi3" ? { original_max_position_embeddings: u("rope.scaling.original_context_length"), sliding_window: null, rope_scaling: null } : {}),
      ...(arch.startsWith("qwen3") || arch.startsWith("gemma") ? { head_dim: u("embedding_length") / heads } : {}),
      ...(arch === "gemma2" ? { sliding_window: u("attention.sliding_window"), attn_logit_softcapping: u("attn_logit_softcapping"), final_logit_softcapping: u("final_logit_softcapping") } : {}),
      ...(arch === "gemma3" ? { sliding_window: u("attention.sliding_window"), sliding_window_pattern: 6, rope_local_base_freq: 10000, final_logit_softcapping: null, attn_logit_softcapping: null } : {}),
      ...(arch.startsWith("gemma") ? { hidden_activation: "gelu_pytorch_tanh" } : {}),
      hidden_size: u("embedding_length"),
      intermediate_size: u("feed_forward_length"),
      num_hidden_layers: u("block_count"),
      num_attention_heads: heads,
      num_key_value_heads: headsKv,
      max_position_embeddings: u("context_length"),
      rope_theta: u("rope.freq_base"),
      rms_norm_eps: u("attention.layer_norm_rms_epsilon"),
      vocab_size: vocab,
      tie_word_embeddings: !info.tensors.some((t) => t.name === "output.weight"),
      torch_dtype: "float16",
    }),
  );
  const tokens = m["tokenizer.ggml.tokens"] as string[];
  const types = m["tokenizer.ggml.token_type"] as number[];
  const text = (k: string) => (m[k] === undefined ? undefined : tokens[Number(m[k])]);
  const config: Record<string, unknown> = {
    bos_token: text("tokenizer.ggml.bos_token_id"),
    eos_token: text("tokenizer.ggml.eos_token_id"),
    add_bos_token: m["tokenizer.ggml.add_bos_token"] === true,
    add_eos_token: m["tokenizer.ggml.add_eos_token"] === true,
    ...(m["tokenizer.chat_template"] !== undefined ? { chat_template: m["tokenizer.chat_template"] } : {}),
  };
  if (m["tokenizer.ggml.unknown_token_id"] !== undefined) config.unk_token = text("tokenizer.ggml.unknown_token_id");
  await writeFile(path.join(dir, "tokenizer_config.json"), JSON.stringify(config));
  if (m["tokenizer.ggml.model"] === "gpt2") {
    const vocabMap: Record<string, number> = {};
    const added: unknown[] = [];
    tokens.forEach((t, id) => {
      if (types[id] === 3) added.push({ id, content: t, special: true, single_word: false, lstrip: false, rstrip: false, normalized: false });
      else vocabMap[t] = id;
    });
    const merges = (m["tokenizer.ggml.merges"] as string[]).map((x) => x.split(" "));
    await writeFile(
      path.join(dir, "tokenizer.json"),
      JSON.stringify({
        version: "1.0",
        added_tokens: added,
        pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "Split", pattern: { Regex: LLAMA3_SPLIT }, behavior: "Isolated", invert: false }, { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false }] },
        decoder: { type: "ByteLevel" },
        model: { type: "BPE", dropout: null, unk_token: null, byte_fallback: false, vocab: vocabMap, merges },
      }),
    );
  } else {
    const scores = m["tokenizer.ggml.scores"] as number[];
    await writeFile(path.join(dir, "tokenizer.model"), sentencePieceModel(tokens, scores, types, m["tokenizer.ggml.add_space_prefix"] === true));
  }
}

const PROJ: Readonly<Record<string, string>> = {
  attn_q: "self_attn.q_proj",
  attn_k: "self_attn.k_proj",
  attn_v: "self_attn.v_proj",
  attn_output: "self_attn.o_proj",
  ffn_gate: "mlp.gate_proj",
  ffn_up: "mlp.up_proj",
  ffn_down: "mlp.down_proj",
};

/** A row-major [rows, cols] matrix of `bytes`-sized values as [cols, rows]. */
function transposeBytes(data: Buffer, rows: number, cols: number, bytes: number): Buffer {
  const out = Buffer.alloc(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) data.copy(out, (c * rows + r) * bytes, (r * cols + c) * bytes, (r * cols + c + 1) * bytes);
  return out;
}

/**
 * Write a llama.cpp LoRA GGUF (`gguf`, F32/F16, for a llama base with `heads`/`headsKv`) as
 * PEFT saves an adapter (adapter_model.safetensors: lora_A [r, n_in], lora_B [n_out, r] with
 * Hugging Face's q/k row order) or as mlx-lm does (adapters.safetensors: both transposed), with
 * `config` as adapter_config.json.
 */
export async function exportLoraAdapter(gguf: string, dir: string, format: "peft" | "mlx", heads: { q: number; kv: number }, config: Record<string, unknown>): Promise<void> {
  const info = await readGgufInfo(gguf);
  await mkdir(dir, { recursive: true });
  const fh = await open(gguf, "r");
  const tensors: Array<{ name: string; dtype: "F16" | "F32"; shape: number[]; data: Buffer }> = [];
  try {
    for (const t of info.tensors) {
      const m = /^blk\.(\d+)\.(\w+)\.weight\.lora_(a|b)$/.exec(t.name);
      if (!m || (t.typeName !== "F16" && t.typeName !== "F32")) throw new Error(`not an F16/F32 LoRA tensor: ${t.name}`);
      const [, layer, target, side] = m;
      let data: Buffer = Buffer.alloc(t.bytes);
      await fh.read(data, 0, t.bytes, info.dataOffset + t.offset);
      let shape = [...t.dims].reverse(); // A: [r, n_in], B: [n_out, r]
      const size = t.typeName === "F32" ? 4 : 2;
      if (side === "b" && (target === "attn_q" || target === "attn_k")) data = unpermute(data, shape[0]!, shape[1]! * size, target === "attn_q" ? heads.q : heads.kv);
      const module = `layers.${layer}.${PROJ[target!]}`;
      if (format === "mlx") {
        data = transposeBytes(data, shape[0]!, shape[1]!, size);
        shape = [shape[1]!, shape[0]!];
        tensors.push({ name: `model.${module}.lora_${side}`, dtype: t.typeName, shape, data });
      } else tensors.push({ name: `base_model.model.model.${module}.lora_${side!.toUpperCase()}.weight`, dtype: t.typeName, shape, data });
    }
  } finally {
    await fh.close();
  }
  await writeSafetensors(path.join(dir, format === "mlx" ? "adapters.safetensors" : "adapter_model.safetensors"), tensors);
  await writeFile(path.join(dir, "adapter_config.json"), JSON.stringify(config, null, 2));
}
