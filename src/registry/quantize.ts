// GGUF re-quantization in TypeScript, streaming tensor by tensor (no llama.cpp needed):
// sources F32, F16 and BF16; targets F32, F16, Q8_0 and Q4_0, with ggml's reference block
// quantizers (quantize_row_q8_0_ref / quantize_row_q4_0_ref in float32 arithmetic).
//
// Which tensors change ("pure" mode, like `llama-quantize --pure`): every weight matrix (name ends
// in "weight", two or more dimensions, rows a multiple of 32, not a norm / gate-input / position
// table) goes to the target type; everything else keeps its type, except that F32 and F16
// targets convert every float tensor with two or more dimensions. llama.cpp's mixed recipes
// (e.g. output.weight as Q6_K) and the K-quants are not implemented: those types are rejected.
//
// The metadata is copied byte for byte, with general.file_type set to the target; tensor offsets
// are recomputed with the file's alignment. The output is hashed while it is written.
import { decode, encode } from "./ggml-encode.js";
import { createHash } from "node:crypto";
import { open, type FileHandle } from "node:fs/promises";
import { FILE_TYPE_NAMES, GgufError, readGgufInfo, type GgufInfo, type GgufTensorInfo } from "./gguf.js";

export type QuantizeTarget = "F32" | "F16" | "Q8_0" | "Q4_0";

/** llama_ftype of each target (general.file_type). */
const FTYPE: Record<QuantizeTarget, number> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 };
/** ggml tensor type id, block size, block bytes. */
const GGML: Record<QuantizeTarget | "BF16", [number, number, number]> = {
  F32: [0, 1, 4],
  F16: [1, 1, 2],
  Q4_0: [2, 32, 18],
  Q8_0: [8, 32, 34],
  BF16: [30, 1, 2],
};
const SOURCE_TYPES = new Set([0, 1, 30]); // F32, F16, BF16

export const SUPPORTED_QUANTIZE_TYPES: readonly QuantizeTarget[] = ["F32", "F16", "Q8_0", "Q4_0"];
/** Every type name Ollama accepts for `quantize` (fs/ggml ParseFileType). */
const OLLAMA_TYPES = new Set([
  "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
  "Q4_K_S", "Q4_K_M", "Q4_K", "Q5_K_S", "Q5_K_M", "Q5_K", "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS",
  "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "IQ2_M", "IQ1_M", "MXFP4",
]);

export class QuantizeError extends Error {
  override name = "QuantizeError";
}

/** Upper-cased target, or a QuantizeError naming what is supported. */
export function parseQuantizeType(raw: string): QuantizeTarget {
  const t = raw.trim().toUpperCase();
  if ((SUPPORTED_QUANTIZE_TYPES as readonly string[]).includes(t)) return t as QuantizeTarget;
  if (OLLAMA_TYPES.has(t)) {
    throw new QuantizeError(`quantization type ${t} is not supported by ollamats (supported: ${SUPPORTED_QUANTIZE_TYPES.join(", ")}; K-quants are not implemented)`);
  }
  throw new QuantizeError(`unsupported quantization type ${raw}`);
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

/** Whether `t` becomes `target` (see the file comment). */
export function convertsTo(t: GgufTensorInfo, target: QuantizeTarget): boolean {
  if (!SOURCE_TYPES.has(t.type) || t.dims.length < 2) return false;
  if (target === "F32" || target === "F16") return GGML[target][0] !== t.type;
  const n = t.name;
  if (!n.endsWith("weight")) return false;
  if (/norm\.weight$|_norm\b|ffn_gate_inp\.weight$|pos_embd|token_types|ssm_conv1d|\.time_mix_/.test(n)) return false;
  return (t.dims[0] ?? 0) % 32 === 0;
}

export interface QuantizeResult {
  digest: string;
  size: number;
}

async function readAt(fh: FileHandle, buf: Buffer, length: number, position: number): Promise<void> {
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, position + got);
    if (bytesRead === 0) throw new GgufError("invalid GGUF file: truncated while quantizing");
    got += bytesRead;
  }
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
    const plan = info.tensors.map((t) => {
      const to = convertsTo(t, target) ? target : null;
      const elements = t.dims.reduce((a, b) => a * b, 1);
      const bytes = to ? (elements / GGML[to][1]) * GGML[to][2] : t.bytes;
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
      infos.push(ggufString(p.t.name), u32le(p.t.dims.length), ...p.t.dims.map((d) => u64le(d)), u32le(p.to ? GGML[p.to][0] : p.t.type), u64le(p.offset));
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
    const floats = new Float32Array(CHUNK_ELEMS);
    const outBuf = aligned(CHUNK_ELEMS * 4);
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
      const row = p.t.dims[0] ?? 1;
      const rowsPerChunk = Math.max(1, Math.floor(CHUNK_ELEMS / row));
      const srcSize = GGML[p.t.type === 0 ? "F32" : p.t.type === 1 ? "F16" : "BF16"][2];
      const [, block, blockBytes] = GGML[p.to];
      let bigIn = inBuf;
      let bigFloats = floats;
      let bigOut = outBuf;
      if (row > CHUNK_ELEMS) {
        bigIn = aligned(row * 4);
        bigFloats = new Float32Array(row);
        bigOut = aligned(row * 4);
      }
      for (let e = 0; e < p.elements; ) {
        const n = Math.min(rowsPerChunk * row, p.elements - e);
        await readAt(inFh, bigIn, n * srcSize, start + e * srcSize);
        decode(p.t.type, bigIn, bigFloats, n);
        const outBytes = (n / block) * blockBytes;
        encode(p.to, bigFloats, n, bigOut);
        await write(bigOut.subarray(0, outBytes));
        e += n;
        doneIn += n * srcSize;
        onProgress(doneIn, totalIn);
      }
    }
    await outFh.sync();
    return { digest: `sha256:${hash.digest("hex")}`, size: pos };
  } finally {
    await inFh.close();
    await outFh.close();
  }
}
