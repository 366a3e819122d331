// Download of one blob in parallel ranged parts, resumable, verified before it becomes visible
// (Ollama's server/download.go, with the digest computed during the download).
//
// On disk, in Ollama's own format so either program can resume the other's download:
//   blobs/sha256-<hex>-partial      the data, preallocated (sparse) to the blob's size
//   blobs/sha256-<hex>-partial-<N>  {"N","Offset","Size","Completed"} per part
// `Completed` only ever counts bytes already written to the data file, so after a crash, a kill -9
// or a dropped connection the download continues from there. The bytes are hashed in order while
// they arrive: the part at the hash position is hashed straight from the network, the parts
// ahead of it are read back (from the page cache) once the position reaches them. The result is
// compared with the digest before the rename to `sha256-<hex>`, so a wrong blob is never visible.
//
// Cooperation: one download per digest per process (later pulls attach to it), and a
// proper-lockfile lock on the blob path (the one Store.writeBlobStream takes) across processes; a
// process waiting for the lock reports the other's progress from its part files.
import { makeDirs } from "../fs/make-dirs.js";
import { promises as fs, constants as fsc } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { setMaxListeners } from "node:events";
import lockfile from "proper-lockfile";
import { backoffDelay, isAbort, RegistryError, sleep, type RegistryClient } from "./client.js";
import type { Store } from "./store.js";
import { OrderedHasher, WorkerHasher, type Hasher } from "./blob-hasher.js";
import {
  atomicWriteSmall,
  discardPartialFiles,
  fsyncDir,
  planParts,
  readPartStates,
  validateParts,
  writeAll,
  type DownloadTuning,
  type PartState,
} from "./blob-parts.js";

export { DEFAULT_TUNING, planParts, validateParts, type DownloadTuning, type PartState } from "./blob-parts.js";

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

export class DigestMismatchPullError extends Error {
  override name = "DigestMismatchPullError";
  constructor(want: string, got: string) {
    super(`digest mismatch, file must be downloaded again: want ${want}, got ${got}`);
  }
}

const errCode = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;

/** Stall: undici's bodyTimeout/headersTimeout (no byte for 30 s); retried without using a try. */
function isStall(err: unknown): boolean {
  const c = errCode(err);
  return c === "UND_ERR_BODY_TIMEOUT" || c === "UND_ERR_HEADERS_TIMEOUT";
}

export interface BlobProgress {
  total: number;
  completed: number;
}

type Log = (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => void;

export class BlobDownload {
  readonly hex: string;
  readonly final: string;
  readonly partial: string;
  completed = 0;
  /** Bytes this download received from the network (including any later discarded). */
  transferred = 0;
  readonly done: Promise<void>;
  private parts: PartState[] = [];
  private fh: FileHandle | undefined;
  private hasher: Hasher | undefined;
  private readonly ac = new AbortController();
  private refs = 0;
  private dirty = new Set<PartState>();
  private persisting: Promise<void> = Promise.resolve();
  private lockLost: Error | undefined;

  /** True once the download was stopped (every follower left); a new pull starts another. */
  get stopped(): boolean {
    return this.ac.signal.aborted;
  }

  constructor(
    private readonly store: Store,
    private readonly client: RegistryClient,
    readonly digest: string,
    readonly total: number,
    private readonly tuning: DownloadTuning,
    private readonly log: Log,
  ) {
    this.hex = digest.slice(7);
    this.final = store.blobPath(digest);
    this.partial = `${this.final}-partial`;
    setMaxListeners(0, this.ac.signal); // one per part request and follower
    this.done = this.run();
    this.done.catch(() => undefined); // observed through wait()
  }

  private partFile(n: number): string {
    return `${this.partial}-${n}`;
  }

  /**
   * Follow the download, reporting progress every 60 ms as Ollama does. When every follower has
   * gone (its client disconnected), the download stops; what is on disk stays for a resume.
   */
  async wait(report: (p: BlobProgress) => void, signal?: AbortSignal): Promise<void> {
    this.refs++;
    const tick = setInterval(() => report({ total: this.total, completed: this.completed }), 60);
    let onAbort: (() => void) | undefined;
    try {
      report({ total: this.total, completed: this.completed });
      const aborted = new Promise<never>((_, reject) => {
        if (!signal) return;
        onAbort = () => reject(signal.reason ?? new Error("request canceled"));
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      });
      await Promise.race([this.done, aborted]);
      report({ total: this.total, completed: this.total });
    } finally {
      clearInterval(tick);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      if (--this.refs === 0) this.ac.abort(new Error("download canceled"));
    }
  }

  private async run(): Promise<void> {
    // Let the constructor return (and the first follower attach) before any I/O.
    await Promise.resolve();
    await makeDirs(this.store.blobsDir);
    const release = await this.lock();
    try {
      if ((await this.store.blobSize(this.digest)) !== null) {
        this.completed = this.total;
        return;
      }
      await this.download();
    } finally {
      await release().catch(() => undefined);
    }
  }

  /** The blob lock; while another process holds it, report its progress from the part files. */
  private async lock(): Promise<() => Promise<void>> {
    for (let waited = 0; ; waited++) {
      try {
        return await lockfile.lock(this.final, {
          realpath: false,
          retries: 0,
          onCompromised: (err) => {
            this.lockLost = err;
            this.ac.abort(err);
          },
        });
      } catch (e) {
        if (errCode(e) !== "ELOCKED") throw e;
      }
      if (waited === 0) this.log("info", `waiting for another download of ${this.hex.slice(0, 12)}`);
      const parts = await readPartStates(this.store.blobsDir, this.partial).catch(() => null);
      if (parts) this.completed = parts.reduce((n, p) => n + p.Completed, 0);
      await sleep(250, this.ac.signal);
    }
  }

  /** Existing part states when they describe this blob and the data file is intact, else fresh ones. */
  private async prepare(): Promise<void> {
    let parts: PartState[] | null = null;
    try {
      const st = await fs.stat(this.partial);
      if (st.isFile() && st.size === this.total) parts = validateParts(await readPartStates(this.store.blobsDir, this.partial), this.total);
    } catch {
      parts = null;
    }
    if (parts && parts.length > 0) {
      const have = parts.reduce((n, p) => n + p.Completed, 0);
      this.log("info", `resuming ${this.hex.slice(0, 12)} at ${have} of ${this.total} bytes`, { parts: parts.length });
    } else {
      await discardPartialFiles(this.store.blobsDir, this.partial);
      parts = planParts(this.total, this.tuning);
      for (const p of parts) await atomicWriteSmall(this.partFile(p.N), `${JSON.stringify(p)}\n`);
    }
    this.parts = parts;
    this.completed = parts.reduce((n, p) => n + p.Completed, 0);
    this.fh = await fs.open(this.partial, fsc.O_RDWR | fsc.O_CREAT, 0o644);
    if ((await this.fh.stat()).size !== this.total) await this.fh.truncate(this.total);
    if (parts.length > 0) {
      this.log("info", `downloading ${this.hex.slice(0, 12)} in ${parts.length} ${parts[0]?.Size} byte part(s)`);
    }
  }

  private persist(): Promise<void> {
    const batch = [...this.dirty];
    this.dirty.clear();
    if (batch.length === 0) return this.persisting;
    // one writer at a time, in order; each writes the newest values
    this.persisting = this.persisting.then(async () => {
      for (const p of batch) await atomicWriteSmall(this.partFile(p.N), `${JSON.stringify(p)}\n`);
    });
    return this.persisting;
  }

  private async download(): Promise<void> {
    await this.prepare();
    const fh = this.fh as FileHandle;
    const hasher: Hasher = this.total >= this.tuning.workerHashMin ? new WorkerHasher(this.partial, this.parts, this.total) : new OrderedHasher(fh, this.parts, this.total);
    this.hasher = hasher;
    hasher.kick(); // hash what a previous run left on disk while the rest downloads
    const timer = setInterval(() => void this.persist().catch(() => undefined), this.tuning.persistIntervalMs);
    let ok = false;
    try {
      const todo = this.parts.filter((p) => p.Completed < p.Size);
      if (todo.length > 0) {
        const url = await this.client.resolveBlobUrl(this.digest, this.ac.signal);
        await this.runParts(todo, url);
      }
      const got = await hasher.finish();
      if (this.lockLost) throw new Error(`blob lock lost while downloading ${this.digest}: ${this.lockLost.message}`);
      if (got !== this.digest) {
        clearInterval(timer);
        await this.persisting.catch(() => undefined);
        await fh.close().catch(() => undefined);
        this.fh = undefined;
        await discardPartialFiles(this.store.blobsDir, this.partial);
        throw new DigestMismatchPullError(this.digest, got);
      }
      await fh.sync();
      await fh.close();
      this.fh = undefined;
      clearInterval(timer);
      await this.persisting.catch(() => undefined);
      await fs.rename(this.partial, this.final);
      for (const p of this.parts) await fs.rm(this.partFile(p.N), { force: true });
      await fsyncDir(this.store.blobsDir);
      ok = true;
    } finally {
      clearInterval(timer);
      await hasher.close().catch(() => undefined);
      if (!ok && this.fh) {
        // keep what arrived for the next attempt
        for (const p of this.parts) this.dirty.add(p);
        await this.persist().catch(() => undefined);
      }
      await this.fh?.close().catch(() => undefined);
      this.fh = undefined;
    }
  }

  /**
   * The missing bytes as chunks in file order, fetched by at most maxParts connections that each
   * take the next chunk. Parts all running from their starts would finish together and leave
   * the hash to read nearly the whole blob at the end; chunks in order keep the hashed prefix
   * close behind the download.
   */
  private async runParts(todo: PartState[], url: URL): Promise<void> {
    const chunkSize = Math.min(Math.max(Math.floor(this.total / 256), this.tuning.minChunkSize), this.tuning.maxChunkSize);
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
    setMaxListeners(4 * this.tuning.maxParts + 16, inner.signal);
    const onOuter = () => inner.abort(this.ac.signal.reason);
    this.ac.signal.addEventListener("abort", onOuter, { once: true });
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
      for (let i = 0; i < n && running.length < this.tuning.maxParts && queue.length > 0; i++) running.push(worker());
    };
    spawn(this.tuning.initialConnections);
    let lastBytes = this.completed;
    let lastRate = 0;
    const ramp = setInterval(() => {
      const rate = this.completed - lastBytes;
      lastBytes = this.completed;
      if (queue.length === 0 || running.length >= this.tuning.maxParts) return clearInterval(ramp);
      if (lastRate === 0 || rate > lastRate * 1.15) spawn(Math.max(2, Math.floor(running.length / 2)));
      else return clearInterval(ramp);
      lastRate = rate;
    }, 1000);
    try {
      // workers started later join the list; wait until all of them have drained the queue
      for (let seen = 0; seen < running.length; seen = running.length) await Promise.all(running);
    } finally {
      clearInterval(ramp);
      this.ac.signal.removeEventListener("abort", onOuter);
    }
    if (first !== undefined) throw this.ac.signal.aborted ? (this.ac.signal.reason ?? first) : first;
  }

  private async runChunk(chunk: Chunk, url: URL, signal: AbortSignal): Promise<void> {
    let tries = 0;
    while (chunk.start + chunk.written < chunk.end) {
      const before = chunk.written;
      try {
        await this.fetchRange(chunk, url, signal);
      } catch (err) {
        if (isAbort(err, signal) || errCode(err) === "ENOSPC") throw err;
        if (this.lockLost) throw err;
        const status = (err as RegistryError).status;
        if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) throw err;
        const n = chunk.owner.part.N;
        if (isStall(err)) {
          this.log("info", `${this.hex.slice(0, 12)} part ${n} stalled; retrying`);
          continue;
        }
        // a connection that dropped after delivering bytes is not a failed try
        if (chunk.written > before) tries = 0;
        if (++tries >= this.tuning.maxRetries) throw new Error(`max retries exceeded: ${(err as Error).message}`);
        const wait = backoffDelay(this.client.backoffMs, tries - 1);
        this.log("info", `${this.hex.slice(0, 12)} part ${n} attempt ${tries} failed: ${(err as Error).message}, retrying in ${Math.round(wait)} ms`);
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
    if (this.syncing || this.completed - this.syncedAt < 128 << 20) return;
    this.syncing = true;
    const at = this.completed;
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
      this.dirty.add(t.part);
    }
  }

  private async fetchRange(chunk: Chunk, url: URL, signal: AbortSignal): Promise<void> {
    const fh = this.fh as FileHandle;
    const hasher = this.hasher as Hasher;
    const start = chunk.start + chunk.written;
    const end = chunk.end; // exclusive
    const res = await this.client.send("GET", url, { headers: { range: `bytes=${start}-${end - 1}` }, signal, auth: this.client.sameHost(url) });
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
        this.completed += n;
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
          this.transferred += buf.length;
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
