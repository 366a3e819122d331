// safetensors headers, read and checked before a byte of weights is trusted: an 8-byte length, a
// JSON table of tensors (dtype, shape, [begin, end) in the data that follows). Every tensor must
// be F32, F16 or BF16, its byte range must lie inside the file and match its shape, and the
// header must be at most 100 MB (the format's own limit) — a crafted file is refused, not read.
import { open } from "node:fs/promises";
import { ggmlType } from "./gguf.js";

/** Whether a request's files (a model directory, or an adapter's) are safetensors ones, to be
 *  converted, rather than GGUF. */
export function hasSafetensors(names: readonly string[]): boolean {
  return names.some((n) => n.endsWith(".safetensors"));
}

export class SafetensorsError extends Error {
  override name = "SafetensorsError";
}

export type SafetensorsDtype = "F32" | "F16" | "BF16";
const DTYPES: ReadonlySet<string> = new Set<SafetensorsDtype>(["F32", "F16", "BF16"]);
const MAX_HEADER = 100_000_000;

export interface SafetensorsTensor {
  name: string;
  dtype: SafetensorsDtype;
  /** Row-major, outermost first (PyTorch order). */
  shape: number[];
  /** Absolute byte offset of the data in the file. */
  offset: number;
  bytes: number;
}

/** The tensors of one .safetensors file (`label` names it in errors), but those `skip` names. */
export async function readSafetensors(file: string, label: string, skip?: (tensor: string) => boolean): Promise<SafetensorsTensor[]> {
  const fh = await open(file, "r");
  try {
    const size = (await fh.stat()).size;
    const len = Buffer.alloc(8);
    if (size < 8 || (await fh.read(len, 0, 8, 0)).bytesRead !== 8) throw new SafetensorsError(`${label}: not a safetensors file (too short)`);
    const n = len.readBigUInt64LE(0);
    if (n > BigInt(Math.min(MAX_HEADER, size - 8))) throw new SafetensorsError(`${label}: not a safetensors file (header length ${n} does not fit the file)`);
    const headerLen = Number(n);
    const raw = Buffer.alloc(headerLen);
    if ((await fh.read(raw, 0, headerLen, 8)).bytesRead !== headerLen) throw new SafetensorsError(`${label}: truncated header`);
    let table: unknown;
    try {
      table = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new SafetensorsError(`${label}: the header is not JSON`);
    }
    if (!table || typeof table !== "object" || Array.isArray(table)) throw new SafetensorsError(`${label}: the header is not a JSON object`);
    const dataStart = 8 + headerLen;
    const dataSize = size - dataStart;
    const out: SafetensorsTensor[] = [];
    for (const [name, v] of Object.entries(table as Record<string, unknown>)) {
      if (name === "__metadata__" || skip?.(name)) continue;
      const e = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      if (!e || typeof e !== "object") throw new SafetensorsError(`${label}: tensor ${name}: not an object`);
      if (typeof e.dtype !== "string" || !DTYPES.has(e.dtype)) {
        throw new SafetensorsError(`${label}: tensor ${name} has dtype ${String(e.dtype)}; only F32, F16 and BF16 weights can be converted`);
      }
      const dtype = e.dtype as SafetensorsDtype;
      const shape = e.shape;
      if (!Array.isArray(shape) || shape.length > 4 || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new SafetensorsError(`${label}: tensor ${name} has an invalid shape`);
      const offs = e.data_offsets;
      if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isSafeInteger(o) && o >= 0) || offs[0] > offs[1] || offs[1] > dataSize) {
        throw new SafetensorsError(`${label}: tensor ${name} has data outside the file`);
      }
      const elements = (shape as number[]).reduce((a, b) => a * b, 1);
      const bytes = (offs[1] as number) - (offs[0] as number);
      if (elements * ggmlType(dtype).bytes !== bytes) throw new SafetensorsError(`${label}: tensor ${name}: ${bytes} bytes for shape [${(shape as number[]).join(", ")}] of ${dtype}`);
      out.push({ name, dtype, shape: shape as number[], offset: dataStart + (offs[0] as number), bytes });
    }
    return out;
  } finally {
    await fh.close();
  }
}
