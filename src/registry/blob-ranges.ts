// The transfer half of a blob download (blob-download.ts): the missing bytes of the parts as
// chunks in file order, fetched by a pool of connections that grows while that raises the rate,
// each chunk retried on its own, and each response written into the partial file, counted and
// hashed strictly in order. A server without Range support (a plain 200 with the whole blob) is
// read as one stream instead. Separate from blob-download.ts, which owns the download's life
// (lock, resume, persisting part states, verifying, renaming); this module only moves bytes from
// the registry into the data file and advances the counters it is handed.
//
// Retries: only transient failures (isTransient), at most maxRetries in a row without progress
// per chunk, stalls likewise, and maxRetries × maxParts in the whole download (so a server that
// drops every connection after a few bytes cannot keep a pull going forever); every other failure
// is final and stops the whole download at once.
import type { Dispatcher } from "undici";
import type { FileHandle } from "node:fs/promises";
import { setMaxListeners } from "node:events";
import { isTransient, RegistryError, retryDelay, RetriesExhaustedError, sleep, type RegistryClient } from "./client.js";
import { bodyTooLong, bodyTooShort, checked, checkRangeAnswer, checkWholeAnswer, NoRangeSupport } from "./blob-answers.js";
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
const noop = () => undefined;

/** Stall: undici's bodyTimeout/headersTimeout (no byte for 30 s); counted apart from other tries. */
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
  private readonly digest: string;
  /** Transient failures so far, in all chunks. */
  private failures = 0;
  /** Where the bytes come from; renewed when a signed storage URL has expired (renewUrl). */
  private url!: URL;
  /** Bumped with each renewal: a failure with an older URL just tries the new one. */
  private urlGen = 0;
  private renewing: Promise<void> | undefined;
  /** Bytes written when the URL was last renewed: one renewal per stretch without progress. */
  private renewedAt = -1;

  constructor(private readonly dl: RangeDownload) {
    this.digest = `sha256:${dl.hex}`;
  }

  /**
   * The missing bytes of `todo`, as chunks in file order. Ranged requests in parallel; when the
   * server turns out not to support ranges, whatever is still missing comes from one stream.
   */
  async run(todo: PartState[], url: URL): Promise<void> {
    this.url = url;
    const chunkSize = Math.min(Math.max(Math.floor(this.dl.total / 256), this.dl.tuning.minChunkSize), this.dl.tuning.maxChunkSize);
    const chunks: Chunk[] = [];
    for (const part of todo) {
      const tracked: TrackedPart = { part, base: part.Completed, chunks: [] };
      for (let at = part.Offset + part.Completed; at < part.Offset + part.Size; at += chunkSize) {
        const c: Chunk = { owner: tracked, start: at, end: Math.min(at + chunkSize, part.Offset + part.Size), written: 0 };
        tracked.chunks.push(c);
        chunks.push(c);
      }
    }
    try {
      await this.parallel([...chunks]);
      return;
    } catch (e) {
      if (!(e instanceof NoRangeSupport) || this.dl.signal.aborted) throw e;
      this.dl.log("info", `${this.dl.hex.slice(0, 12)}: the server does not support range requests; downloading in one stream`);
    }
    const rest = chunks.filter((c) => c.start + c.written < c.end);
    const missing = () => rest.reduce((n, c) => n + c.end - c.start - c.written, 0);
    await this.retrying("stream", () => this.fetchWhole(rest, this.dl.signal), missing, this.dl.signal);
  }

  /**
   * Chunks in file order, fetched by at most maxParts connections that each take the next chunk.
   * Parts all running from their starts would finish together and leave the hash to read nearly
   * the whole blob at the end; chunks in order keep the hashed prefix close behind the download.
   * The first final failure stops every connection.
   */
  private async parallel(queue: Chunk[]): Promise<void> {
    const inner = new AbortController();
    setMaxListeners(4 * this.dl.tuning.maxParts + 16, inner.signal);
    const onOuter = () => inner.abort(this.dl.signal.reason);
    this.dl.signal.addEventListener("abort", onOuter, { once: true });
    let first: unknown;
    const worker = async () => {
      for (let c = queue.shift(); c; c = queue.shift()) {
        const chunk = c;
        try {
          const missing = () => chunk.end - chunk.start - chunk.written;
          await this.retrying(`part ${chunk.owner.part.N}`, () => this.fetchRange(chunk, inner.signal), missing, inner.signal);
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
      await allOf(running);
    } finally {
      clearInterval(ramp);
      this.dl.signal.removeEventListener("abort", onOuter);
    }
    if (first !== undefined) throw this.dl.signal.aborted ? (this.dl.signal.reason ?? first) : first;
  }

  /**
   * Run `attempt` until nothing is `missing()`. Only transient failures are tried again: at most
   * maxRetries in a row that brought no byte (with back-off between), and stalls (no byte for
   * 30 s) likewise.
   */
  private async retrying(label: string, attempt: () => Promise<void>, missing: () => number, signal: AbortSignal): Promise<void> {
    const max = this.dl.tuning.maxRetries;
    let tries = 0;
    let stalls = 0;
    while (missing() > 0) {
      const before = missing();
      const gen = this.urlGen;
      try {
        await attempt();
      } catch (err) {
        if (!isTransient(err, signal) && (await this.renewUrl(err, gen))) continue;
        if (!isTransient(err, signal) || this.dl.lockLost()) throw err;
        const budget = max * this.dl.tuning.maxParts;
        if (++this.failures >= budget) throw new RetriesExhaustedError(`max retries exceeded: ${budget} failed transfers of ${this.digest}; last: ${(err as Error).message}`);
        // a connection that dropped after delivering bytes is not a failed try of its chunk
        if (missing() < before) [tries, stalls] = [0, 0];
        const name = `${this.dl.hex.slice(0, 12)} ${label}`;
        if (isStall(err)) {
          if (++stalls >= max) throw new RetriesExhaustedError(`download stalled: no data from the registry ${stalls} times in a row: ${(err as Error).message}`);
          this.dl.log("info", `${name} stalled; retrying`);
          continue;
        }
        if (++tries >= max) throw new RetriesExhaustedError(`max retries exceeded: ${(err as Error).message}`);
        const wait = retryDelay(err, this.dl.client.backoffMs, tries - 1);
        this.dl.client.retryNotice(name, err, tries + 1, max, wait);
        await sleep(wait, signal);
      }
    }
  }

  /**
   * A storage host the registry redirected to (a signed S3/CDN URL) refusing with 400/401/403
   * has most likely seen its URL expire during a long download: ask the registry for a fresh one
   * (once per stretch without progress) instead of failing the whole download. True when the
   * failed request should be tried again.
   */
  private async renewUrl(err: unknown, gen: number): Promise<boolean> {
    const status = err instanceof RegistryError ? err.status : undefined;
    if (status !== 400 && status !== 401 && status !== 403) return false;
    if (gen !== this.urlGen) return true; // renewed since this request was sent
    if (!this.renewing) {
      if (this.dl.client.sameHost(this.url) || this.renewedAt === this.dl.progress.completed || this.dl.signal.aborted) return false;
      this.renewing = this.renew(err);
    }
    await this.renewing;
    return true;
  }

  private async renew(err: unknown): Promise<void> {
    try {
      this.dl.log("info", `${this.dl.hex.slice(0, 12)}: ${(err as Error).message} from ${this.url.host}; asking the registry for a new URL`);
      this.renewedAt = this.dl.progress.completed;
      this.url = await this.dl.client.resolveBlobUrl(this.digest, this.dl.signal);
      this.urlGen++;
    } finally {
      this.renewing = undefined;
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

  /** The rest of one chunk by a range request. */
  private async fetchRange(chunk: Chunk, signal: AbortSignal): Promise<void> {
    const start = chunk.start + chunk.written;
    const res = await this.dl.client.get(this.url, { headers: { range: `bytes=${start}-${chunk.end - 1}` }, signal });
    checked(res, () => checkRangeAnswer(res.statusCode, res.headers, start, chunk.end, this.dl.total, this.digest));
    await this.consume(res, start, chunk.end, [chunk]);
  }

  /** What `chunks` still miss, from one plain GET of the whole blob (a server without ranges). */
  private async fetchWhole(chunks: Chunk[], signal: AbortSignal): Promise<void> {
    const res = await this.dl.client.get(this.url, { signal });
    checked(res, () => checkWholeAnswer(res.statusCode, res.headers, this.dl.total, this.digest));
    await this.consume(res, 0, this.dl.total, chunks.filter((c) => c.start + c.written < c.end));
  }

  /**
   * Write a body that carries the blob's bytes [from, to) into the missing bytes of `targets`
   * (chunks in file order; bytes outside them are skipped). The body must be exactly that long:
   * a longer or a cleanly ended shorter one is a final error; a dropped connection is transient,
   * and what arrived before it is kept.
   */
  private async consume(res: Dispatcher.ResponseData, from: number, to: number, targets: Chunk[]): Promise<void> {
    const writer = new BatchWriter(this.dl.fh, (chunk, at, bufs, n) => this.written(chunk, at, bufs, n));
    const next = targets.map((c) => c.start + c.written); // where each target's next byte goes
    let off = from; // blob offset of the body's next byte
    let i = 0;
    try {
      for await (const data of res.body as AsyncIterable<Buffer>) {
        if (off + data.length > to) throw bodyTooLong(this.digest, to - from);
        this.dl.progress.transferred += data.length;
        let buf = data;
        let p = off;
        off += data.length;
        while (buf.length > 0 && i < targets.length) {
          const c = targets[i] as Chunk;
          const want = next[i] as number;
          if (p >= c.end) {
            i++;
          } else if (p < want) {
            const skip = Math.min(buf.length, want - p);
            buf = buf.subarray(skip);
            p += skip;
          } else {
            const n = Math.min(buf.length, c.end - p);
            await writer.add(c, p, buf.subarray(0, n));
            next[i] = want + n;
            buf = buf.subarray(n);
            p += n;
          }
        }
      }
      await writer.drain();
    } catch (err) {
      // keep what arrived; a failed write (ENOSPC) says more than the error that ended the body
      const writeError: unknown = await writer.drain().then(noop, (e: unknown) => e);
      throw writeError ?? err;
    }
    if (off < to) throw bodyTooShort(this.digest, off - from, to - from);
  }

  /** Bookkeeping after a batch is on disk, strictly in file order per response. */
  private written(chunk: Chunk, at: number, bufs: Buffer[], n: number): void {
    chunk.written += n;
    this.dl.progress.completed += n;
    this.settle(chunk.owner);
    this.backgroundSync(this.dl.fh);
    let o = at;
    for (const b of bufs) {
      this.dl.hasher.offer(o, b);
      o += b.length;
    }
  }
}

/**
 * Wait for every promise in `list`, including those added to it while waiting (workers the ramp
 * starts later). Its length is taken before each wait: taken after, a worker added during the
 * wait was never waited for, and the download went on to verify while it was still writing.
 */
export async function allOf(list: Array<Promise<unknown>>): Promise<void> {
  for (;;) {
    const n = list.length;
    await Promise.all(list);
    if (list.length === n) return;
  }
}

/**
 * Bytes of one response gathered into ~1 MiB batches (never across chunks); one batch is written
 * while the next arrives, and `done` (Completed, hashing) follows the writes strictly in order.
 * A failed write stops the bookkeeping: nothing after it counts as written.
 */
class BatchWriter {
  private batch: Buffer[] = [];
  private bytes = 0;
  private chunk: Chunk | undefined;
  private at = 0;
  private inflight: Promise<void> = Promise.resolve();

  constructor(
    private readonly fh: FileHandle,
    private readonly done: (chunk: Chunk, at: number, bufs: Buffer[], n: number) => void,
  ) {}

  /** `buf` goes to `pos` of the file, inside `chunk`. */
  async add(chunk: Chunk, pos: number, buf: Buffer): Promise<void> {
    if (this.bytes > 0 && (chunk !== this.chunk || pos !== this.at + this.bytes)) {
      await this.inflight;
      this.flush();
    }
    if (this.bytes === 0) [this.chunk, this.at] = [chunk, pos];
    this.batch.push(buf);
    this.bytes += buf.length;
    if (this.bytes >= 1 << 20) {
      await this.inflight; // at most one write in flight
      this.flush();
    }
  }

  /** Write what is gathered and wait for every write. */
  async drain(): Promise<void> {
    this.flush();
    await this.inflight;
  }

  private flush(): void {
    if (this.bytes === 0 || !this.chunk) return;
    const [chunk, at, bufs, n] = [this.chunk, this.at, this.batch, this.bytes];
    this.batch = [];
    this.bytes = 0;
    const write = writeAll(this.fh, bufs, at);
    write.catch(noop); // observed below, in order
    const prev = this.inflight;
    this.inflight = (async () => {
      await prev;
      await write;
      this.done(chunk, at, bufs, n);
    })();
    this.inflight.catch(noop); // observed by the next add() or drain()
  }
}
