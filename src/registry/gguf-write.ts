// Streaming GGUF v3 writer (little-endian): the safetensors converter (hf-convert.ts) and the
// test-model generator (scripts/make-test-model.ts) write their files with it. Tensor data is
// produced chunk by chunk, so multi-GB files never sit in memory.
import { encode as encodeBlocks } from "./ggml-encode.js";
import { halfBits } from "./ggml-half.js";
import { ggmlType } from "./gguf.js";
import { createHash } from "node:crypto";
import { mkdir, open, rename, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as little-endian u32

export enum GgufValueType {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
}

/** ggml tensor types written by this tool: [ggml id, block size, bytes per block]. */
export const WRITABLE_TYPES = Object.fromEntries(
  (["F32", "F16", "Q4_0", "Q8_0"] as const).map((n) => {
    const t = ggmlType(n);
    return [n, { id: t.id, block: t.block, size: t.bytes }];
  }),
) as Readonly<Record<"F32" | "F16" | "Q4_0" | "Q8_0", { id: number; block: number; size: number }>>;
export type WritableType = keyof typeof WRITABLE_TYPES;

export type KvEntry =
  | { key: string; type: GgufValueType.UINT32 | GgufValueType.INT32 | GgufValueType.FLOAT32 | GgufValueType.UINT8 | GgufValueType.INT8 | GgufValueType.UINT16 | GgufValueType.INT16 | GgufValueType.FLOAT64; value: number }
  | { key: string; type: GgufValueType.UINT64 | GgufValueType.INT64; value: bigint }
  | { key: string; type: GgufValueType.BOOL; value: boolean }
  | { key: string; type: GgufValueType.STRING; value: string }
  | { key: string; type: GgufValueType.ARRAY; itemType: GgufValueType.STRING; value: string[] }
  | { key: string; type: GgufValueType.ARRAY; itemType: GgufValueType.FLOAT32 | GgufValueType.INT32 | GgufValueType.UINT32 | GgufValueType.UINT8; value: ArrayLike<number> & Iterable<number> };

export const kv = {
  u32: (key: string, value: number): KvEntry => ({ key, type: GgufValueType.UINT32, value }),
  f32: (key: string, value: number): KvEntry => ({ key, type: GgufValueType.FLOAT32, value }),
  bool: (key: string, value: boolean): KvEntry => ({ key, type: GgufValueType.BOOL, value }),
  str: (key: string, value: string): KvEntry => ({ key, type: GgufValueType.STRING, value }),
  strs: (key: string, value: string[]): KvEntry => ({ key, type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value }),
  f32s: (key: string, value: number[]): KvEntry => ({ key, type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32, value }),
  i32s: (key: string, value: number[]): KvEntry => ({ key, type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, value }),
};

export interface TensorSpec {
  name: string;
  /** ggml order: dims[0] is the contiguous (row) dimension. */
  dims: number[];
  type: WritableType;
  /** Yields the tensor's encoded bytes in order; their total must equal tensorBytes(). */
  data: () => Iterable<Uint8Array>;
}

/** A tensor whose bytes may come from a file as they are read. */
export interface StreamedTensorSpec extends Omit<TensorSpec, "data"> {
  data: () => Iterable<Uint8Array> | AsyncIterable<Uint8Array>;
}

export function tensorBytes(t: Pick<TensorSpec, "dims" | "type">): number {
  const { block, size } = WRITABLE_TYPES[t.type];
  if (t.dims[0]! % block !== 0) throw new Error(`dims[0]=${t.dims[0]} not a multiple of ${block} for ${t.type}`);
  return (t.dims.reduce((a, b) => a * b, 1) / block) * size;
}

/** Growable little-endian byte buffer for the header. */
class ByteSink {
  buf = Buffer.alloc(1 << 16);
  len = 0;
  private ensure(n: number) {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
  u8(v: number) { this.ensure(1); this.buf.writeUInt8(v, this.len); this.len += 1; }
  i8(v: number) { this.ensure(1); this.buf.writeInt8(v, this.len); this.len += 1; }
  u16(v: number) { this.ensure(2); this.buf.writeUInt16LE(v, this.len); this.len += 2; }
  i16(v: number) { this.ensure(2); this.buf.writeInt16LE(v, this.len); this.len += 2; }
  u32(v: number) { this.ensure(4); this.buf.writeUInt32LE(v, this.len); this.len += 4; }
  i32(v: number) { this.ensure(4); this.buf.writeInt32LE(v, this.len); this.len += 4; }
  f32(v: number) { this.ensure(4); this.buf.writeFloatLE(v, this.len); this.len += 4; }
  f64(v: number) { this.ensure(8); this.buf.writeDoubleLE(v, this.len); this.len += 8; }
  u64(v: number | bigint) { this.ensure(8); this.buf.writeBigUInt64LE(BigInt(v), this.len); this.len += 8; }
  i64(v: bigint) { this.ensure(8); this.buf.writeBigInt64LE(v, this.len); this.len += 8; }
  str(s: string) { const b = Buffer.from(s, "utf8"); this.u64(b.length); this.ensure(b.length); b.copy(this.buf, this.len); this.len += b.length; }
  pad(align: number) { const n = (align - (this.len % align)) % align; this.ensure(n); this.buf.fill(0, this.len, this.len + n); this.len += n; }
  bytes(): Buffer { return this.buf.subarray(0, this.len); }
}

function writeScalar(s: ByteSink, type: GgufValueType, v: number | bigint | boolean | string): void {
  switch (type) {
    case GgufValueType.UINT8: return s.u8(v as number);
    case GgufValueType.INT8: return s.i8(v as number);
    case GgufValueType.UINT16: return s.u16(v as number);
    case GgufValueType.INT16: return s.i16(v as number);
    case GgufValueType.UINT32: return s.u32(v as number);
    case GgufValueType.INT32: return s.i32(v as number);
    case GgufValueType.FLOAT32: return s.f32(v as number);
    case GgufValueType.FLOAT64: return s.f64(v as number);
    case GgufValueType.UINT64: return s.u64(v as bigint);
    case GgufValueType.INT64: return s.i64(v as bigint);
    case GgufValueType.BOOL: return s.u8(v ? 1 : 0);
    case GgufValueType.STRING: return s.str(v as string);
    default: throw new Error(`cannot write scalar of type ${type}`);
  }
}

export interface GgufLayout { header: Buffer; dataOffset: number; offsets: number[]; sizes: number[]; totalSize: number }

/** Serialises the header (magic .. tensor infos, padded) and computes where each tensor goes. */
export function ggufLayout(kvs: KvEntry[], tensors: StreamedTensorSpec[], alignment = 32): GgufLayout {
  const s = new ByteSink();
  s.u32(GGUF_MAGIC);
  s.u32(3);
  s.u64(tensors.length);
  s.u64(kvs.length);
  for (const e of kvs) {
    s.str(e.key);
    s.u32(e.type);
    if (e.type === GgufValueType.ARRAY) {
      s.u32(e.itemType);
      s.u64(e.value.length);
      for (const item of e.value) writeScalar(s, e.itemType, item);
    } else {
      writeScalar(s, e.type, e.value);
    }
  }
  const offsets: number[] = [];
  const sizes: number[] = [];
  let off = 0;
  for (const t of tensors) {
    const bytes = tensorBytes(t);
    s.str(t.name);
    s.u32(t.dims.length);
    for (const d of t.dims) s.u64(d);
    s.u32(WRITABLE_TYPES[t.type].id);
    s.u64(off);
    offsets.push(off);
    sizes.push(bytes);
    off += bytes;
    off += (alignment - (off % alignment)) % alignment;
  }
  s.pad(alignment);
  const header = Buffer.from(s.bytes());
  const last = tensors.length ? offsets[offsets.length - 1]! + sizes[sizes.length - 1]! : 0;
  return { header, dataOffset: header.length, offsets, sizes, totalSize: header.length + last };
}

/**
 * Writes a GGUF file: header first, then each tensor's chunks in order. Writes to `path.tmp-<pid>-…`
 * and renames at the end, so an interrupted run never leaves a partial file under `path`.
 */
export async function writeGguf(path: string, kvs: KvEntry[], tensors: StreamedTensorSpec[], alignment = 32): Promise<number> {
  const tmp = `${path}.tmp-${process.pid}-${Date.now().toString(36)}`;
  try {
    const { size } = await writeGgufAt(tmp, kvs, tensors, alignment);
    await rename(tmp, path);
    return size;
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Writes a GGUF file at `file` (which must not exist yet), hashing it as it goes. */
export async function writeGgufAt(file: string, kvs: KvEntry[], tensors: StreamedTensorSpec[], alignment = 32): Promise<{ digest: string; size: number }> {
  const layout = ggufLayout(kvs, tensors, alignment);
  const hash = createHash("sha256");
  const fh = await open(file, "wx", 0o644);
  try {
    let pos = 0;
    const pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      if (!pendingBytes) return;
      const buf = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
      hash.update(buf);
      for (let off = 0; off < buf.length; ) off += (await fh.write(buf, off, buf.length - off, pos + off)).bytesWritten;
      pos += buf.length;
      pending.length = 0;
      pendingBytes = 0;
    };
    const push = async (b: Uint8Array) => {
      pending.push(b);
      pendingBytes += b.length;
      if (pendingBytes >= 1 << 22) await flush();
    };
    await push(layout.header);
    for (let i = 0; i < tensors.length; i++) {
      const t = tensors[i]!;
      const start = layout.dataOffset + layout.offsets[i]!;
      const padTo = start - (pos + pendingBytes);
      if (padTo < 0) throw new Error("internal: tensor layout overlap");
      if (padTo) await push(new Uint8Array(padTo));
      let written = 0;
      for await (const chunk of t.data()) {
        // copy: generators may reuse their chunk buffers
        await push(Uint8Array.prototype.slice.call(chunk));
        written += chunk.length;
      }
      if (written !== layout.sizes[i]) throw new Error(`tensor ${t.name}: wrote ${written} bytes, expected ${layout.sizes[i]}`);
    }
    await flush();
    if (pos !== layout.totalSize) throw new Error(`internal: wrote ${pos} bytes, expected ${layout.totalSize}`);
    await fh.sync();
    return { digest: `sha256:${hash.digest("hex")}`, size: pos };
  } finally {
    await fh.close();
  }
}

// ---------- float16 and block quantizers: the daemon's own (src/registry/ggml-encode.ts) ----------

/** IEEE float32 value -> float16 bits. */
export function toHalf(v: number): number {
  return halfBits(v);
}

/** Encodes `src` (length a multiple of the block size) into `out` (pre-sized), little-endian. */
export function encode(type: WritableType, src: Float32Array, out: Uint8Array): void {
  encodeBlocks(type, src, src.length, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
}

/** Encoded tensor bytes, chunk by chunk (whole rows; the yielded buffer is reused between chunks), for `elements` values produced by `fill(dst, startIndex)`. */
export function* encodedChunks(
  type: WritableType, elements: number, rowLen: number,
  fill: (dst: Float32Array, start: number) => void, chunkElements = 1 << 20,
): Generator<Uint8Array> {
  const { block, size } = WRITABLE_TYPES[type];
  const rowsPerChunk = Math.max(1, Math.floor(chunkElements / rowLen));
  const maxChunk = rowsPerChunk * rowLen;
  const src = new Float32Array(Math.min(maxChunk, elements));
  const out = new Uint8Array((src.length / block) * size);
  for (let start = 0; start < elements; start += maxChunk) {
    const n = Math.min(maxChunk, elements - start);
    const view = n === src.length ? src : src.subarray(0, n);
    fill(view, start);
    const bytes = (n / block) * size;
    encode(type, view, out.subarray(0, bytes));
    yield out.subarray(0, bytes);
  }
}

async function startsWith(path: string, prefix: Buffer): Promise<boolean> {
  const fh = await open(path, "r");
  try {
    const buf = Buffer.alloc(prefix.length);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return bytesRead === prefix.length && buf.equals(prefix);
  } finally {
    await fh.close();
  }
}

/** Writes the file unless one with the same size and header bytes is already there (a cache). */
export async function writeGgufCached(path: string, kvs: KvEntry[], tensors: TensorSpec[]): Promise<string> {
  const { totalSize, header } = ggufLayout(kvs, tensors);
  const existing = await stat(path).catch(() => undefined);
  if (existing?.isFile() && existing.size === totalSize && (await startsWith(path, header))) return path;
  await mkdir(dirname(path), { recursive: true });
  await writeGguf(path, kvs, tensors);
  return path;
}
