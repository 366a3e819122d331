// GGUF re-quantization in TypeScript, streaming tensor by tensor (no llama.cpp needed): sources
// F32, F16 and BF16; targets F32, F16, BF16, Q8_0, Q4_K_S and Q4_K_M (Ollama's list) and Q4_0.
// quantize-plan.ts picks each tensor's type (Ollama's mix for the K-quants); ggml-encode.ts and
// kquants.ts write ggml's blocks.
//
// The metadata is copied byte for byte, with general.file_type set to the target; tensor offsets
// are recomputed with the file's alignment. The output is hashed while it is written.
import { decode } from "./ggml-encode.js";
import { readFullyAt } from "../fs/read-at.js";
import { EncodePool } from "./quantize-pool.js";
import { createHash } from "node:crypto";
import { open, type FileHandle } from "node:fs/promises";
import { FILE_TYPE_NAMES, GgufError, readGgufInfo, type GgufInfo } from "./gguf.js";
import { FTYPE, planTensorTypes, TENSOR_TYPES, type QuantizeTarget } from "./quantize-plan.js";

export type { QuantizeTarget };

/** Ollama's quantize types, in the order its error message lists them, then ours. */
export const SUPPORTED_QUANTIZE_TYPES: readonly QuantizeTarget[] = ["F32", "F16", "Q4_K_S", "Q4_K_M", "Q8_0", "BF16", "Q4_0"];
/** Other spellings Ollama accepts (fs/ggml ParseFileType). */
const ALIASES: Readonly<Record<string, QuantizeTarget>> = { Q4_K: "Q4_K_M" };

export class QuantizeError extends Error {
  override name = "QuantizeError";
}

/** Upper-cased target, or a QuantizeError with Ollama's message naming what is supported. */
export function parseQuantizeType(raw: string): QuantizeTarget {
  const t = raw.trim().toUpperCase();
  if ((SUPPORTED_QUANTIZE_TYPES as readonly string[]).includes(t)) return t as QuantizeTarget;
  const alias = ALIASES[t];
  if (alias) return alias;
  throw new QuantizeError(`unsupported quantization type ${t} - supported types are ${SUPPORTED_QUANTIZE_TYPES.join(", ")}`);
}

/** The file type Ollama's check looks at: general.file_type, else the dominant matrix type. */
export function sourceFileType(info: GgufInfo): string {
  const ft = info.metadata["general.file_type"];
  if (typeof ft === "number") return FILE_TYPE_NAMES[ft] ?? "unknown";
  const bytes = new Map<string, number>();
  for (const t of info.tensors) if (t.dims.length >= 2) bytes.set(t.typeName, (bytes.get(t.typeName) ?? 0) + t.bytes);
  let best = "unknown";
  let max = -1;
  for (const [n, b] of bytes) if (b > max) [best, max] = [n, b];
  return best;
}

// ---- header rewriting ------------------------------------------------------------------------

interface RawKv {
  key: string;
  start: number;
  end: number;
}

/** Byte ranges of the KV entries of a GGUF header held in `buf` (already validated by readGgufInfo). */
function scanKvs(buf: Buffer, count: number): { kvs: RawKv[]; end: number } {
  const SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  let p = 24;
  const skipValue = (type: number): void => {
    if (type === 8) {
      p += 8 + Number(buf.readBigUInt64LE(p));
    } else if (type === 9) {
      const item = buf.readUInt32LE(p);
      const n = Number(buf.readBigUInt64LE(p + 4));
      p += 12;
      if (item === 8 || item === 9) for (let i = 0; i < n; i++) skipValue(item);
      else p += n * (SIZES[item] ?? 0);
    } else {
      const s = SIZES[type];
      if (s === undefined) throw new GgufError(`unknown value type ${type}`);
      p += s;
    }
  };
  const kvs: RawKv[] = [];
  for (let i = 0; i < count; i++) {
    const start = p;
    const klen = Number(buf.readBigUInt64LE(p));
    const key = buf.toString("utf8", p + 8, p + 8 + klen);
    p += 8 + klen;
    const type = buf.readUInt32LE(p);
    p += 4;
    skipValue(type);
    kvs.push({ key, start, end: p });
  }
  return { kvs, end: p };
}

function u32le(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}
function u64le(v: number | bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(v));
  return b;
}
function ggufString(s: string): Buffer {
  const b = Buffer.from(s, "utf8");
  return Buffer.concat([u64le(b.length), b]);
}

export interface QuantizeResult {
  digest: string;
  size: number;
}

async function readAt(fh: FileHandle, buf: Buffer, length: number, position: number): Promise<void> {
  if (!(await readFullyAt(fh, buf, length, position))) throw new GgufError("invalid GGUF file: truncated while quantizing");
}

/**
 * Write `src` re-quantized to `target` into the new file `dst`. `onProgress(done, total)` gets
 * source tensor bytes processed. Returns the output's sha256 digest and size.
 */
export async function quantizeGguf(
  src: string,
  dst: string,
  target: QuantizeTarget,
  onProgress: (done: number, total: number) => void = () => undefined,
  signal?: AbortSignal,
): Promise<QuantizeResult> {
  const info = await readGgufInfo(src);
  const inFh = await open(src, "r");
  const outFh = await open(dst, "wx", 0o644);
  const pool = new EncodePool();
  try {
    const header = Buffer.allocUnsafe(info.dataOffset);
    await readAt(inFh, header, info.dataOffset, 0);
    const kvCount = Number(header.readBigUInt64LE(16));
    const { kvs } = scanKvs(header, kvCount);
    const alignment = typeof info.metadata["general.alignment"] === "number" ? (info.metadata["general.alignment"] as number) : 32;

    const fileType = Buffer.concat([ggufString("general.file_type"), u32le(4), u32le(FTYPE[target])]);
    const kvParts: Buffer[] = [];
    let replaced = false;
    for (const kv of kvs) {
      if (kv.key === "general.file_type") {
        kvParts.push(fileType);
        replaced = true;
      } else {
        kvParts.push(header.subarray(kv.start, kv.end));
      }
    }
    if (!replaced) kvParts.push(fileType);

    // new tensor types, sizes and offsets
    const types = planTensorTypes(info, target);
    const plan = info.tensors.map((t, i) => {
      const to = types[i] ?? null;
      const elements = t.dims.reduce((a, b) => a * b, 1);
      const bytes = to ? (elements / TENSOR_TYPES[to][1]) * TENSOR_TYPES[to][2] : t.bytes;
      return { t, to, elements, bytes, offset: 0 };
    });
    let off = 0;
    for (const p of plan) {
      p.offset = off;
      off += p.bytes;
      off += (alignment - (off % alignment)) % alignment;
    }
    const infos: Buffer[] = [];
    for (const p of plan) {
      infos.push(ggufString(p.t.name), u32le(p.t.dims.length), ...p.t.dims.map((d) => u64le(d)), u32le(p.to ? TENSOR_TYPES[p.to][0] : p.t.type), u64le(p.offset));
    }
    let head = Buffer.concat([header.subarray(0, 16), u64le(kvs.length + (replaced ? 0 : 1)), ...kvParts, ...infos]);
    head = Buffer.concat([head, Buffer.alloc((alignment - (head.length % alignment)) % alignment)]);

    const hash = createHash("sha256");
    let pos = 0;
    const write = async (b: Buffer) => {
      hash.update(b);
      let w = 0;
      while (w < b.length) w += (await outFh.write(b, w, b.length - w, pos + w)).bytesWritten;
      pos += b.length;
    };
    await write(head);

    const totalIn = info.tensors.reduce((n, t) => n + t.bytes, 0);
    let doneIn = 0;
    const CHUNK_ELEMS = 1 << 20;
    // fresh ArrayBuffers: a Float32Array view needs 4-byte alignment
    const aligned = (n: number) => Buffer.from(new ArrayBuffer(n));
    const inBuf = aligned(CHUNK_ELEMS * 4);
    for (const p of plan) {
      if (signal?.aborted) throw signal.reason ?? new Error("canceled");
      const pad = head.length + p.offset - pos;
      if (pad < 0) throw new Error("internal: tensor layout overlap");
      if (pad > 0) await write(Buffer.alloc(pad));
      const start = info.dataOffset + p.t.offset;
      if (!p.to) {
        for (let done = 0; done < p.t.bytes; ) {
          const n = Math.min(inBuf.length, p.t.bytes - done);
          await readAt(inFh, inBuf, n, start + done);
          await write(inBuf.subarray(0, n));
          done += n;
          doneIn += n;
          onProgress(doneIn, totalIn);
        }
        continue;
      }
      // Chunks of whole rows are read and decoded here, encoded by the pool's workers (several
      // in flight), and written in order.
      const row = p.t.dims[0] ?? 1;
      const rowsPerChunk = Math.max(1, Math.floor(CHUNK_ELEMS / row));
      const srcSize = p.t.type === 0 ? 4 : 2; // F32, else F16 or BF16
      const bigIn = row > CHUNK_ELEMS ? aligned(row * 4) : inBuf;
      const inflight: Array<{ bytes: Promise<Buffer>; srcBytes: number }> = [];
      const writeOldest = async () => {
        const next = inflight.shift()!;
        await write(await next.bytes);
        doneIn += next.srcBytes;
        onProgress(doneIn, totalIn);
      };
      for (let e = 0; e < p.elements; ) {
        if (signal?.aborted) throw signal.reason ?? new Error("canceled");
        const n = Math.min(rowsPerChunk * row, p.elements - e);
        await readAt(inFh, bigIn, n * srcSize, start + e * srcSize);
        const floats = new Float32Array(n); // handed to a worker: a fresh one per chunk
        decode(p.t.type, bigIn, floats, n);
        const bytes = pool.encode(p.to, floats);
        bytes.catch(() => undefined); // awaited in order below; an early throw must not leave it unhandled
        inflight.push({ bytes, srcBytes: n * srcSize });
        if (inflight.length >= pool.depth) await writeOldest();
        e += n;
      }
      while (inflight.length > 0) await writeOldest();
    }
    await outFh.sync();
    return { digest: `sha256:${hash.digest("hex")}`, size: pos };
  } finally {
    await pool.close();
    await inFh.close();
    await outFh.close();
  }
}
