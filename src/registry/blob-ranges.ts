// The transfer half of a blob download (blob-download.ts): the missing bytes of the parts as
// chunks in file order, fetched by a pool of connections that grows while that raises the rate,
// each chunk retried on its own, and each response written into the partial file, counted and
// hashed strictly in order. Separate from blob-download.ts, which owns the download's life (lock,
// resume, persisting part states, verifying, renaming); this module only moves bytes from the
// registry into the data file and advances the counters it is handed.
import type { FileHandle } from "node:fs/promises";
import { setMaxListeners } from "node:events";
import { backoffDelay, isAbort, RegistryError, sleep, type RegistryClient } from "./client.js";
import type { Hasher } from "./blob-hasher.js";
import { writeAll, type DownloadTuning, type PartState } from "./blob-parts.js";

interface TrackedPart {
  part: PartState;
  /** Completed when this run started. */
  base: number;
  /** This run's chunks of the part, in order. */
  chunks: Chunk[];
}

interface Chunk {
  owner: TrackedPart;
  start: number;
  end: number;
  written: number;
}

const errCode = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;

/** Stall: undici's bodyTimeout/headersTimeout (no byte for 30 s); retried without using a try. */
function isStall(err: unknown): boolean {
  const c = errCode(err);
  return c === "UND_ERR_BODY_TIMEOUT" || c === "UND_ERR_HEADERS_TIMEOUT";
}

export type DownloadLog = (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => void;

/** What the ranges of one download are fetched into and reported to (BlobDownload's state). */
export interface RangeDownload {
  readonly client: RegistryClient;
  /** The data file (`-partial`), preallocated to `total`. */
  readonly fh: FileHandle;
  readonly hasher: Hasher;
  readonly total: number;
  readonly hex: string;
  readonly tuning: DownloadTuning;
  readonly log: DownloadLog;
  /** The download's own signal: aborted when every follower left or the lock was lost. */
  readonly signal: AbortSignal;
  /** Bytes written to the data file (`completed`) and received from the network (`transferred`). */
  readonly progress: { completed: number; transferred: number };
  /** Parts whose Completed changed since their part files were last written. */
  readonly dirty: Set<PartState>;
  readonly lockLost: () => Error | undefined;
}

export class RangeFetcher {
  constructor(private readonly dl: RangeDownload) {}

  /**
   * The missing bytes as chunks in file order, fetched by at most maxParts connections that each
   * take the next chunk. Parts all running from their starts would finish together and leave
   * the hash to read nearly the whole blob at the end; chunks in order keep the hashed prefix
   * close behind the download.
   */
  async run(todo: PartState[], url: URL): Promise<void> {
    const chunkSize = Math.min(Math.max(Math.floor(this.dl.total / 256), this.dl.tuning.minChunkSize), this.dl.tuning.maxChunkSize);
    const queue: Chunk[] = [];
    for (const part of todo) {
      const tracked: TrackedPart = { part, base: part.Completed, chunks: [] };
      for (let at = part.Offset + part.Completed; at < part.Offset + part.Size; at += chunkSize) {
        const c: Chunk = { owner: tracked, start: at, end: Math.min(at + chunkSize, part.Offset + part.Size), written: 0 };
        tracked.chunks.push(c);
        queue.push(c);
      }
    }
    const inner = new AbortController();
    setMaxListeners(4 * this.dl.tuning.maxParts + 16, inner.signal);
    const onOuter = () => inner.abort(this.dl.signal.reason);
    this.dl.signal.addEventListener("abort", onOuter, { once: true });
    let first: unknown;
    const worker = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        try {
          await this.runChunk(c, url, inner.signal);
        } catch (e) {
          first ??= e;
          inner.abort(e);
          return;
        }
      }
    };
    // Connections ramp up: start with a few and add more while that still raises the rate.
    // A far CDN (tens of MB/s per connection) ends at maxParts, as Ollama's 16 parts; a
    // registry next door, where one connection is already as fast as the disk, stays low.
    const running: Array<Promise<void>> = [];
    const spawn = (n: number) => {
      for (let i = 0; i < n && running.length < this.dl.tuning.maxParts && queue.length > 0; i++) running.push(worker());
    };
    spawn(this.dl.tuning.initialConnections);
    let lastBytes = this.dl.progress.completed;
    let lastRate = 0;
    const ramp = setInterval(() => {
      const rate = this.dl.progress.completed - lastBytes;
      lastBytes = this.dl.progress.completed;
      if (queue.length === 0 || running.length >= this.dl.tuning.maxParts) return clearInterval(ramp);
      if (lastRate === 0 || rate > lastRate * 1.15) spawn(Math.max(2, Math.floor(running.length / 2)));
      else return clearInterval(ramp);
      lastRate = rate;
    }, 1000);
    try {
      // workers started later join the list; wait until all of them have drained the queue
      for (let seen = 0; seen < running.length; seen = running.length) await Promise.all(running);
    } finally {
      clearInterval(ramp);
      this.dl.signal.removeEventListener("abort", onOuter);
    }
    if (first !== undefined) throw this.dl.signal.aborted ? (this.dl.signal.reason ?? first) : first;
  }

  private async runChunk(chunk: Chunk, url: URL, signal: AbortSignal): Promise<void> {
    let tries = 0;
    while (chunk.start + chunk.written < chunk.end) {
      const before = chunk.written;
      try {
        await this.fetchRange(chunk, url, signal);
      } catch (err) {
        if (isAbort(err, signal) || errCode(err) === "ENOSPC") throw err;
        if (this.dl.lockLost()) throw err;
        const status = (err as RegistryError).status;
        if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) throw err;
        const n = chunk.owner.part.N;
        if (isStall(err)) {
          this.dl.log("info", `${this.dl.hex.slice(0, 12)} part ${n} stalled; retrying`);
          continue;
        }
        // a connection that dropped after delivering bytes is not a failed try
        if (chunk.written > before) tries = 0;
        if (++tries >= this.dl.tuning.maxRetries) throw new Error(`max retries exceeded: ${(err as Error).message}`);
        const wait = backoffDelay(this.dl.client.backoffMs, tries - 1);
        this.dl.log("info", `${this.dl.hex.slice(0, 12)} part ${n} attempt ${tries} failed: ${(err as Error).message}, retrying in ${Math.round(wait)} ms`);
        await sleep(wait, signal);
      }
    }
  }

  private syncedAt = 0;
  private syncing = false;

  /**
   * Every 128 MiB written, flush the data file in the background (on libuv's pool), so the fsync
   * before the rename has little left to write and the disk works while the network does.
   */
  private backgroundSync(fh: FileHandle): void {
    if (this.syncing || this.dl.progress.completed - this.syncedAt < 128 << 20) return;
    this.syncing = true;
    const at = this.dl.progress.completed;
    fh.datasync().then(
      () => {
        this.syncedAt = at;
        this.syncing = false;
      },
      () => {
        this.syncing = false;
      },
    );
  }

  /** Advance the part's saved Completed over the chunks written contiguously from its start. */
  private settle(t: TrackedPart): void {
    let c = t.base;
    for (const ch of t.chunks) {
      c += ch.written;
      if (ch.start + ch.written < ch.end) break;
    }
    if (c !== t.part.Completed) {
      t.part.Completed = c;
      this.dl.dirty.add(t.part);
    }
  }

  private async fetchRange(chunk: Chunk, url: URL, signal: AbortSignal): Promise<void> {
    const fh = this.dl.fh;
    const hasher = this.dl.hasher;
    const start = chunk.start + chunk.written;
    const end = chunk.end; // exclusive
    const res = await this.dl.client.send("GET", url, { headers: { range: `bytes=${start}-${end - 1}` }, signal, auth: this.dl.client.sameHost(url) });
    if (res.statusCode === 206) {
      const cr = String(res.headers["content-range"] ?? "");
      const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(cr);
      if (!m || Number(m[1]) !== start) {
        res.body.destroy();
        throw new RegistryError(`unexpected Content-Range "${cr}" for bytes ${start}-${end - 1}`);
      }
    } else if (!(res.statusCode === 200 && start === 0)) {
      res.body.destroy();
      throw new RegistryError(`unexpected status code ${res.statusCode} for a range request`);
    }
    // Bytes are gathered into ~1 MiB batches; one batch is written while the next arrives, and
    // the bookkeeping (Completed, hashing) follows the writes strictly in order.
    let pos = start; // where the next batch goes
    let batch: Buffer[] = [];
    let batchBytes = 0;
    let inflight: Promise<void> = Promise.resolve();
    const flush = (): Promise<void> => {
      if (batchBytes === 0) return inflight;
      const at = pos;
      const bufs = batch;
      const n = batchBytes;
      batch = [];
      batchBytes = 0;
      pos += n;
      const write = writeAll(fh, bufs, at);
      write.catch(() => undefined); // observed below, in order
      const prev = inflight;
      inflight = (async () => {
        await prev;
        await write;
        chunk.written += n;
        this.dl.progress.completed += n;
        this.settle(chunk.owner);
        this.backgroundSync(fh);
        let o = at;
        for (const b of bufs) {
          hasher.offer(o, b);
          o += b.length;
        }
      })();
      return inflight;
    };
    try {
      for await (const data of res.body as AsyncIterable<Buffer>) {
        let buf = data;
        const room = end - (pos + batchBytes);
        const over = buf.length > room;
        if (over) buf = buf.subarray(0, room);
        if (buf.length > 0) {
          batch.push(buf);
          batchBytes += buf.length;
          this.dl.progress.transferred += buf.length;
        }
        if (batchBytes >= 1 << 20) {
          await inflight; // at most one write in flight
          void flush();
        }
        if (over) break; // the server sent more than asked for: ignore the rest
      }
      await flush();
    } catch (err) {
      // what arrived before the failure is kept
      await flush().catch(() => undefined);
      throw err;
    }
    if (pos < end) throw new RegistryError(`unexpected EOF after ${pos - start} of ${end - start} bytes`);
  }
}
