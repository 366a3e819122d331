// Compiles `format` schemas for the llama.cpp backend without blocking the daemon: the compiler
// (json-schema.ts) runs in one worker thread, started on first use and unref'd; a schema that
// takes longer than COMPILE_TIMEOUT_MS is refused with a 400 and the worker replaced. Where the
// worker's file is not there (the sources run through tsx), the compile runs inline.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { EngineError, INVALID_SCHEMA_PREFIX } from "../errors.js";
import type { FormatReply, FormatRequest } from "./format-worker.js";
import type { StructuredOutput } from "../backend.js";
import { compileLlamaFormat } from "./json-schema.js";
import type { GrammarSpec } from "./protocol.js";

const COMPILE_TIMEOUT_MS = 5_000;
const WORKER = fileURLToPath(new URL("./format-worker.js", import.meta.url));

interface Pending {
  resolve: (g: GrammarSpec) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class FormatCompiler {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  compile(format: StructuredOutput): Promise<GrammarSpec> | GrammarSpec {
    if (!existsSync(WORKER)) return compileLlamaFormat(format);
    const worker = this.start();
    const id = this.nextId++;
    return new Promise<GrammarSpec>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        // The worker may be stuck in this schema: replace it (the others' compiles fail too, once).
        this.stop(new EngineError("runner_failed", "the schema compiler was restarted"));
        reject(new EngineError("invalid_schema", `${INVALID_SCHEMA_PREFIX}the schema takes too long to compile; simplify it`));
      }, COMPILE_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, format } satisfies FormatRequest);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER);
    w.unref();
    w.on("message", (m: FormatReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if ("grammar" in m) p.resolve({ kind: "gbnf", grammar: m.grammar });
      else p.reject(m.error.invalidSchema ? new EngineError("invalid_schema", m.error.message) : new Error(m.error.message));
    });
    w.on("error", (err) => this.stop(err));
    w.on("exit", () => {
      if (this.worker === w) this.stop(new Error("the schema compiler stopped"));
    });
    this.worker = w;
    return w;
  }

  private stop(err: Error): void {
    const w = this.worker;
    this.worker = undefined;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
    void w?.terminate();
  }
}
