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
// A download that fails for good (a final error from the registry, a digest mismatch, a full disk)
// removes the files it created; one that was cancelled, lost its lock or ran out of retries keeps
// them for the next pull, as does one that resumed files a killed process left (they are still good).
//
// Cooperation: one download per digest per process (later pulls attach to it), and a
// proper-lockfile lock on the blob path (the one Store.writeBlobStream takes) across processes; a
// process waiting for the lock reports the other's progress from its part files.
//
// Fetching the missing bytes (chunks, connections, retries, in-order writes) is blob-ranges.ts.
import { makeDirs } from "../fs/make-dirs.js";
import { promises as fs, constants as fsc } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { setMaxListeners } from "node:events";
import path from "node:path";
import lockfile from "proper-lockfile";
import { isAbort, RegistryError, RetriesExhaustedError, sleep, type RegistryClient } from "./client.js";
import type { Store } from "./store.js";
import { OrderedHasher, WorkerHasher, type Hasher } from "./blob-hasher.js";
import { RangeFetcher, type DownloadLog } from "./blob-ranges.js";
import { isNoSpace, noSpaceWhileWriting } from "./disk-space.js";
import {
  atomicWriteSmall,
  discardPartialFiles,
  fsyncDir,
  planParts,
  readPartStates,
  resumableParts,
  type DownloadTuning,
  type PartState,
} from "./blob-parts.js";

export { DEFAULT_TUNING, planParts, validateParts, type DownloadTuning, type PartState } from "./blob-parts.js";

export class DigestMismatchPullError extends Error {
  override name = "DigestMismatchPullError";
  constructor(want: string, got: string) {
    super(`digest mismatch, file must be downloaded again: want ${want}, got ${got}`);
  }
}

const errCode = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;

export interface BlobProgress {
  total: number;
  completed: number;
}

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
  private readonly ac = new AbortController();
  private refs = 0;
  private dirty = new Set<PartState>();
  private persisting: Promise<void> = Promise.resolve();
  private lockLost: Error | undefined;
  /** prepare() continued a partial download found on disk rather than starting one. */
  private resumed = false;

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
    private readonly log: DownloadLog,
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
    let parts = await resumableParts(this.store.blobsDir, this.partial, this.total);
    this.resumed = parts !== null;
    if (parts) {
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
    let timer: NodeJS.Timeout | undefined;
    let hasher: Hasher | undefined;
    try {
      await this.prepare();
      const fh = this.fh as FileHandle;
      hasher = this.total >= this.tuning.workerHashMin ? new WorkerHasher(this.partial, this.parts, this.total) : new OrderedHasher(fh, this.parts, this.total);
      hasher.kick(); // hash what a previous run left on disk while the rest downloads
      timer = setInterval(() => void this.persist().catch(() => undefined), this.tuning.persistIntervalMs);
      const todo = this.parts.filter((p) => p.Completed < p.Size);
      if (todo.length > 0) {
        const url = await this.client.resolveBlobUrl(this.digest, this.ac.signal);
        const ranges = new RangeFetcher({
          client: this.client,
          fh,
          hasher,
          total: this.total,
          hex: this.hex,
          tuning: this.tuning,
          log: this.log,
          signal: this.ac.signal,
          progress: this,
          dirty: this.dirty,
          lockLost: () => this.lockLost,
        });
        await ranges.run(todo, url);
      }
      const got = await hasher.finish();
      if (this.lockLost) throw new Error(`blob lock lost while downloading ${this.digest}: ${this.lockLost.message}`);
      if (got !== this.digest) throw new DigestMismatchPullError(this.digest, got);
      await fh.sync();
      clearInterval(timer);
      await this.persisting.catch(() => undefined);
      await this.closeFile();
      await fs.rename(this.partial, this.final);
      for (const p of this.parts) await fs.rm(this.partFile(p.N), { force: true });
      await fsyncDir(this.store.blobsDir);
    } catch (err) {
      clearInterval(timer);
      await hasher?.close().catch(() => undefined);
      const keep = this.keepAfter(err);
      if (keep && this.fh) {
        // what arrived is saved for the next attempt
        for (const p of this.parts) this.dirty.add(p);
        await this.persist().catch(() => undefined);
      }
      await this.persisting.catch(() => undefined);
      await this.closeFile();
      if (!keep) await discardPartialFiles(this.store.blobsDir, this.partial).catch(() => undefined);
      throw noSpaceWhileWriting(err, path.basename(this.partial));
    } finally {
      clearInterval(timer);
      await hasher?.close().catch(() => undefined);
    }
  }

  /** Whether the files of a download that failed with `err` are worth keeping for a resume. */
  private keepAfter(err: unknown): boolean {
    if (this.lockLost) return true; // another process may own them now
    if (isAbort(err, this.ac.signal) || err instanceof RetriesExhaustedError) return true;
    if (isNoSpace(err) || err instanceof DigestMismatchPullError) return false;
    return this.resumed && err instanceof RegistryError;
  }

  private async closeFile(): Promise<void> {
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close().catch(() => undefined);
  }
}
