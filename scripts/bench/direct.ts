// The direct side's process (direct-child.ts): forked once per case, asked one thing at a time.
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Completion, DirectRequest, Swap } from "./direct-child.js";

/** Prompt tokens LlamaCompletion evaluates in a context of `contextSize`: it keeps its default
 *  context shift size (a tenth of the context) free and drops the start of a longer prompt. */
export function completionRoom(contextSize: number): number {
  return contextSize - Math.max(1, Math.floor(contextSize / 10));
}

const HERE = path.dirname(fileURLToPath(import.meta.url));

export class Direct {
  private waiting: { resolve: (v: unknown) => void; reject: (e: Error) => void } | null = null;
  private readonly exited: Promise<void>;
  private constructor(private readonly child: ChildProcess) {
    child.on("message", (m) => {
      const w = this.waiting;
      this.waiting = null;
      const r = m as { ok: true; value: unknown } | { ok: false; message: string };
      if (r.ok) w?.resolve(r.value);
      else w?.reject(new Error(`direct side: ${r.message}`));
    });
    this.exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        this.waiting?.reject(new Error(`direct side exited (${signal ?? code})`));
        resolve();
      }),
    );
  }

  static start(): Direct {
    const child = fork(path.join(HERE, "direct-child.ts"), [], { execArgv: ["--import", "tsx"], serialization: "json", stdio: ["ignore", "inherit", "inherit", "ipc"] });
    return new Direct(child);
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  private ask<T>(req: DirectRequest): Promise<T> {
    if (this.waiting) throw new Error("direct side: one request at a time");
    return new Promise<T>((resolve, reject) => {
      this.waiting = { resolve: resolve as (v: unknown) => void, reject };
      this.child.send(req);
    });
  }

  /** Loads the model and a context (one thread per core unless `threads`); returns loadModel +
   *  createContext in ms. */
  async open(modelPath: string, contextSize: number, threads?: number): Promise<number> {
    return (await this.ask<{ loadMs: number }>({ op: "open", modelPath, contextSize, threads })).loadMs;
  }
  complete(prompt: string, maxTokens: number): Promise<Completion> {
    return this.ask({ op: "complete", prompt, maxTokens });
  }
  /** A fresh prompt of at most `tokens` tokens (BOS included) under the open model's tokenizer. */
  fit(seed: number, tokens: number): Promise<{ prompt: string; tokens: number }> {
    return this.ask({ op: "fit", seed, tokens });
  }
  /** getLlama only, no model: what the daemon's spare runner has done before a load. */
  async prepare(): Promise<void> {
    await this.ask({ op: "prepare" });
  }
  swap(modelPath: string, contextSize: number): Promise<Swap> {
    return this.ask({ op: "swap", modelPath, contextSize });
  }
  async stop(): Promise<void> {
    await this.ask({ op: "close" }).catch(() => undefined);
    this.child.kill();
    await this.exited;
  }
}
