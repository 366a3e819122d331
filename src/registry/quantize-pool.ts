// Worker threads that encode quantize.ts's chunks: the daemon's event loop stays free while a
// model is quantized, and chunks are encoded on several cores at once. One core is left to the
// daemon and the models it serves. Without the compiled worker (tests run from src/ by tsx) the
// chunks are encoded inline.
import { existsSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { EncodeTarget } from "./ggml-encode.js";
import { encodeChunk, type EncodeJob, type EncodeReply } from "./quantize-worker.js";

const WORKER = fileURLToPath(new URL("./quantize-worker.js", import.meta.url));

interface Job {
  job: EncodeJob;
  resolve: (b: Buffer) => void;
  reject: (e: Error) => void;
}

export class EncodePool {
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, Job>();
  private readonly queue: Job[] = [];
  private nextId = 0;
  private failure: Error | undefined;
  /** Workers still to start: they start with the first chunk, so a file with nothing to encode starts none. */
  private toStart: number;
  /** Chunks worth keeping in flight: one per worker and one being read. */
  readonly depth: number;

  constructor(size = Math.max(1, Math.min(8, os.availableParallelism() - 1))) {
    this.toStart = existsSync(WORKER) ? size : 0;
    this.depth = this.toStart + 1;
  }

  private startWorkers(): void {
    for (; this.toStart > 0; this.toStart--) {
      const w = new Worker(WORKER);
      w.on("message", (m: EncodeReply) => this.done(w, m));
      w.on("error", (e) => this.fail(e));
      w.on("exit", (code) => {
        if (this.busy.has(w) || this.idle.includes(w)) this.fail(new Error(`the quantize worker stopped (exit code ${code})`));
      });
      this.idle.push(w);
    }
  }

  /** `floats` encoded as `type` (the array is handed to a worker: do not use it again). */
  encode(type: EncodeTarget, floats: Float32Array): Promise<Buffer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.depth === 1) {
      try {
        return Promise.resolve(encodeChunk(type, floats));
      } catch (e) {
        return Promise.reject(e as Error);
      }
    }
    this.startWorkers();
    return new Promise((resolve, reject) => {
      this.queue.push({ job: { id: this.nextId++, type, floats }, resolve, reject });
      this.dispatch();
    });
  }

  /** Stop the workers; jobs still waiting fail. */
  async close(): Promise<void> {
    this.toStart = 0;
    this.fail(new Error("quantization stopped"));
    const all = [...this.idle, ...this.busy.keys()];
    this.idle.length = 0;
    this.busy.clear();
    await Promise.all(all.map((w) => w.terminate()));
  }

  private dispatch(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const w = this.idle.pop()!;
      const j = this.queue.shift()!;
      this.busy.set(w, j);
      w.postMessage(j.job, [j.job.floats.buffer as ArrayBuffer]);
    }
  }

  private done(w: Worker, m: EncodeReply): void {
    const j = this.busy.get(w);
    if (!j) return;
    this.busy.delete(w);
    this.idle.push(w);
    if ("error" in m) j.reject(new Error(m.error));
    else j.resolve(Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength));
    this.dispatch();
  }

  private fail(e: Error): void {
    this.failure ??= e;
    for (const j of [...this.busy.values(), ...this.queue.splice(0)]) j.reject(this.failure);
    for (const w of this.busy.keys()) this.idle.push(w);
    this.busy.clear();
  }
}
