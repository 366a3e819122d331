// The on-disk state of a partial blob download, in Ollama's own format (see blob-download.ts):
// the part plan and its validation, the part files, and the small file-writing helpers.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";

export interface PartState {
  N: number;
  Offset: number;
  Size: number;
  Completed: number;
}

export interface DownloadTuning {
  /** Smallest part (Ollama: 100 MB). */
  minPartSize: number;
  /** Largest part (Ollama: 1000 MB). */
  maxPartSize: number;
  /** Parts per blob and the most parallel requests (Ollama: 16). */
  maxParts: number;
  /** Parallel requests at the start; more are added while they raise the rate. */
  initialConnections: number;
  /** Tries per part after errors that made no progress (Ollama: 6). */
  maxRetries: number;
  /** How often part states are saved while bytes arrive. */
  persistIntervalMs: number;
  /** One range request fetches a chunk of total/256 bytes within [min, max] (and within a part). */
  minChunkSize: number;
  maxChunkSize: number;
  /** Blobs at least this big are hashed on a worker thread, in parallel with the download. */
  workerHashMin: number;
}

export const DEFAULT_TUNING: DownloadTuning = {
  minPartSize: 100_000_000,
  maxPartSize: 1_000_000_000,
  maxParts: 16,
  initialConnections: 4,
  maxRetries: 6,
  persistIntervalMs: 500,
  minChunkSize: 16 << 20,
  maxChunkSize: 64 << 20,
  workerHashMin: 32 << 20,
};

/** Ollama's part sizing: total/16 clamped to [min, max]. */
export function planParts(total: number, t: DownloadTuning): PartState[] {
  let size = Math.floor(total / t.maxParts);
  size = Math.min(Math.max(size, t.minPartSize), t.maxPartSize);
  const parts: PartState[] = [];
  for (let offset = 0; offset < total; offset += size) {
    parts.push({ N: parts.length, Offset: offset, Size: Math.min(size, total - offset), Completed: 0 });
  }
  return parts;
}

/** Part states that tile [0, total) exactly, or null. */
export function validateParts(parts: PartState[], total: number): PartState[] | null {
  const sorted = [...parts].sort((a, b) => a.Offset - b.Offset);
  let at = 0;
  const ns = new Set<number>();
  for (const p of sorted) {
    const ints = [p.N, p.Offset, p.Size, p.Completed].every((v) => Number.isSafeInteger(v) && v >= 0);
    if (!ints || p.Size === 0 || p.Completed > p.Size || p.Offset !== at || ns.has(p.N)) return null;
    ns.add(p.N);
    at += p.Size;
  }
  return at === total ? sorted : null;
}

/** End of the written bytes contiguous from `from` (parts sorted by offset). */
export function contiguousEnd(parts: PartState[], from: number): number {
  let p = from;
  for (const part of parts) {
    if (part.Offset + part.Size <= p) continue;
    if (part.Offset > p) break;
    const end = part.Offset + part.Completed;
    if (end <= p) return p;
    p = end;
    if (part.Completed < part.Size) return p;
  }
  return p;
}

/** The part states saved next to `partial` (its `-<N>` files) in `blobsDir`. */
export async function readPartStates(blobsDir: string, partial: string): Promise<PartState[]> {
  const prefix = `${path.basename(partial)}-`;
  const parts: PartState[] = [];
  for (const entry of await fs.readdir(blobsDir)) {
    if (!entry.startsWith(prefix) || !/^\d+$/.test(entry.slice(prefix.length))) continue;
    const j = JSON.parse(await fs.readFile(path.join(blobsDir, entry), "utf8")) as PartState;
    parts.push({ N: j.N, Offset: j.Offset, Size: j.Size, Completed: j.Completed });
  }
  return parts;
}

/**
 * The part states of a partial download that can be resumed: the data file `partial` is
 * `total` bytes and its part files tile it; null otherwise.
 */
export async function resumableParts(blobsDir: string, partial: string, total: number): Promise<PartState[] | null> {
  try {
    const st = await fs.stat(partial);
    if (!st.isFile() || st.size !== total) return null;
    const parts = validateParts(await readPartStates(blobsDir, partial), total);
    return parts && parts.length > 0 ? parts : null;
  } catch {
    return null;
  }
}

/** Remove the data and part files of a blob's partial download (and their temp files). */
export async function discardPartialFiles(blobsDir: string, partial: string): Promise<void> {
  const prefix = `${path.basename(partial)}-`;
  const temp = new RegExp(`^\\.${prefix}\\d+\\.[0-9a-f]{8}\\.tmp$`);
  for (const entry of await fs.readdir(blobsDir).catch(() => [] as string[])) {
    if ((entry.startsWith(prefix) && /^\d+$/.test(entry.slice(prefix.length))) || temp.test(entry)) {
      await fs.rm(path.join(blobsDir, entry), { force: true });
    }
  }
  await fs.rm(partial, { force: true });
}

export async function writeAll(fh: FileHandle, bufs: Buffer[], position: number): Promise<void> {
  let pos = position;
  let pending = bufs;
  while (pending.length > 0) {
    const { bytesWritten } = await fh.writev(pending, pos);
    pos += bytesWritten;
    // drop what was written (a short write is rare but legal)
    let skip = bytesWritten;
    const rest: Buffer[] = [];
    for (const b of pending) {
      if (skip >= b.length) {
        skip -= b.length;
        continue;
      }
      rest.push(skip > 0 ? b.subarray(skip) : b);
      skip = 0;
    }
    pending = rest;
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fs.open(dir, "r").catch(() => null);
  await fh?.sync().catch(() => {});
  await fh?.close();
}

export async function atomicWriteSmall(file: string, text: string): Promise<void> {
  // The temp name starts with "." so Ollama's `<blob>-partial-*` glob never sees it.
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    await fs.writeFile(tmp, text, { mode: 0o644 });
    await fs.rename(tmp, file);
  } catch (e) {
    // a full disk fails the write part-way: the temp file must not stay
    await fs.rm(tmp, { force: true });
    throw e;
  }
}
