// Edits of the keys a loader sizes things from: the architecture's counts and lengths (scalars,
// per-layer arrays, wrong types), shape values that disagree with the tensors, general.*, the
// tokenizer's arrays and ids, chat templates that are invalid or costly to render, and
// megabytes of meaningless arrays.
import { num, str, VT, type GVal } from "./gguf-doc.js";
import { ARCH, arrayOf, randomBytesString, randomVal, removeKv, setKv, show, typeName, u32Array, type Edit } from "./gguf-edit.js";
import { edgeFloat } from "./values.js";

// architecture keys: the values the loader sizes buffers and loops from

/** Weighted towards the counts that size per-layer and per-head allocations. */
const ARCH_INTS: ReadonlyArray<readonly [number, string]> = ([
  [4, "block_count"], [2, "embedding_length"], [2, "feed_forward_length"], [3, "attention.head_count"], [3, "attention.head_count_kv"],
  [2, "context_length"], [1, "vocab_size"], [2, "rope.dimension_count"], [1, "attention.key_length"], [1, "attention.value_length"],
  [1, "expert_count"], [1, "expert_used_count"], [1, "attention.sliding_window"], [1, "rope.scaling.original_context_length"],
] as const).map(([w, k]) => [w, `${ARCH}.${k}`] as const);
const PER_LAYER = new Set([`${ARCH}.attention.head_count`, `${ARCH}.attention.head_count_kv`, `${ARCH}.feed_forward_length`]);
const SIZE_VALUES: readonly bigint[] = [
  0n, 1n, 2n, 3n, 5n, 63n, 64n, 65n, 1000n, 100_000n, 12_000_000n, 30_000_000n, 2n ** 31n - 1n, 2n ** 32n - 16n, 2n ** 32n - 1n,
  2n ** 40n, 2n ** 63n, 2n ** 64n - 1n,
];
const ARCH_FLOATS = ["rope.freq_base", "attention.layer_norm_rms_epsilon", "rope.scaling.factor", "attention.layer_norm_epsilon", "logit_scale"].map((k) => `${ARCH}.${k}`);

export const archInt: Edit = (rng, doc) => {
  const key = rng.weighted(ARCH_INTS);
  const v = rng.chance(0.75) ? rng.pick(SIZE_VALUES) : BigInt(rng.between(0, 5000));
  switch (rng.weighted([[5, "u32"], [2, "u64"], [1, "i32"], [1, "f32"], [1, "string"], [PER_LAYER.has(key) ? 4 : 1, "array"], [1, "remove"]] as const)) {
    case "u32":
      setKv(doc, key, VT.UINT32, num(VT.UINT32, v));
      return `${key} = UINT32 ${BigInt.asUintN(32, v)}`;
    case "u64":
      setKv(doc, key, VT.UINT64, num(VT.UINT64, v));
      return `${key} = UINT64 ${BigInt.asUintN(64, v)}`;
    case "i32": {
      const n = rng.pick([-1, -2, -(2 ** 31), 0]);
      setKv(doc, key, VT.INT32, num(VT.INT32, n));
      return `${key} = INT32 ${n}`;
    }
    case "f32": {
      const f = edgeFloat(rng);
      setKv(doc, key, VT.FLOAT32, num(VT.FLOAT32, f));
      return `${key} = FLOAT32 ${f}`;
    }
    case "string":
      setKv(doc, key, VT.STRING, str(String(v)));
      return `${key} = STRING "${v}"`;
    case "array": {
      // per-layer values: the right length with odd values, or a wrong length
      const count = rng.pick([0, 1, 2, 3, 64, 300_000]);
      const value = rng.pick([0, 1, 2, 3, 64, 2 ** 31 - 1, 2 ** 32 - 1]);
      setKv(doc, key, VT.ARRAY, u32Array(count, value));
      return `${key} = ARRAY of UINT32 × ${count}, each ${value}`;
    }
    case "remove":
      return removeKv(doc, key) ? `${key} removed` : `${key} (absent) left absent`;
  }
};

export const archFloat: Edit = (rng, doc) => {
  const key = rng.pick(ARCH_FLOATS);
  const f = edgeFloat(rng);
  const type = rng.chance(0.8) ? VT.FLOAT32 : VT.FLOAT64;
  setKv(doc, key, type, num(type, f));
  return `${key} = ${typeName(type)} ${f}`;
};

/** Keys that make two of the shape values disagree while each stays plausible. */
export const archShape: Edit = (rng, doc) => {
  switch (rng.int(5)) {
    case 0:
      setKv(doc, `${ARCH}.embedding_length`, VT.UINT32, num(VT.UINT32, rng.pick([32, 128, 96, 65])));
      return `${ARCH}.embedding_length changed, tensors kept`;
    case 1:
      setKv(doc, `${ARCH}.attention.head_count_kv`, VT.UINT32, num(VT.UINT32, rng.pick([2, 3, 4, 64])));
      return `${ARCH}.attention.head_count_kv no longer divides head_count or the K/V tensors`;
    case 2:
      setKv(doc, `${ARCH}.block_count`, VT.UINT32, num(VT.UINT32, rng.pick([1, 3, 4])));
      return `${ARCH}.block_count disagrees with the blk.N tensors present`;
    case 3:
      setKv(doc, `${ARCH}.attention.head_count`, VT.UINT32, num(VT.UINT32, rng.pick([3, 5, 7, 128])));
      return `${ARCH}.attention.head_count does not divide embedding_length`;
    default:
      setKv(doc, `${ARCH}.pooling_type`, VT.UINT32, num(VT.UINT32, rng.pick([0, 1, 2, 3, 4, 99, 2 ** 32 - 1])));
      return `${ARCH}.pooling_type added (an embedding model now)`;
  }
};

const GENERAL_ARCHES = ["gpt2", "bert", "qwen2", "gemma3", "mamba", "clip", "nomic-bert", "t5", "mllama", "", "llama\u0000", "LLAMA", "x".repeat(300), "unknownarch"];

export const general: Edit = (rng, doc) => {
  switch (rng.int(4)) {
    case 0: {
      const arch = rng.pick(GENERAL_ARCHES);
      setKv(doc, "general.architecture", VT.STRING, str(arch));
      return `general.architecture = ${JSON.stringify(arch.slice(0, 40))}`;
    }
    case 1: {
      const [type, v] = rng.pick([
        [VT.UINT32, 0], [VT.UINT32, 1], [VT.UINT32, 3], [VT.UINT32, 8], [VT.UINT32, 64], [VT.UINT32, 1024], [VT.UINT32, 2 ** 31],
        [VT.UINT32, 2 ** 32 - 1], [VT.UINT64, 32], [VT.INT32, -32], [VT.STRING, 32],
      ] as const);
      setKv(doc, "general.alignment", type, type === VT.STRING ? str(String(v)) : num(type, type === VT.UINT64 ? BigInt(v) : v));
      return `general.alignment = ${typeName(type)} ${v}`;
    }
    case 2: {
      const ft = rng.pick([0, 1, 2, 7, 8, 17, 38, 41, 100, 2 ** 31 - 1, 2 ** 32 - 1]);
      setKv(doc, "general.file_type", VT.UINT32, num(VT.UINT32, ft));
      return `general.file_type = ${ft}`;
    }
    default: {
      const key = rng.pick(["general.name", "general.license", "general.basename", "general.description"]);
      const s = randomBytesString(rng);
      setKv(doc, key, VT.STRING, str(s));
      return `${key} = ${show(str(s))}`;
    }
  }
};

// tokenizer

const SPECIAL_IDS = ["bos", "eos", "unknown", "padding", "seperator", "eot", "eom", "mask"].map((k) => `tokenizer.ggml.${k}_token_id`);

export const tokenizer: Edit = (rng, doc) => {
  const tokens = arrayOf(doc, "tokenizer.ggml.tokens") ?? [];
  switch (rng.int(9)) {
    case 0: {
      const n = rng.pick([0, 1, 3, 255, 512, tokens.length - 1]);
      setKv(doc, "tokenizer.ggml.tokens", VT.ARRAY, { kind: "arr", itemType: VT.STRING, items: tokens.slice(0, Math.max(0, n)) });
      return `tokenizer.ggml.tokens cut to ${Math.max(0, n)} of ${tokens.length} (scores, token_type and tensors kept)`;
    }
    case 1: {
      const extra = rng.pick([1, 100, 10_000, 200_000]);
      const items = tokens.concat(Array.from({ length: extra }, (_, i) => str(`fuzz${i}`)));
      setKv(doc, "tokenizer.ggml.tokens", VT.ARRAY, { kind: "arr", itemType: VT.STRING, items });
      return `tokenizer.ggml.tokens extended by ${extra}`;
    }
    case 2: {
      const at = rng.int(tokens.length);
      const value = rng.weighted([
        [2, str("")], [2, str("x".repeat(rng.pick([65_536, 1 << 20])))], [2, str(randomBytesString(rng))],
        [2, tokens[rng.int(tokens.length)] ?? str("")], [1, str("<|im_start|>")],
      ] as const);
      const items = tokens.slice();
      items[at] = value;
      setKv(doc, "tokenizer.ggml.tokens", VT.ARRAY, { kind: "arr", itemType: VT.STRING, items });
      return `tokenizer.ggml.tokens[${at}] = ${show(value)}`;
    }
    case 3: {
      const n = rng.pick([0, 1, tokens.length - 1, tokens.length + 1]);
      const v = edgeFloat(rng);
      setKv(doc, "tokenizer.ggml.scores", VT.ARRAY, { kind: "arr", itemType: VT.FLOAT32, items: Array.from({ length: n }, () => num(VT.FLOAT32, v)) });
      return `tokenizer.ggml.scores = ${n} × ${v}`;
    }
    case 4: {
      const n = rng.chance(0.5) ? tokens.length : rng.pick([0, 1, tokens.length - 1, tokens.length + 1]);
      const v = rng.pick([0, 7, 8, 255, -1, 2 ** 31 - 1]);
      setKv(doc, "tokenizer.ggml.token_type", VT.ARRAY, { kind: "arr", itemType: VT.INT32, items: Array.from({ length: n }, () => num(VT.INT32, v)) });
      return `tokenizer.ggml.token_type = ${n} × ${v}`;
    }
    case 5: {
      const model = rng.pick(["gpt2", "bert", "t5", "rwkv", "none", "", "nonsense", "llama\u0000", "plamo2"]);
      setKv(doc, "tokenizer.ggml.model", VT.STRING, str(model));
      return `tokenizer.ggml.model = ${JSON.stringify(model)}`;
    }
    case 6: {
      const n = rng.pick([0, 1, 100, 50_000]);
      const merge = rng.pick(["a b", "ab", "", "\u0120 \u0120", "x y z"]);
      setKv(doc, "tokenizer.ggml.merges", VT.ARRAY, { kind: "arr", itemType: VT.STRING, items: Array.from({ length: n }, () => str(merge)) });
      return `tokenizer.ggml.merges = ${n} × ${JSON.stringify(merge)}`;
    }
    case 7: {
      const key = rng.pick(SPECIAL_IDS);
      const [type, v] = rng.pick([
        [VT.UINT32, tokens.length], [VT.UINT32, tokens.length + 1], [VT.UINT32, 2 ** 31 - 1], [VT.UINT32, 2 ** 32 - 1],
        [VT.INT32, -1], [VT.INT32, -(2 ** 31)], [VT.UINT64, 2 ** 40], [VT.FLOAT32, NaN], [VT.STRING, 1],
      ] as const);
      setKv(doc, key, type, type === VT.STRING ? str(String(v)) : num(type, type === VT.UINT64 ? BigInt(v) : v));
      return `${key} = ${typeName(type)} ${v}`;
    }
    default: {
      const key = rng.pick(["tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix"]);
      const type = rng.pick([VT.UINT32, VT.STRING, VT.BOOL, VT.ARRAY]);
      const value = randomVal(rng, type);
      setKv(doc, key, type, value);
      return `${key} = ${show(value)}`;
    }
  }
};

/** Jinja templates that are invalid, huge, or expensive to render. */
const TEMPLATES: ReadonlyArray<() => string> = [
  () => "{% for i in range(100000000) %}x{% endfor %}",
  () => "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
  () => "{{ 'x' * 100000000 }}",
  () => "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
  () => "{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
  () => "{{",
  () => "{% if %}",
  () => "{% endfor %}",
  () => "",
  () => "{{ messages[1000000].content }}",
  () => "{{ raise_exception('fuzz') }}",
  () => "{{ messages | tojson }}",
  () => "{{ .Prompt }}",
  () => "{{ range .Messages }}{{ .Content }}{{ end }}",
  () => "{% if true %}".repeat(10_000) + "x" + "{% endif %}".repeat(10_000),
  () => "{{ " + "(".repeat(10_000) + "1" + ")".repeat(10_000) + " }}",
  () => "x".repeat(1 << 20),
  () => "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}",
];

export const chatTemplate: Edit = (rng, doc) => {
  const t = rng.pick(TEMPLATES)();
  setKv(doc, "tokenizer.chat_template", VT.STRING, str(t));
  return `tokenizer.chat_template = ${JSON.stringify(t.slice(0, 80))}${t.length > 80 ? `… (${t.length} chars)` : ""}`;
};

/** Large arrays: metadata that costs memory and time to read but says nothing (issue 13 row 5). */
export const bigArrays: Edit = (rng, doc) => {
  const n = rng.pick([65_536, 1 << 20, 4 << 20]);
  const copies = rng.between(1, 2);
  for (let i = 0; i < copies; i++) {
    doc.kvs.push({ key: Buffer.from(`fuzz.big.${i}`), type: VT.ARRAY, value: { kind: "packed", itemType: VT.UINT8, count: BigInt(n), payload: Buffer.alloc(n, 7) } });
  }
  return `${copies} × ARRAY of UINT8 × ${n} added`;
};
