// In-order SHA-256 of a blob's data file while its parts are written: on the main thread for
// small blobs, on a worker thread (reading behind the download) for big ones.
import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { Worker } from "node:worker_threads";
import { contiguousEnd, type PartState } from "./blob-parts.js";

export interface Hasher {
  offer(offset: number, buf: Uint8Array): void;
  kick(): void;
  finish(): Promise<string>;
  close(): Promise<void>;
}

/**
 * SHA-256 of the data file in order, fed while the parts are written: bytes at the hash position
 * come straight from `offer`; bytes ahead of it are read back once the position reaches them.
 */
export class OrderedHasher implements Hasher {
  private pos = 0;
  private busy = false;
  private failure: Error | undefined;
  private readonly hash = createHash("sha256");
  private waiters: Array<() => void> = [];
  private readBuf: Buffer | undefined;

  constructor(
    private readonly fh: FileHandle,
    private readonly parts: PartState[],
    private readonly total: number,
  ) {}

  /** `buf` has just been written at `offset` (and counted in its part's Completed). */
  offer(offset: number, buf: Uint8Array): void {
    if (!this.busy && offset === this.pos) {
      this.hash.update(buf);
      this.pos += buf.byteLength;
      this.notify();
    } else {
      this.kick();
    }
  }

  /** End of the written bytes contiguous from the hash position. */
  private available(): number {
    return contiguousEnd(this.parts, this.pos);
  }

  async close(): Promise<void> {
    // nothing to release
  }

  kick(): void {
    if (this.busy || this.failure || this.available() <= this.pos) return;
    this.busy = true;
    void this.catchUp();
  }

  private async catchUp(): Promise<void> {
    try {
      this.readBuf ??= Buffer.allocUnsafe(4 << 20);
      for (;;) {
        const avail = this.available();
        if (avail <= this.pos) break;
        const n = Math.min(this.readBuf.length, avail - this.pos);
        const { bytesRead } = await this.fh.read(this.readBuf, 0, n, this.pos);
        if (bytesRead <= 0) throw new Error(`short read at ${this.pos} while hashing`);
        this.hash.update(this.readBuf.subarray(0, bytesRead));
        this.pos += bytesRead;
      }
    } catch (e) {
      this.failure = e as Error;
    } finally {
      this.busy = false;
      this.notify();
    }
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolves with `sha256:<hex>` once every byte is written and hashed. */
  async finish(): Promise<string> {
    while (this.pos < this.total) {
      if (this.failure) throw this.failure;
      this.kick();
      if (!this.busy && this.pos < this.total) throw new Error(`internal: hash stopped at ${this.pos} of ${this.total}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
    if (this.failure) throw this.failure;
    return `sha256:${this.hash.digest("hex")}`;
  }
}


// The worker reads the data file behind the download (from the page cache) and hashes it in order
// up to the end it is told is written. Plain JS evaluated in the worker, so it runs the same
// from dist/ and under tsx.
const HASH_WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { createHash } = require("node:crypto");
const fd = fs.openSync(workerData.path, "r");
const h = createHash("sha256");
const buf = Buffer.allocUnsafe(4 << 20);
let pos = 0, avail = 0, finishing = false, done = false;
function pump() {
  try {
    while (pos < avail) {
      const n = fs.readSync(fd, buf, 0, Math.min(buf.length, avail - pos), pos);
      if (n <= 0) throw new Error("short read at " + pos + " while hashing");
      h.update(n === buf.length ? buf : buf.subarray(0, n));
      pos += n;
    }
    if (finishing && !done && pos >= workerData.total) {
      done = true;
      fs.closeSync(fd);
      parentPort.postMessage({ type: "digest", hex: h.digest("hex") });
    }
  } catch (e) {
    done = true;
    parentPort.postMessage({ type: "error", message: String(e && e.message || e) });
  }
}
parentPort.on("message", (m) => {
  if (m.type === "avail") avail = Math.max(avail, m.end);
  else if (m.type === "finish") finishing = true;
  pump();
});
`;

/** Hashing on a worker thread: the main thread only says how far the file is written. */
export class WorkerHasher implements Hasher {
  private readonly worker: Worker;
  private sent = -1;
  private result: Promise<string>;

  constructor(file: string, private readonly parts: PartState[], private readonly total: number) {
    this.worker = new Worker(HASH_WORKER, { eval: true, workerData: { path: file, total } });
    this.result = new Promise<string>((resolve, reject) => {
      this.worker.on("message", (m: { type: string; hex?: string; message?: string }) => {
        if (m.type === "digest") resolve(`sha256:${m.hex}`);
        else reject(new Error(m.message));
      });
      this.worker.on("error", reject);
      this.worker.on("exit", (code) => reject(new Error(`hash worker exited (${code})`)));
    });
    this.result.catch(() => undefined);
  }

  offer(): void {
    this.kick();
  }

  kick(): void {
    const end = contiguousEnd(this.parts, 0);
    // a message per MiB at most, and always for the end of the file
    if (end > this.sent && (end - this.sent >= 1 << 20 || end === this.total)) {
      this.sent = end;
      this.worker.postMessage({ type: "avail", end });
    }
  }

  async finish(): Promise<string> {
    this.sent = -1;
    this.kick();
    this.worker.postMessage({ type: "finish" });
    return this.result;
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
