// Host side of a runner child process: implements Runner by forwarding over IPC.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type {
  EmbedResult,
  GenerateJob,
  LoadedInfo,
  LoadOptions,
  Runner,
  RunnerEvent,
  RunnerExit,
} from "../backend.js";
import { RunnerError } from "../backend.js";
import { AsyncQueue } from "../async-queue.js";
import type { ChildMessage, HostMessage } from "./protocol.js";

const STDERR_LINES = 20;

function childEntry(): { path: string; execArgv: string[] } {
  // Built code forks the compiled .js; under tsx/vitest the .ts source runs through tsx.
  const self = import.meta.url;
  if (self.endsWith(".ts")) {
    return { path: fileURLToPath(new URL("./runner-main.ts", self)), execArgv: ["--import", "tsx"] };
  }
  return { path: fileURLToPath(new URL("./runner-main.js", self)), execArgv: [] };
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

export class RunnerProcess implements Runner {
  readonly exited: Promise<RunnerExit>;
  info: LoadedInfo = { contextLength: 0, gpuLayers: 0, sizeBytes: 0, vramBytes: 0, threads: 0 };
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly streams = new Map<number, AsyncQueue<RunnerEvent>>();
  private readonly calls = new Map<number, Pending>();
  private readonly stderrTail: string[] = [];
  private exit: RunnerExit | null = null;
  private onLoaded: ((m: ChildMessage) => void) | null = null;

  constructor(readonly slots: number, debug: boolean) {
    const entry = childEntry();
    this.child = fork(entry.path, [], {
      execArgv: entry.execArgv,
      stdio: ["ignore", debug ? "inherit" : "ignore", "pipe", "ipc"],
      serialization: "json",
    });
    this.child.stderr?.setEncoding("utf8");
    this.child.stderr?.on("data", (chunk: string) => {
      if (debug) process.stderr.write(chunk);
      for (const line of chunk.split("\n")) if (line.trim()) this.stderrTail.push(line.trim());
      this.stderrTail.splice(0, Math.max(0, this.stderrTail.length - STDERR_LINES));
    });
    this.child.on("message", (m) => this.dispatch(m as ChildMessage));
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        const why = signal ? `signal: ${signal === "SIGKILL" ? "killed" : signal}` : `exit status ${code}`;
        const last = this.stderrTail.at(-1);
        this.exit = { code, signal, message: `llama runner process has terminated: ${why}${last ? `: ${last}` : ""}` };
        const err = new RunnerError(this.exit.message);
        for (const q of this.streams.values()) q.fail(err);
        for (const c of this.calls.values()) c.reject(err);
        this.streams.clear();
        this.calls.clear();
        this.onLoaded?.({ type: "load-error", message: this.exit.message });
        resolve(this.exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Loads the model in the child; rejects with the engine's message, or when aborted. */
  async load(modelPath: string, opts: LoadOptions, gpuLayers: number, signal: AbortSignal): Promise<void> {
    const reply = await new Promise<ChildMessage>((resolve) => {
      this.onLoaded = resolve;
      const onAbort = () => resolve({ type: "load-error", message: "timed out waiting for llama runner to start" });
      signal.addEventListener("abort", onAbort, { once: true });
      this.post({ type: "load", modelPath, opts, gpuLayers });
    });
    this.onLoaded = null;
    if (reply.type === "loaded") {
      this.info = reply.info;
      return;
    }
    this.child.kill("SIGKILL");
    throw new RunnerError(reply.type === "load-error" ? reply.message : "unexpected runner reply");
  }

  private post(msg: HostMessage): void {
    if (this.exit || !this.child.connected) throw new RunnerError(this.exit?.message ?? "llama runner process is not running");
    this.child.send(msg);
  }

  private dispatch(m: ChildMessage): void {
    switch (m.type) {
      case "loaded":
      case "load-error":
        this.onLoaded?.(m);
        return;
      case "text":
        this.streams.get(m.id)?.push({ type: "text", text: m.text });
        return;
      case "done": {
        const q = this.streams.get(m.id);
        this.streams.delete(m.id);
        const { id: _id, ...stats } = m;
        q?.push(stats);
        q?.end();
        return;
      }
      case "result":
        this.calls.get(m.id)?.resolve(m.value);
        this.calls.delete(m.id);
        return;
      case "error": {
        const err = new RunnerError(m.message);
        this.streams.get(m.id)?.fail(err);
        this.streams.delete(m.id);
        this.calls.get(m.id)?.reject(err);
        this.calls.delete(m.id);
        return;
      }
    }
  }

  async *generate(job: GenerateJob, signal: AbortSignal): AsyncIterable<RunnerEvent> {
    const id = this.nextId++;
    const q = new AsyncQueue<RunnerEvent>();
    this.streams.set(id, q);
    const onAbort = () => {
      this.streams.delete(id);
      q.end();
      if (!this.exit) this.child.send({ type: "abort", id } satisfies HostMessage);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      this.post({ type: "generate", id, job });
      yield* q;
    } finally {
      signal.removeEventListener("abort", onAbort);
      // A consumer that stopped early (client gone) frees the slot in the child.
      if (this.streams.delete(id) && !this.exit) this.child.send({ type: "abort", id } satisfies HostMessage);
    }
  }

  private call<T>(msg: (id: number) => HostMessage): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      try {
        this.post(msg(id));
      } catch (err) {
        this.calls.delete(id);
        reject(err as Error);
      }
    });
  }

  embed(inputs: string[]): Promise<EmbedResult> {
    return this.call((id) => ({ type: "embed", id, inputs }));
  }
  tokenize(text: string): Promise<number[]> {
    return this.call((id) => ({ type: "tokenize", id, text }));
  }
  detokenize(tokens: number[]): Promise<string> {
    return this.call((id) => ({ type: "detokenize", id, tokens }));
  }

  async close(): Promise<void> {
    if (this.exit) return;
    try {
      this.child.send({ type: "close" } satisfies HostMessage);
    } catch {
      // already gone
    }
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await this.exited;
    clearTimeout(timer);
  }
}
