// Bounds-checked GGUF (v2/v3) header reader. Reads only the header, KV and tensor-info region, in
// bounded chunks through a file handle; never trusts a declared length or count beyond the file, and
// verifies that every tensor's data lies inside the file (which is how truncation is detected).
import { open, type FileHandle } from "node:fs/promises";
import { checkModelConsistency } from "./gguf-check.js";

export class GgufError extends Error {
  override name = "GgufError";
}

export type GgufValue = number | bigint | string | boolean | GgufValue[];

export interface GgufTensorInfo {
  name: string;
  type: number;
  typeName: string;
  dims: number[];
  /** Offset relative to the start of the data section (GgufInfo.dataOffset). */
  offset: number;
  bytes: number;
}

export interface GgufInfo {
  version: number;
  /** uint64/int64 values are bigint; float32 scalars are rounded to their shortest decimal form.
   *  In a slim read (the default) long arrays are empty: see arrayLengths. */
  metadata: Record<string, GgufValue>;
  /** Each key's stored type ("uint32", "float32", "array of int32", …): the engine reads its
   *  hyperparameters with one exact type each, so a value is judged by its type, not just its size. */
  types: Record<string, string>;
  /** Slim reads only: the real length of every array that was emptied. */
  arrayLengths?: Record<string, number>;
  /** Slim reads only: the text of the tokens that `tokenizer.ggml.*_token_id` keys name. */
  specialTokenTexts?: Record<number, string>;
  tensors: GgufTensorInfo[];
  /** Absolute file offset of the (aligned) tensor data section. */
  dataOffset: number;
  fileSize: number;
}

export interface GgufFacts {
  architecture: string;
  family: string;
  parameterCount: number;
  parameterSize: string;
  quantizationLevel: string;
  contextLength?: number;
  embeddingLength?: number;
  blockCount?: number;
  headCount?: number;
  headCountKv?: number;
  chatTemplate?: string;
  /** tokenizer.chat_template.tool_use: the template for a conversation with tools (Command R,
   *  Hermes), used then as llama.cpp uses it. */
  toolUseTemplate?: string;
  poolingType?: number;
  /** Ollama's rule: the model has a `<arch>.pooling_type` key (any value). */
  isEmbedding: boolean;
}

/** ggml tensor types: id -> [name, elements per block, bytes per block] (ggml type_traits). */
export const GGML_TYPES: Readonly<Record<number, readonly [string, number, number]>> = {
  0: ["F32", 1, 4], 1: ["F16", 1, 2], 2: ["Q4_0", 32, 18], 3: ["Q4_1", 32, 20],
  6: ["Q5_0", 32, 22], 7: ["Q5_1", 32, 24], 8: ["Q8_0", 32, 34], 9: ["Q8_1", 32, 36],
  10: ["Q2_K", 256, 84], 11: ["Q3_K", 256, 110], 12: ["Q4_K", 256, 144], 13: ["Q5_K", 256, 176],
  14: ["Q6_K", 256, 210], 15: ["Q8_K", 256, 292], 16: ["IQ2_XXS", 256, 66], 17: ["IQ2_XS", 256, 74],
  18: ["IQ3_XXS", 256, 98], 19: ["IQ1_S", 256, 50], 20: ["IQ4_NL", 32, 18], 21: ["IQ3_S", 256, 110],
  22: ["IQ2_S", 256, 82], 23: ["IQ4_XS", 256, 136], 24: ["I8", 1, 1], 25: ["I16", 1, 2],
  26: ["I32", 1, 4], 27: ["I64", 1, 8], 28: ["F64", 1, 8], 29: ["IQ1_M", 256, 56], 30: ["BF16", 1, 2],
  34: ["TQ1_0", 256, 54], 35: ["TQ2_0", 256, 66], 39: ["MXFP4", 32, 17], 40: ["NVFP4", 64, 36],
  41: ["Q1_0", 128, 18], 42: ["Q2_0", 64, 18],
};

const GGML_TYPE_BY_NAME = new Map(Object.entries(GGML_TYPES).map(([id, [name, block, bytes]]) => [name, { id: Number(id), block, bytes }]));

/** A ggml tensor type by name ("F16", "Q4_K", …): its id, elements per block, bytes per block. */
export function ggmlType(name: string): { id: number; block: number; bytes: number } {
  const t = GGML_TYPE_BY_NAME.get(name);
  if (!t) throw new Error(`unknown ggml type ${name}`);
  return t;
}

/** llama_ftype (general.file_type) -> name, as Ollama's FileType.String(). */
export const FILE_TYPE_NAMES: Readonly<Record<number, string>> = {
  0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
  11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
  18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
  25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
  32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
};

const enum VT { U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12 }
/** Minimum encoded size of one value of each type (strings: the length prefix; arrays: type + count). */
const MIN_SIZE = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];
const VT_NAMES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"];

const MAGIC = 0x46554747; // "GGUF"
const CHUNK = 1 << 20;
const MAX_STRING = 64 << 20;
/** Array elements that are strings (tokens, merges) are short; a long one is a crafted file. */
const MAX_ITEM_STRING = 1 << 16;
const MAX_KEY = 1 << 16;
/** The largest vocabularies (and their merges) hold a few hundred thousand entries. */
const MAX_ARRAY = 1 << 21;
/** Only tokenizer arrays (sized by the vocabulary) may be longer than this; per-layer arrays hold
 *  one entry per block, and nothing else in a model's metadata is long. */
const MAX_OTHER_ARRAY = 1 << 16;
/** All KV metadata together: a 262k vocabulary with scores and types is ~10 MB. */
const MAX_METADATA_BYTES = 64 << 20;
/** Arrays longer than this are not materialized in a slim read (see ReadOptions). */
const SLIM_ARRAY_MAX = 4096;
const MAX_ARRAY_DEPTH = 4;
const MAX_KV = 1 << 16;
/** Real models hold a few thousand tensors (per-expert MoE files tens of thousands). */
const MAX_TENSORS = 1 << 16;
const MAX_DIMS = 4;
const MAX_TENSOR_NAME = 63;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

const bad = (msg: string) => new GgufError(`invalid GGUF file: ${msg}`);

/** Shortest decimal that round-trips to the same float32 (1e-5 rather than 0.000009999999747378752). */
function f32Number(x: number): number {
  for (let p = 1; p <= 9; p++) {
    const y = Number(x.toPrecision(p));
    if (Math.fround(y) === x) return y;
  }
  return x;
}

class Cursor {
  pos = 0;
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  constructor(private readonly fh: FileHandle, readonly size: number) {}

  get remaining(): number {
    return this.size - this.pos;
  }

  /** Makes bytes [pos, pos+n) available, or throws a truncation error naming `what`. */
  async need(n: number, what: string): Promise<void> {
    if (n > this.size - this.pos) {
      throw bad(`truncated (${what} needs ${n} bytes at offset ${this.pos}, file is ${this.size} bytes)`);
    }
    if (this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.length) return;
    const len = Math.min(Math.max(n, CHUNK), this.size - this.pos);
    const b = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const { bytesRead } = await this.fh.read(b, got, len - got, this.pos + got);
      if (bytesRead === 0) throw bad(`truncated (file ended at byte ${this.pos + got} while reading ${what})`);
      got += bytesRead;
    }
    this.buf = b;
    this.bufStart = this.pos;
  }

  has(n: number): boolean {
    return this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.length;
  }

  private at(n: number): number {
    const o = this.pos - this.bufStart;
    this.pos += n;
    return o;
  }
  u8() { return this.buf.readUInt8(this.at(1)); }
  i8() { return this.buf.readInt8(this.at(1)); }
  u16() { return this.buf.readUInt16LE(this.at(2)); }
  i16() { return this.buf.readInt16LE(this.at(2)); }
  u32() { return this.buf.readUInt32LE(this.at(4)); }
  i32() { return this.buf.readInt32LE(this.at(4)); }
  f32() { return this.buf.readFloatLE(this.at(4)); }
  f64() { return this.buf.readDoubleLE(this.at(8)); }
  u64() { return this.buf.readBigUInt64LE(this.at(8)); }
  i64() { return this.buf.readBigInt64LE(this.at(8)); }
  text(n: number) { const o = this.at(n); return this.buf.toString("utf8", o, o + n); }
  /** A 53-bit hash of the next n bytes (two 32-bit FNV-1a), which it moves past. */
  hash(n: number): number {
    const o = this.at(n);
    let a = 0x811c9dc5;
    let b = 0x01000193 ^ n;
    for (let k = o; k < o + n; k++) {
      const x = this.buf[k]!;
      a = Math.imul(a ^ x, 0x01000193);
      b = Math.imul(b ^ x, 0x5bd1e995);
    }
    return (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
  }

  async string(what: string, max = MAX_STRING): Promise<string> {
    if (!this.has(8)) await this.need(8, `length of ${what}`);
    const n = this.stringLength(what, max);
    if (!this.has(n)) await this.need(n, what);
    return this.text(n);
  }

  /** Reads and checks a string's length prefix (8 bytes, already buffered). */
  stringLength(what: string, max: number): number {
    const start = this.pos;
    const len = this.u64();
    if (len > BigInt(this.remaining)) {
      throw bad(`truncated or corrupt (${what} at offset ${start} declares length ${len}, only ${this.remaining} bytes remain, file is ${this.size} bytes)`);
    }
    if (len > BigInt(max)) throw bad(`${what} at offset ${start} is too long (${len} bytes, limit ${max})`);
    return Number(len);
  }

  /** Moves past n bytes without reading them. */
  advance(n: number, what: string): void {
    if (n > this.remaining) throw bad(`truncated (${what} needs ${n} bytes at offset ${this.pos}, file is ${this.size} bytes)`);
    this.pos += n;
  }

  /** Reads a uint64 count and checks that `count * minSize` bytes can still follow. */
  async count(what: string, minSize: number, cap: number): Promise<number> {
    if (!this.has(8)) await this.need(8, what);
    const at = this.pos;
    const c = this.u64();
    if (c * BigInt(minSize) > BigInt(this.remaining)) {
      throw bad(`truncated or corrupt (${what} ${c} at offset ${at} needs at least ${c * BigInt(minSize)} bytes, only ${this.remaining} remain, file is ${this.size} bytes)`);
    }
    if (c > BigInt(cap)) throw bad(`${what} ${c} at offset ${at} exceeds the limit of ${cap}`);
    return Number(c);
  }
}

async function readScalar(c: Cursor, type: number, key: string): Promise<GgufValue> {
  if (type === VT.STRING) return c.string(`string value of "${key}"`);
  if (type === VT.ARRAY || type > VT.F64) throw bad(`unknown value type ${type} for key "${key}"`);
  const size = MIN_SIZE[type]!;
  if (!c.has(size)) await c.need(size, `value of "${key}"`);
  return readFixed(c, type);
}

function readFixed(c: Cursor, type: number): GgufValue {
  switch (type) {
    case VT.U8: return c.u8();
    case VT.I8: return c.i8();
    case VT.U16: return c.u16();
    case VT.I16: return c.i16();
    case VT.U32: return c.u32();
    case VT.I32: return c.i32();
    case VT.F32: return c.f32();
    case VT.F64: return c.f64();
    case VT.U64: return c.u64();
    case VT.I64: return c.i64();
    default: return c.u8() !== 0; // BOOL
  }
}

/** What a read keeps of arrays: "slim" skips the bytes of arrays over SLIM_ARRAY_MAX entries. */
interface ArrayPolicy {
  slim: boolean;
  /** Long arrays skipped in a slim read: key -> [element type, length, file offset of element 0]. */
  skipped: Map<string, [number, number, number]>;
  /** The element type of every top-level array. */
  elementTypes: Map<string, number>;
}

function checkMetadataSize(c: Cursor, key: string): void {
  if (c.pos > MAX_METADATA_BYTES) throw bad(`metadata is larger than ${MAX_METADATA_BYTES} bytes (at key "${key}")`);
}

async function readValue(c: Cursor, type: number, key: string, depth: number, policy: ArrayPolicy): Promise<GgufValue> {
  if (type !== VT.ARRAY) {
    const v = await readScalar(c, type, key);
    return type === VT.F32 && depth === 0 ? f32Number(v as number) : v;
  }
  if (depth >= MAX_ARRAY_DEPTH) throw bad(`arrays nested deeper than ${MAX_ARRAY_DEPTH} in key "${key}"`);
  if (!c.has(4)) await c.need(4, `array type of "${key}"`);
  const itemType = c.u32();
  if (itemType > VT.F64) throw bad(`unknown array element type ${itemType} for key "${key}"`);
  if (depth === 0) policy.elementTypes.set(key, itemType);
  const n = await c.count(`array "${key}" (${VT_NAMES[itemType]}) element count`, MIN_SIZE[itemType]!, MAX_ARRAY);
  if (n > MAX_OTHER_ARRAY && !key.startsWith("tokenizer.")) {
    throw bad(`metadata array "${key}" has ${n} elements; only tokenizer arrays may hold more than ${MAX_OTHER_ARRAY}`);
  }
  const fixed = itemType !== VT.STRING && itemType !== VT.ARRAY ? MIN_SIZE[itemType]! : 0;
  if (fixed && n * fixed > MAX_METADATA_BYTES) throw bad(`metadata array "${key}" is larger than ${MAX_METADATA_BYTES} bytes`);
  if (policy.slim && n > SLIM_ARRAY_MAX && depth === 0) {
    policy.skipped.set(key, [itemType, n, c.pos]);
    if (key === VOCABULARY && itemType === VT.STRING) await skipVocabulary(c, n);
    else await skipItems(c, itemType, n, key, depth + 1);
    return [];
  }
  const out: GgufValue[] = new Array(n);
  for (let i = 0; i < n; i++) {
    if (fixed) {
      if (!c.has(fixed)) await c.need(Math.min(n - i, Math.floor(CHUNK / fixed)) * fixed, `array "${key}"`);
      out[i] = readFixed(c, itemType);
    } else if (itemType === VT.STRING) {
      out[i] = await c.string(`element ${i} of array "${key}"`, MAX_ITEM_STRING);
      if ((i & 1023) === 0) checkMetadataSize(c, key);
    } else {
      out[i] = await readValue(c, itemType, key, depth + 1, policy);
    }
  }
  if (key === VOCABULARY && itemType === VT.STRING && depth === 0) duplicateToken(out.map((t, i): [number, string] => [i, t as string]));
  return out;
}

/** Walks past n array elements without keeping them (string lengths are still checked). */
async function skipItems(c: Cursor, itemType: number, n: number, key: string, depth: number): Promise<void> {
  if (itemType !== VT.STRING && itemType !== VT.ARRAY) return c.advance(n * MIN_SIZE[itemType]!, `array "${key}"`);
  for (let i = 0; i < n; i++) {
    if (itemType === VT.STRING) {
      if (!c.has(8)) await c.need(8, `length of element ${i} of array "${key}"`);
      c.advance(c.stringLength(`element ${i} of array "${key}"`, MAX_ITEM_STRING), `element ${i} of array "${key}"`);
      if ((i & 1023) === 0) checkMetadataSize(c, key);
    } else {
      if (depth >= MAX_ARRAY_DEPTH) throw bad(`arrays nested deeper than ${MAX_ARRAY_DEPTH} in key "${key}"`);
      if (!c.has(4)) await c.need(4, `array type of "${key}"`);
      const inner = c.u32();
      if (inner > VT.F64) throw bad(`unknown array element type ${inner} for key "${key}"`);
      const m = await c.count(`array "${key}" (${VT_NAMES[inner]}) element count`, MIN_SIZE[inner]!, MAX_ARRAY);
      await skipItems(c, inner, m, key, depth + 1);
    }
  }
}

const VOCABULARY = "tokenizer.ggml.tokens";

/** Walks past a vocabulary as skipItems does, and refuses one that holds a token text twice, as
 *  readValue does with one it reads whole: llama-vocab.cpp aborts the process on it (GGML_ASSERT
 *  that ids and texts map one to one).
 *  Hashes first (8 bytes a token, not the texts), then the texts of tokens whose hashes repeat. */
async function skipVocabulary(c: Cursor, n: number): Promise<void> {
  const start = c.pos;
  const hashes = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    if (!c.has(8)) await c.need(8, `length of token ${i}`);
    const len = c.stringLength(`token ${i}`, MAX_ITEM_STRING);
    if (!c.has(len)) await c.need(len, `token ${i}`);
    hashes[i] = c.hash(len);
    if ((i & 1023) === 0) checkMetadataSize(c, VOCABULARY);
  }
  const sorted = hashes.slice().sort();
  const repeated = new Set<number>();
  for (let i = 1; i < n; i++) if (sorted[i] === sorted[i - 1]) repeated.add(sorted[i]!);
  if (repeated.size === 0) return;
  const end = c.pos;
  const ids = new Set<number>();
  for (let i = 0; i < n; i++) if (repeated.has(hashes[i]!)) ids.add(i);
  const texts = await tokenTexts(c, n, start, ids);
  c.pos = end;
  duplicateToken(Object.entries(texts).map(([id, text]) => [Number(id), text]));
}

/** Throws on the first token text that two ids share. */
function duplicateToken(tokens: Iterable<[number, string]>): void {
  const first = new Map<string, number>();
  for (const [id, text] of tokens) {
    const before = first.get(text);
    if (before !== undefined) throw bad(`"${VOCABULARY}" holds the token ${JSON.stringify(text.slice(0, 40))} twice (ids ${before} and ${id}); llama.cpp refuses a vocabulary with a repeated token`);
    first.set(text, id);
  }
}

/** The texts of the given token ids, read from a vocabulary array a slim read skipped. */
async function tokenTexts(c: Cursor, count: number, offset: number, ids: Set<number>): Promise<Record<number, string>> {
  const out: Record<number, string> = {};
  c.pos = offset;
  let last = 0;
  for (const id of ids) last = Math.max(last, id);
  for (let i = 0; i <= last && i < count; i++) {
    if (!c.has(8)) await c.need(8, "vocabulary");
    const n = c.stringLength(`token ${i}`, MAX_ITEM_STRING);
    if (ids.has(i)) {
      if (!c.has(n)) await c.need(n, `token ${i}`);
      out[i] = c.text(n);
    } else c.advance(n, `token ${i}`);
  }
  return out;
}

export interface ReadOptions {
  /** "slim" (default): arrays over SLIM_ARRAY_MAX entries (vocabularies, merges, scores) are read
   *  past, left empty and their lengths kept in arrayLengths, with the special tokens' texts in
   *  specialTokenTexts; "full" keeps every array (`show --verbose`). */
  arrays?: "slim" | "full";
}

/** Reads and validates the GGUF header, metadata and tensor infos of `path`. Throws GgufError. */
export async function readGgufInfo(path: string, opts: ReadOptions = {}): Promise<GgufInfo> {
  const info = await readGgufFile(path, opts);
  checkModelConsistency(info);
  return info;
}

async function readGgufFile(path: string, opts: ReadOptions): Promise<GgufInfo> {
  const policy: ArrayPolicy = { slim: opts.arrays !== "full", skipped: new Map(), elementTypes: new Map() };
  const fh = await open(path, "r");
  try {
    const fileSize = (await fh.stat()).size;
    const c = new Cursor(fh, fileSize);
    if (fileSize < 4) throw new GgufError(`not a GGUF file (${fileSize === 0 ? "empty file" : `only ${fileSize} bytes`})`);
    await c.need(4, "magic");
    if (c.u32() !== MAGIC) throw new GgufError("not a GGUF file (bad magic)");
    await c.need(4, "version");
    const version = c.u32();
    if (version === 0x02000000 || version === 0x03000000) throw new GgufError("unsupported GGUF file: big-endian GGUF is not supported");
    if (version === 1) throw new GgufError("unsupported GGUF file: version 1 is not supported (only versions 2 and 3)");
    if (version !== 2 && version !== 3) throw new GgufError(`unsupported GGUF file: version ${version} (only versions 2 and 3)`);
    await c.need(16, "header counts");
    const tensorAt = c.pos;
    const tensorCount = c.u64();
    const kvCount = await c.count("KV count", 8 + 4 + 1, MAX_KV);
    // each tensor info takes at least: name length 8 + n_dims 4 + type 4 + offset 8
    if (tensorCount * 24n > BigInt(c.remaining)) {
      throw bad(`truncated or corrupt (tensor count ${tensorCount} at offset ${tensorAt} needs at least ${tensorCount * 24n} bytes, only ${c.remaining} remain, file is ${fileSize} bytes)`);
    }
    if (tensorCount > BigInt(MAX_TENSORS)) throw bad(`tensor count ${tensorCount} exceeds the limit of ${MAX_TENSORS}`);

    const metadata: Record<string, GgufValue> = Object.create(null) as Record<string, GgufValue>;
    const types: Record<string, string> = Object.create(null) as Record<string, string>;
    let alignment = 32;
    for (let i = 0; i < kvCount; i++) {
      const key = await c.string(`key of KV #${i}`, MAX_KEY);
      if (key === "") throw bad(`key of KV #${i} is empty`);
      if (Object.prototype.hasOwnProperty.call(metadata, key)) throw bad(`duplicate key "${key}"`);
      if (!c.has(4)) await c.need(4, `value type of "${key}"`);
      const type = c.u32();
      if (type > VT.F64) throw bad(`unknown value type ${type} for key "${key}"`);
      const value = await readValue(c, type, key, 0, policy);
      metadata[key] = value;
      types[key] = type === VT.ARRAY ? `array of ${VT_NAMES[policy.elementTypes.get(key)!]}` : VT_NAMES[type]!;
      checkMetadataSize(c, key);
      if (key === "general.alignment") {
        if (type !== VT.U32) throw bad(`general.alignment must be uint32, got ${VT_NAMES[type]}`);
        const a = value as number;
        if (a === 0 || (a & (a - 1)) !== 0) throw bad(`general.alignment ${a} is not a power of 2`);
        alignment = a;
      }
    }

    const tensors: GgufTensorInfo[] = [];
    const names = new Set<string>();
    for (let i = 0; i < Number(tensorCount); i++) {
      const name = await c.string(`name of tensor #${i}`, 1024);
      if (names.has(name)) throw bad(`duplicate tensor name "${name}"`);
      // ggml keeps a name in 64 bytes with its terminating NUL
      const nameBytes = Buffer.byteLength(name);
      if (nameBytes > MAX_TENSOR_NAME) throw bad(`tensor name "${name.slice(0, 80)}" is ${nameBytes} bytes; llama.cpp takes at most ${MAX_TENSOR_NAME}`);
      names.add(name);
      if (!c.has(4)) await c.need(4, `dimension count of tensor "${name}"`);
      const nDims = c.u32();
      if (nDims > MAX_DIMS) throw bad(`tensor "${name}" has ${nDims} dimensions (at most ${MAX_DIMS})`);
      await c.need(nDims * 8 + 12, `shape, type and offset of tensor "${name}"`);
      const dims: number[] = [];
      let elements = 1n;
      for (let d = 0; d < nDims; d++) {
        const v = c.u64();
        if (v > MAX_SAFE) throw bad(`tensor "${name}" dimension ${d} is ${v}, too large`);
        dims.push(Number(v));
        elements *= v;
      }
      if (elements > MAX_SAFE) throw bad(`tensor "${name}" has too many elements (${elements})`);
      const type = c.u32();
      const t = GGML_TYPES[type];
      if (!t) throw bad(`unknown tensor type ${type} for tensor "${name}"`);
      const [typeName, block, typeSize] = t;
      if ((dims[0] ?? 1) % block !== 0) throw bad(`tensor "${name}" of type ${typeName} has ${dims[0] ?? 1} elements per row, not a multiple of the block size ${block}`);
      const offset = c.u64();
      if (offset > MAX_SAFE) throw bad(`tensor "${name}" offset ${offset} is too large`);
      if (offset % BigInt(alignment) !== 0n) throw bad(`tensor "${name}" offset ${offset} is not a multiple of the alignment ${alignment}`);
      const bytes = (elements / BigInt(block)) * BigInt(typeSize);
      if (bytes > BigInt(fileSize)) throw bad(`truncated or corrupt (tensor "${name}" needs ${bytes} bytes, file is ${fileSize} bytes)`);
      tensors.push({ name, type, typeName, dims, offset: Number(offset), bytes: Number(bytes) });
    }

    const dataOffset = tensors.length ? Math.ceil(c.pos / alignment) * alignment : c.pos;
    // llama.cpp (ggml's gguf.cpp) reads the data in the order of the tensor infos, each padded to
    // the alignment, from the start of the section: any other layout is refused at load
    let expected = 0;
    for (const t of tensors) {
      const end = dataOffset + t.offset + t.bytes;
      if (end > fileSize) throw bad(`truncated (tensor "${t.name}" data ends at byte ${end}, file is ${fileSize} bytes)`);
      if (t.offset !== expected) throw bad(`tensor "${t.name}" data is at offset ${t.offset} of the data section, not ${expected}: tensors must follow one another in order, each padded to ${alignment} bytes`);
      expected += Math.ceil(t.bytes / alignment) * alignment;
    }
    const info: GgufInfo = { version, metadata, types, tensors, dataOffset, fileSize };
    if (policy.slim) {
      info.arrayLengths = {};
      for (const [key, [, n]] of policy.skipped) info.arrayLengths[key] = n;
      info.specialTokenTexts = await specialTokens(c, metadata, policy);
    }
    return info;
  } finally {
    await fh.close();
  }
}

/** The texts of the tokens that `tokenizer.ggml.*_token_id` keys name. */
async function specialTokens(c: Cursor, md: Record<string, GgufValue>, policy: ArrayPolicy): Promise<Record<number, string>> {
  const ids = new Set<number>();
  for (const [key, id] of Object.entries(md)) {
    if (/^tokenizer\.ggml\.\w+_token_id$/.test(key) && typeof id === "number" && Number.isInteger(id) && id >= 0) ids.add(id);
  }
  const tokens = md["tokenizer.ggml.tokens"];
  const skipped = policy.skipped.get("tokenizer.ggml.tokens");
  if (ids.size === 0 || !Array.isArray(tokens)) return {};
  if (!skipped) {
    const out: Record<number, string> = {};
    for (const id of ids) if (typeof tokens[id] === "string") out[id] = tokens[id] as string;
    return out;
  }
  const [type, count, offset] = skipped;
  return type === VT.STRING ? tokenTexts(c, count, offset, ids) : {};
}

/** Ollama's format.HumanNumber: 1.2B, 125M, 500.50M, 137K, 999. */
export function humanNumber(n: number): string {
  const fmt = (v: number, digits: number) => (v === Math.floor(v) ? v.toFixed(0) : v.toFixed(digits));
  if (n >= 1e9) return `${fmt(n / 1e9, 1)}B`;
  if (n >= 1e6) return `${fmt(n / 1e6, 2)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(0)}K`;
  return String(n);
}

function num(v: GgufValue | undefined): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "bigint" && v <= MAX_SAFE && v >= -MAX_SAFE) return Number(v);
  return undefined;
}

/** Sum of all tensor elements (Ollama's general.parameter_count). */
export function parameterCount(info: GgufInfo): number {
  let total = 0;
  for (const t of info.tensors) total += t.dims.reduce((a, b) => a * b, 1);
  return total;
}

function quantizationLevel(info: GgufInfo): string {
  const ft = num(info.metadata["general.file_type"]);
  if (ft !== undefined) return FILE_TYPE_NAMES[ft] ?? "unknown";
  // no file_type: the tensor type holding the most bytes among the matrices
  const bytes = new Map<string, number>();
  for (const t of info.tensors) if (t.dims.length >= 2) bytes.set(t.typeName, (bytes.get(t.typeName) ?? 0) + t.bytes);
  let best = "unknown", max = -1;
  for (const [name, b] of bytes) if (b > max) { best = name; max = b; }
  return best;
}

export function ggufFacts(info: GgufInfo): GgufFacts {
  const md = info.metadata;
  const arch = typeof md["general.architecture"] === "string" ? (md["general.architecture"] as string) : "unknown";
  const count = parameterCount(info);
  // per-layer arrays (some architectures): the maximum, like Ollama's HeadCountMax()
  const maxOf = (v: GgufValue | undefined) => {
    if (!Array.isArray(v)) return num(v);
    let max: number | undefined;
    for (const x of v) {
      const n = num(x);
      if (n !== undefined && (max === undefined || n > max)) max = n;
    }
    return max;
  };
  const facts: GgufFacts = {
    architecture: arch,
    family: arch,
    parameterCount: count,
    parameterSize: humanNumber(count),
    quantizationLevel: quantizationLevel(info),
    isEmbedding: `${arch}.pooling_type` in md,
  };
  const set = <K extends keyof GgufFacts>(k: K, v: GgufFacts[K] | undefined) => { if (v !== undefined) facts[k] = v; };
  set("contextLength", num(md[`${arch}.context_length`]));
  set("embeddingLength", num(md[`${arch}.embedding_length`]));
  set("blockCount", num(md[`${arch}.block_count`]));
  set("headCount", maxOf(md[`${arch}.attention.head_count`]));
  set("headCountKv", maxOf(md[`${arch}.attention.head_count_kv`]));
  const tpl = md["tokenizer.chat_template"];
  set("chatTemplate", typeof tpl === "string" ? tpl : undefined);
  const toolUse = md["tokenizer.chat_template.tool_use"];
  set("toolUseTemplate", typeof toolUse === "string" ? toolUse : undefined);
  set("poolingType", num(md[`${arch}.pooling_type`]));
  return facts;
}

function plain(v: GgufValue): unknown {
  if (typeof v === "bigint") return Number(v); // exact when safe; nearest double otherwise (JSON has no bigint)
  if (Array.isArray(v)) return v.map(plain);
  return v;
}

/**
 * Ollama /api/show `model_info`: every KV except general.name and tokenizer.chat_template, plus
 * general.parameter_count; arrays longer than 5 become [] unless verbose; keys sorted (as Go's JSON).
 */
export function ggufModelInfo(info: GgufInfo, verbose: boolean): Record<string, unknown> {
  const all: Record<string, unknown> = { ...info.metadata, "general.parameter_count": parameterCount(info) };
  const out = Object.create(null) as Record<string, unknown>; // keys come from the file: no prototype
  for (const key of Object.keys(all).sort()) {
    if (key === "general.name" || key === "tokenizer.chat_template") continue;
    const v = all[key] as GgufValue;
    out[key] = Array.isArray(v) && v.length > 5 && !verbose ? [] : plain(v);
  }
  return out;
}
