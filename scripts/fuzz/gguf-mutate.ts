// Mutations of a valid GGUF file: structure-aware edits of the header, the KV region (types,
// lengths, counts, key names, and the architecture and tokenizer keys the loader sizes things
// from) and the tensor infos, then byte-level damage (bit flips, runs, truncation, insertion,
// deletion, an edge value written over a count or length field). Each edit returns a line that
// says what it did.
import type { Rng } from "./prng.js";
import { keyText, num, serialize, str, VT, type GgufDoc, type GVal, type Serialized } from "./gguf-doc.js";
import { BAD_UTF8, edgeFloat, edgeInt, edgeU64, nastyString } from "./values.js";

const ARCH = "llama";

export interface GgufMutation {
  bytes: Buffer;
  /** One line per edit, in the order applied. */
  edits: string[];
}

type Edit = (rng: Rng, doc: GgufDoc) => string;

// ---------------------------------------------------------------------------------------------
// helpers

function cloneDoc(d: GgufDoc): GgufDoc {
  // KV entries and values are replaced, never edited in place; tensor infos are copied
  return { ...d, kvs: [...d.kvs], tensors: d.tensors.map((t) => ({ ...t, dims: [...t.dims] })) };
}

function kvIndex(doc: GgufDoc, key: string): number {
  return doc.kvs.findIndex((kv) => keyText(kv) === key);
}

function setKv(doc: GgufDoc, key: string, type: number, value: GVal): void {
  const i = kvIndex(doc, key);
  const kv = { key: Buffer.from(key, "utf8"), type, value };
  if (i >= 0) doc.kvs[i] = kv;
  else doc.kvs.push(kv);
}

function removeKv(doc: GgufDoc, key: string): boolean {
  const i = kvIndex(doc, key);
  if (i >= 0) doc.kvs.splice(i, 1);
  return i >= 0;
}

function arrayOf(doc: GgufDoc, key: string): GVal[] | undefined {
  const kv = doc.kvs[kvIndex(doc, key)];
  return kv?.value.kind === "arr" ? kv.value.items : undefined;
}

function typeName(t: number): string {
  return VT[t] ?? `type#${t}`;
}

function show(v: GVal): string {
  switch (v.kind) {
    case "num":
      return `${typeName(v.type)} ${String(v.value)}`;
    case "bool":
      return `BOOL byte ${v.byte}`;
    case "str":
      return `STRING ${v.bytes.length} bytes${v.lenLie !== undefined ? ` (declared ${v.lenLie})` : ""} ${JSON.stringify(v.bytes.subarray(0, 40).toString("utf8"))}${v.bytes.length > 40 ? "…" : ""}`;
    case "arr":
      return `ARRAY of ${typeName(v.itemType)} × ${v.items.length}${v.countLie !== undefined ? ` (declared ${v.countLie})` : ""}`;
    case "packed":
      return `ARRAY of ${typeName(v.itemType)} × ${v.count} (${v.payload.length} payload bytes)`;
    case "raw":
      return `${v.bytes.length} raw bytes`;
  }
}

function randomBytesString(rng: Rng): Buffer {
  if (rng.chance(0.25)) return Buffer.concat([Buffer.from("tok"), rng.pick(BAD_UTF8), Buffer.from("en")]);
  return Buffer.from(nastyString(rng), "utf8");
}

const NUMERIC_TYPES = [VT.UINT8, VT.INT8, VT.UINT16, VT.INT16, VT.UINT32, VT.INT32, VT.FLOAT32, VT.UINT64, VT.INT64, VT.FLOAT64];

function randomNum(rng: Rng, type: VT): GVal {
  if (type === VT.FLOAT32 || type === VT.FLOAT64) return num(type, edgeFloat(rng));
  if (type === VT.UINT64 || type === VT.INT64) return num(type, rng.chance(0.7) ? edgeU64(rng) : BigInt(rng.u32()));
  return num(type, rng.chance(0.7) ? edgeInt(rng) : rng.u32());
}

/** A value of `type` (any id, also unknown ones), arrays nested at most a few levels. */
function randomVal(rng: Rng, type: number, depth = 0): GVal {
  if ((NUMERIC_TYPES as number[]).includes(type)) return randomNum(rng, type as VT);
  if (type === VT.BOOL) return { kind: "bool", byte: rng.pick([0, 1, 2, 0x80, 0xff]) };
  if (type === VT.STRING) return str(randomBytesString(rng));
  if (type === VT.ARRAY) {
    const itemType = depth < 5 && rng.chance(0.2) ? VT.ARRAY : rng.chance(0.9) ? rng.pick([...NUMERIC_TYPES, VT.BOOL, VT.STRING]) : rng.between(13, 255);
    // nested arrays stay small: 64 items at each of 5 levels would be a billion
    const n = itemType === VT.ARRAY ? rng.pick([0, 1, 2]) : rng.pick([0, 1, 2, 5, 64]);
    return { kind: "arr", itemType, items: Array.from({ length: n }, () => randomVal(rng, itemType, depth + 1)) };
  }
  return { kind: "raw", bytes: rng.bytes(rng.int(17)) };
}

const COUNT_LIES = (actual: number): bigint[] => [0n, BigInt(Math.max(0, actual - 1)), BigInt(actual + 1), BigInt(actual + 1000), 2n ** 32n, 2n ** 63n, 2n ** 64n - 1n];

function lie(rng: Rng, actual: number): bigint {
  return rng.chance(0.7) ? rng.pick(COUNT_LIES(actual)) : edgeU64(rng);
}

/** A u32 array of `count` equal values, packed when large. */
function u32Array(count: number, value: number): GVal {
  if (count <= 4096) return { kind: "arr", itemType: VT.UINT32, items: Array.from({ length: count }, () => num(VT.UINT32, value)) };
  const payload = Buffer.alloc(count * 4);
  for (let i = 0; i < count; i++) payload.writeUInt32LE(value >>> 0, i * 4);
  return { kind: "packed", itemType: VT.UINT32, count: BigInt(count), payload };
}

// ---------------------------------------------------------------------------------------------
// header

const header: Edit = (rng, doc) => {
  switch (rng.int(4)) {
    case 0:
      doc.magic = rng.pick([0, 0x46554746, 0x4c4d4747, 0x47475546, 0x4a544747, 0xffffffff, rng.u32()]);
      return `magic = 0x${doc.magic.toString(16)}`;
    case 1:
      doc.version = rng.pick([0, 1, 2, 4, 5, 0x02000000, 0x03000000, 0x7fffffff, 0xffffffff]);
      return `version = ${doc.version}`;
    case 2:
      doc.tensorCountLie = lie(rng, doc.tensors.length);
      return `tensor count = ${doc.tensorCountLie} (actual ${doc.tensors.length})`;
    default:
      doc.kvCountLie = lie(rng, doc.kvs.length);
      return `KV count = ${doc.kvCountLie} (actual ${doc.kvs.length})`;
  }
};

// ---------------------------------------------------------------------------------------------
// KV region, any key

const kvGeneric: Edit = (rng, doc) => {
  const i = rng.int(doc.kvs.length);
  const kv = doc.kvs[i];
  if (!kv) return "no KV to edit";
  const name = keyText(kv);
  switch (rng.int(9)) {
    case 0: {
      // declared type changed, value bytes kept
      const type = rng.chance(0.8) ? rng.between(0, 12) : rng.pick([13, 255, 0x7fffffff, 0xffffffff]);
      doc.kvs[i] = { ...kv, type };
      return `"${name}": declared type ${typeName(kv.type)} → ${typeName(type)}, value bytes kept`;
    }
    case 1: {
      // re-encoded as another type
      const type = rng.between(0, 12);
      const value = randomVal(rng, type);
      doc.kvs[i] = { ...kv, type, value };
      return `"${name}" = ${show(value)}`;
    }
    case 2: {
      if (kv.value.kind !== "str") {
        doc.kvs[i] = { ...kv, keyLenLie: lie(rng, kv.key.length) };
        return `key "${name}": length declared ${doc.kvs[i]!.keyLenLie} (actual ${kv.key.length})`;
      }
      const value = { ...kv.value, lenLie: lie(rng, kv.value.bytes.length) };
      doc.kvs[i] = { ...kv, value };
      return `"${name}": string length declared ${value.lenLie} (actual ${kv.value.bytes.length})`;
    }
    case 3: {
      const value = str(randomBytesString(rng));
      doc.kvs[i] = { ...kv, type: VT.STRING, value };
      return `"${name}" = ${show(value)}`;
    }
    case 4: {
      const key = rng.weighted([
        [2, Buffer.alloc(0)], [2, Buffer.from("x".repeat(rng.pick([256, 65_536, 70_000])))], [2, Buffer.concat([Buffer.from(name), rng.pick(BAD_UTF8)])],
        [1, Buffer.from(`${name}\u0000`)], [2, Buffer.from(name.toUpperCase())], [2, Buffer.from(keyText(rng.pick(doc.kvs)))],
        [1, Buffer.from("__proto__")], [1, Buffer.from("constructor")],
      ] as const);
      doc.kvs[i] = { ...kv, key };
      return `key "${name}" renamed to ${JSON.stringify(key.subarray(0, 60).toString("utf8"))}${key.length > 60 ? `… (${key.length} bytes)` : ""}`;
    }
    case 5: {
      const copy = rng.chance(0.5) ? kv : { ...kv, value: randomVal(rng, kv.type) };
      doc.kvs.splice(rng.int(doc.kvs.length + 1), 0, copy);
      return `"${name}" duplicated${copy === kv ? "" : ` with ${show(copy.value)}`}`;
    }
    case 6:
      doc.kvs.splice(i, 1);
      return `"${name}" removed`;
    case 7: {
      if (kv.value.kind !== "arr") {
        const type = rng.between(0, 14);
        const value = randomVal(rng, type);
        doc.kvs.push({ key: Buffer.from(`fuzz.extra.${rng.int(1000)}`), type, value });
        return `added "${keyText(doc.kvs[doc.kvs.length - 1]!)}" = ${show(value)} (declared ${typeName(type)})`;
      }
      const itemType = rng.chance(0.8) ? rng.between(0, 12) : rng.pick([13, 255, 0xffffffff]);
      doc.kvs[i] = { ...kv, value: { ...kv.value, itemType } };
      return `"${name}": array item type ${typeName(kv.value.itemType)} → ${typeName(itemType)}, items kept`;
    }
    default: {
      if (kv.value.kind !== "arr") {
        const value: GVal = { kind: "arr", itemType: VT.ARRAY, items: [randomVal(rng, VT.ARRAY, 1), randomVal(rng, VT.ARRAY, 1)] };
        doc.kvs[i] = { ...kv, type: VT.ARRAY, value };
        return `"${name}" = nested ${show(value)}`;
      }
      const value = { ...kv.value, countLie: lie(rng, kv.value.items.length) };
      doc.kvs[i] = { ...kv, value };
      return `"${name}": array count declared ${value.countLie} (actual ${kv.value.items.length})`;
    }
  }
};

// ---------------------------------------------------------------------------------------------
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

const archInt: Edit = (rng, doc) => {
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

const archFloat: Edit = (rng, doc) => {
  const key = rng.pick(ARCH_FLOATS);
  const f = edgeFloat(rng);
  const type = rng.chance(0.8) ? VT.FLOAT32 : VT.FLOAT64;
  setKv(doc, key, type, num(type, f));
  return `${key} = ${typeName(type)} ${f}`;
};

/** Keys that make two of the shape values disagree while each stays plausible. */
const archShape: Edit = (rng, doc) => {
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

const general: Edit = (rng, doc) => {
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

// ---------------------------------------------------------------------------------------------
// tokenizer

const SPECIAL_IDS = ["bos", "eos", "unknown", "padding", "seperator", "eot", "eom", "mask"].map((k) => `tokenizer.ggml.${k}_token_id`);

const tokenizer: Edit = (rng, doc) => {
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

const chatTemplate: Edit = (rng, doc) => {
  const t = rng.pick(TEMPLATES)();
  setKv(doc, "tokenizer.chat_template", VT.STRING, str(t));
  return `tokenizer.chat_template = ${JSON.stringify(t.slice(0, 80))}${t.length > 80 ? `… (${t.length} chars)` : ""}`;
};

/** Large arrays: metadata that costs memory and time to read but says nothing (issue 13 row 5). */
const bigArrays: Edit = (rng, doc) => {
  const n = rng.pick([65_536, 1 << 20, 4 << 20]);
  const copies = rng.between(1, 2);
  for (let i = 0; i < copies; i++) {
    doc.kvs.push({ key: Buffer.from(`fuzz.big.${i}`), type: VT.ARRAY, value: { kind: "packed", itemType: VT.UINT8, count: BigInt(n), payload: Buffer.alloc(n, 7) } });
  }
  return `${copies} × ARRAY of UINT8 × ${n} added`;
};

// ---------------------------------------------------------------------------------------------
// tensor infos

const TENSOR_TYPES = [0, 1, 2, 3, 6, 8, 10, 12, 14, 15, 24, 26, 28, 30, 39, 41, 42];

const tensorInfo: Edit = (rng, doc) => {
  const i = rng.int(doc.tensors.length);
  const t = doc.tensors[i];
  if (!t) return "no tensor to edit";
  const name = t.name.toString("utf8");
  switch (rng.int(9)) {
    case 0: {
      const d = rng.int(t.dims.length);
      const orig = t.dims[d]!;
      t.dims[d] = rng.pick([0n, 1n, orig * 2n, orig / 2n, orig + 32n, 2n ** 31n, 2n ** 32n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n]);
      return `tensor "${name}" dim ${d}: ${orig} → ${t.dims[d]}`;
    }
    case 1:
      if (t.dims.length >= 2) {
        t.dims.reverse();
        return `tensor "${name}" dims reversed to [${t.dims.join(", ")}]`;
      }
      t.dims.push(rng.pick([1n, 2n, 1000n]));
      return `tensor "${name}" gains a dimension: [${t.dims.join(", ")}]`;
    case 2:
      t.nDimsLie = rng.pick([0, 1, 3, 4, 5, 8, 64, 2 ** 31, 2 ** 32 - 1]);
      return `tensor "${name}" n_dims declared ${t.nDimsLie} (actual ${t.dims.length})`;
    case 3: {
      const orig = t.type;
      t.type = rng.chance(0.8) ? rng.pick(TENSOR_TYPES) : rng.pick([4, 5, 43, 255, 2 ** 31, 2 ** 32 - 1]);
      return `tensor "${name}" type ${orig} → ${t.type}`;
    }
    case 4: {
      const orig = t.offset;
      const other = doc.tensors[rng.int(doc.tensors.length)]!.offset;
      t.offset = rng.pick([orig + 1n, orig + 31n, orig + 32n, other, 0n, BigInt(doc.data.length), BigInt(doc.data.length) + 32n, 2n ** 63n, 2n ** 64n - 32n]);
      return `tensor "${name}" offset ${orig} → ${t.offset}`;
    }
    case 5: {
      const other = doc.tensors[rng.int(doc.tensors.length)]!.name;
      t.name = rng.pick([Buffer.alloc(0), Buffer.from("x".repeat(rng.pick([64, 2000]))), Buffer.concat([t.name, rng.pick(BAD_UTF8)]), Buffer.from("blk.99.attn_q.weight"), Buffer.from(name.replace(".weight", "")), other]);
      return `tensor "${name}" renamed to ${JSON.stringify(t.name.subarray(0, 60).toString("utf8"))}`;
    }
    case 6:
      t.nameLenLie = lie(rng, t.name.length);
      return `tensor "${name}" name length declared ${t.nameLenLie} (actual ${t.name.length})`;
    case 7:
      doc.tensors.splice(i, 1);
      return `tensor "${name}" removed`;
    default: {
      const extra = { name: Buffer.from(rng.pick([name, "blk.2.attn_q.weight", "fuzz.extra"])), dims: [rng.pick([32n, 64n, 2n ** 32n]), rng.pick([1n, 64n, 2n ** 20n])], type: rng.pick(TENSOR_TYPES), offset: rng.pick([0n, 32n, BigInt(doc.data.length)]) };
      doc.tensors.splice(rng.int(doc.tensors.length + 1), 0, extra);
      return `tensor info added: "${extra.name.toString()}" [${extra.dims.join(", ")}] type ${extra.type} offset ${extra.offset}`;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// byte level, on the serialised file

function byteLevel(rng: Rng, s: Serialized): { bytes: Buffer; edit: string } {
  let b = Buffer.from(s.bytes);
  if (b.length === 0) return { bytes: b, edit: "nothing left to damage" };
  // an earlier edit of this case may have cut the file short: positions stay inside it
  const headerEnd = Math.min(s.headerEnd, b.length);
  const inHeader = () => rng.int(Math.max(1, headerEnd));
  switch (rng.int(7)) {
    case 0: {
      const n = rng.between(1, 8);
      const where = rng.chance(0.8) ? "header" : "file";
      const at: number[] = [];
      for (let i = 0; i < n; i++) {
        const o = where === "header" ? inHeader() : rng.int(b.length);
        b[o] = b[o]! ^ (1 << rng.int(8));
        at.push(o);
      }
      return { bytes: b, edit: `${n} bit flips at ${at.join(", ")}` };
    }
    case 1: {
      const at = inHeader();
      const n = rng.between(1, 64);
      const fill = rng.pick([0x00, 0xff, 0x7f, 0x80, -1]);
      const run = fill < 0 ? rng.bytes(n) : Buffer.alloc(n, fill);
      run.copy(b, at);
      return { bytes: b, edit: `${n} bytes at ${at} set to ${fill < 0 ? "random" : `0x${fill.toString(16)}`}` };
    }
    case 2: {
      const at = rng.weighted([[4, inHeader()], [2, headerEnd + rng.int(Math.max(1, b.length - headerEnd))], [1, b.length - 1], [1, rng.int(24)]] as const);
      return { bytes: b.subarray(0, at), edit: `truncated to ${at} of ${b.length} bytes` };
    }
    case 3: {
      const at = inHeader();
      const ins = rng.bytes(rng.between(1, 64));
      return { bytes: Buffer.concat([b.subarray(0, at), ins, b.subarray(at)]), edit: `${ins.length} random bytes inserted at ${at}` };
    }
    case 4: {
      const at = inHeader();
      const n = rng.between(1, 64);
      return { bytes: Buffer.concat([b.subarray(0, at), b.subarray(at + n)]), edit: `${n} bytes deleted at ${at}` };
    }
    case 5: {
      // earlier edits of this case may have cut the file short
      const spans = s.spans.filter((sp) => sp.at + sp.size <= b.length);
      if (spans.length === 0) return { bytes: b, edit: "no field left to overwrite" };
      const span = rng.pick(spans);
      const v = edgeU64(rng);
      if (span.size === 4) b.writeUInt32LE(Number(BigInt.asUintN(32, v)), span.at);
      else b.writeBigUInt64LE(v, span.at);
      return { bytes: b, edit: `${span.label} (${span.size} bytes at ${span.at}) overwritten with ${BigInt.asUintN(span.size * 8, v)}` };
    }
    default: {
      const n = rng.between(4, 256);
      const from = inHeader();
      const to = inHeader();
      b = Buffer.from(b);
      b.copy(b, to, from, Math.min(from + n, headerEnd));
      return { bytes: b, edit: `${n} header bytes copied from ${from} to ${to}` };
    }
  }
}

// ---------------------------------------------------------------------------------------------

const STRUCTURAL: ReadonlyArray<readonly [number, Edit]> = [
  [2, header], [5, kvGeneric], [7, archInt], [2, archFloat], [3, archShape], [2, general], [5, tokenizer],
  [3, chatTemplate], [1, bigArrays], [6, tensorInfo],
];

/** One case's file: 1–3 structure-aware edits, byte-level damage, or both. */
export function mutateGguf(rng: Rng, base: GgufDoc): GgufMutation {
  const doc = cloneDoc(base);
  const edits: string[] = [];
  const plan = rng.weighted([[6, "structure"], [3, "bytes"], [1, "both"]] as const);
  if (plan !== "bytes") {
    const n = rng.weighted([[6, 1], [3, 2], [1, 3]] as const);
    for (let i = 0; i < n; i++) edits.push(rng.weighted(STRUCTURAL)(rng, doc));
  }
  const s = serialize(doc);
  if (plan === "structure") return { bytes: s.bytes, edits };
  const n = rng.weighted([[7, 1], [2, 2], [1, 4]] as const);
  let bytes = s.bytes;
  for (let i = 0; i < n; i++) {
    const r = byteLevel(rng, { ...s, bytes });
    bytes = r.bytes;
    edits.push(r.edit);
  }
  return { bytes, edits };
}
