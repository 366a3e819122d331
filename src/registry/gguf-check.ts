// A model's shape as its metadata declares it, checked against the tensors the file actually holds,
// so that nothing sized from a header (per-layer tables, KV cache plans, the engine's own arrays)
// can be asked for more than the file backs, and nothing the engine asserts on (zero heads, a head
// count the KV heads do not divide) reaches a runner.
import { GgufError, type GgufInfo, type GgufValue } from "./gguf.js";

/** Heads, key/value widths: the largest real models use a few hundred; 2^16 leaves room. */
const MAX_HEADS = 1 << 16;
const MAX_HEAD_DIM = 1 << 16;
const MAX_EMBEDDING = 1 << 20;
/** Training contexts of real models reach 10M tokens; more than 2^32 is no model. */
const MAX_CONTEXT = 2 ** 32;
const MAX_VOCAB = 1 << 21;

const bad = (msg: string) => new GgufError(`invalid GGUF file: ${msg}`);

function int(v: GgufValue | undefined): number | undefined {
  if (typeof v === "bigint") return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : NaN;
  if (typeof v === "number") return v;
  return v === undefined ? undefined : NaN;
}

/** A scalar key that must be an integer in [min, max] when present. */
function bounded(md: Record<string, GgufValue>, key: string, min: number, max: number): number | undefined {
  if (!(key in md)) return undefined;
  const n = int(md[key]);
  if (n === undefined || !Number.isInteger(n) || n < min || n > max) {
    throw bad(`"${key}" is ${describe(md[key])}; it must be an integer from ${min} to ${max}`);
  }
  return n;
}

function describe(v: GgufValue | undefined): string {
  if (Array.isArray(v)) return `an array of ${v.length} elements`;
  return typeof v === "string" ? `the string ${JSON.stringify(v.slice(0, 40))}` : String(v);
}

/** A per-layer key (a scalar for every layer, or one entry per layer). */
function perLayer(md: Record<string, GgufValue>, info: GgufInfo, key: string, layers: number, max: number): number[] | undefined {
  const v = md[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) {
    const n = bounded(md, key, 0, max)!;
    return new Array<number>(layers).fill(n);
  }
  const length = info.arrayLengths?.[key] ?? v.length;
  if (length !== layers) throw bad(`"${key}" has ${length} entries but the model has ${layers} layers`);
  if (v.length !== length) throw bad(`"${key}" is too long to be a per-layer value`);
  return v.map((x, i) => {
    const n = int(x);
    if (n === undefined || !Number.isInteger(n) || n < 0 || n > max) throw bad(`"${key}"[${i}] is ${describe(x)}; it must be an integer from 0 to ${max}`);
    return n;
  });
}

function arrayLength(info: GgufInfo, key: string): number | undefined {
  const v = info.metadata[key];
  return Array.isArray(v) ? (info.arrayLengths?.[key] ?? v.length) : undefined;
}

/**
 * The hyperparameters llama.cpp reads, with the one type it reads each as (llama-model-loader's
 * get_key: any other stored type is "key has wrong type"). Checked at create so a mistyped value
 * (a uint64 head count, which also breaks node-llama-cpp's JS arithmetic) never reaches a runner.
 */
const UINT32_KEYS = [
  "context_length", "embedding_length", "block_count", "vocab_size", "expert_count",
  "expert_shared_count", "leading_dense_block_count", "attention.key_length", "attention.value_length",
  "attention.sliding_window", "rope.dimension_count", "rope.scaling.original_context_length", "pooling_type",
];
/** Per layer: one uint32 for every layer, or an array of int32/uint32 (get_key_or_arr). */
const PER_LAYER_KEYS = ["attention.head_count", "attention.head_count_kv", "feed_forward_length", "expert_used_count"];
const FLOAT32_KEYS = [
  "attention.layer_norm_epsilon", "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.scaling.factor",
  "rope.scale_linear", "logit_scale", "attn_logit_softcapping", "final_logit_softcapping",
];

function checkTypes(info: GgufInfo, arch: string): void {
  const expect = (key: string, allowed: string[]) => {
    const t = info.types[key];
    if (t !== undefined && !allowed.includes(t)) {
      throw bad(`"${key}" is stored as ${t}; llama.cpp reads it only as ${allowed.join(" or ")}`);
    }
  };
  for (const name of UINT32_KEYS) expect(`${arch}.${name}`, ["uint32"]);
  for (const name of PER_LAYER_KEYS) expect(`${arch}.${name}`, ["uint32", "array of int32", "array of uint32"]);
  for (const name of FLOAT32_KEYS) expect(`${arch}.${name}`, ["float32"]);
  for (const key of Object.keys(info.types)) {
    if (/^tokenizer\.ggml\.\w+_token_id$/.test(key)) expect(key, ["uint32"]);
    if (/^tokenizer\.ggml\.add_\w+_token$/.test(key)) expect(key, ["bool"]);
  }
  expect("tokenizer.ggml.add_space_prefix", ["bool"]);
  expect("tokenizer.ggml.remove_extra_whitespaces", ["bool"]);
  expect("tokenizer.ggml.model", ["string"]);
  expect("tokenizer.ggml.pre", ["string"]);
  // the vocabulary as llama-vocab.cpp reads it ("invalid gguf type for tokenizer.ggml.tokens")
  expect("tokenizer.ggml.tokens", ["array of string"]);
  expect("tokenizer.ggml.scores", ["array of float32", "array of int32"]);
  expect("tokenizer.ggml.token_type", ["array of int32"]);
  expect("tokenizer.ggml.merges", ["array of string"]);
}

/** Throws GgufError when the metadata describes a model the tensors do not. */
export function checkModelConsistency(info: GgufInfo): void {
  const md = info.metadata;
  const arch = md["general.architecture"];
  if (typeof arch !== "string") return;
  const k = (name: string) => `${arch}.${name}`;
  checkTypes(info, arch);

  // Layers present: blk.<i>.* tensors, every index from 0 up, at least one tensor each.
  const present = new Set<number>();
  const attention = new Set<number>();
  let highest = -1;
  for (const t of info.tensors) {
    const m = /^blk\.(\d{1,9})\./.exec(t.name);
    if (!m) {
      if (/^blk\.\d/.test(t.name)) throw bad(`tensor "${t.name}" has a layer number beyond any model`);
      continue;
    }
    const i = Number(m[1]);
    present.add(i);
    highest = Math.max(highest, i);
    if (/\.attn_(q|k|v|qkv)\.weight$/.test(t.name)) attention.add(i);
  }
  if (present.size !== highest + 1) throw bad(`tensors exist for layer ${highest} but only ${present.size} layers have tensors`);
  const declared = bounded(md, k("block_count"), 0, Number.MAX_SAFE_INTEGER);
  if (declared !== undefined && highest >= 0 && declared !== highest + 1) {
    throw bad(`"${k("block_count")}" is ${declared} but the file holds tensors for ${highest + 1} layers`);
  }
  if (declared !== undefined && declared > info.tensors.length) {
    throw bad(`"${k("block_count")}" is ${declared} but the file holds only ${info.tensors.length} tensors`);
  }
  const layers = declared ?? highest + 1;

  const embd = bounded(md, k("embedding_length"), 1, MAX_EMBEDDING);
  bounded(md, k("context_length"), 1, MAX_CONTEXT);
  const keyLength = bounded(md, k("attention.key_length"), 1, MAX_HEAD_DIM);
  bounded(md, k("attention.value_length"), 1, MAX_HEAD_DIM);
  const heads = perLayer(md, info, k("attention.head_count"), layers, MAX_HEADS);
  const kvHeads = perLayer(md, info, k("attention.head_count_kv"), layers, MAX_HEADS);
  for (const i of attention) {
    const h = heads?.[i];
    if (h === undefined) continue; // the engine reports a missing key itself
    const kv = kvHeads?.[i] ?? h;
    if (h < 1) throw bad(`"${k("attention.head_count")}" is 0 for layer ${i}, which has attention tensors`);
    if (kv < 1) throw bad(`"${k("attention.head_count_kv")}" is 0 for layer ${i}, which has attention tensors`);
    if (h % kv !== 0) throw bad(`layer ${i} has ${h} attention heads, not a multiple of its ${kv} key/value heads`);
    if (keyLength === undefined && embd !== undefined && embd < h) throw bad(`${h} attention heads do not fit an embedding of ${embd}`);
  }

  const tokenEmbd = info.tensors.find((t) => t.name === "token_embd.weight");
  if (embd !== undefined && tokenEmbd && tokenEmbd.dims[0] !== embd) {
    throw bad(`"${k("embedding_length")}" is ${embd} but token_embd.weight is ${tokenEmbd.dims[0]} wide`);
  }
  bounded(md, k("vocab_size"), 1, MAX_VOCAB);
  const vocab = arrayLength(info, "tokenizer.ggml.tokens");
  if (vocab !== undefined) {
    if (tokenEmbd && tokenEmbd.dims.length >= 2 && tokenEmbd.dims[1] !== vocab) {
      throw bad(`the vocabulary has ${vocab} tokens but token_embd.weight has ${tokenEmbd.dims[1]} rows`);
    }
    for (const key of ["tokenizer.ggml.scores", "tokenizer.ggml.token_type"]) {
      const n = arrayLength(info, key);
      if (n !== undefined && n !== vocab) throw bad(`"${key}" has ${n} entries for ${vocab} tokens`);
    }
  }
}
