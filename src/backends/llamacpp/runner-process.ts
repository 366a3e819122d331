// Host side of a runner child process: implements Runner by forwarding over IPC.
import os from "node:os";
import { readdir, readFile } from "node:fs/promises";
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  isPromptJob,
  type EmbedOptions,
  type EmbedResult,
  type GenerateJob,
  type LoadedInfo,
  type RankResult,
  type Runner,
  type RunnerEvent,
  type RunnerExit,
  type RunnerFeatures,
  type RunnerStats,
} from "../backend.js";
import { EngineError, RunnerError } from "../errors.js";
import { AsyncQueue } from "../async-queue.js";
import { fitEmbedInputs, inputTokenLimit, isInputLimitError } from "./embed-inputs.js";
import { continueOrphanedSpares, signalTree } from "./process-tree.js";
import { readText } from "./cpu-limits.js";
import { SPARE_ARG, type ChildMessage, type GpuProbe, type GrammarSpec, type HostMessage, type LoadOptions, type LoadPlan, type RunnerJob, type RunnerLogLevel, type StateStore } from "./protocol.js";
import { runnerEnv } from "./runner-env.js";
import { LineSplitter, LineTooLongError } from "../../http/lines.js";

/** What node-llama-cpp 3.21.1 can do, and why not where it cannot. */
export const LLAMACPP_FEATURES: RunnerFeatures = {
  messages: false,
  tokenize: true,
  logprobs: true,
  images: { missing: "this engine version (node-llama-cpp 3.21.1) has no multimodal (vision) support" },
  embed: true,
  rank: { missing: "it needs a reranking model (a GGUF with pooling_type rank)" },
};

const STDERR_LINES = 20;
/** Errors of a send to a child whose channel has closed (it died or is exiting). */
const CHANNEL_GONE = new Set(["EPIPE", "ECONNRESET", "ERR_IPC_CHANNEL_CLOSED"]);

/** Where a runner's log lines go: the daemon's logger (so they share its format and request ids). */
export type RunnerLogSink = (level: RunnerLogLevel, msg: string, fields?: Record<string, unknown>) => void;

/** The longest runner log line relayed whole; a longer one (a crafted file's metadata printed by
 *  llama.cpp) is dropped with a note, so its output costs no more memory than this. */
const LOG_LINE_CHARS = 64 * 1024;
/** What of one line the stderr tail (an error's last lines) keeps. */
const TAIL_LINE_CHARS = 1000;

/** Calls `line` once per complete line of a text stream. */
function lines(line: (l: string) => void): (chunk: string) => void {
  const splitter = new LineSplitter(LOG_LINE_CHARS);
  return (chunk) => {
    let out: string[];
    try {
      out = splitter.push(chunk);
    } catch (err) {
      if (!(err instanceof LineTooLongError)) throw err;
      out = [`(a line of more than ${LOG_LINE_CHARS} characters, dropped)`];
    }
    for (const p of out) line(p.trimEnd());
  };
}

function childEntry(): { path: string; execArgv: string[] } {
  // Built code forks the compiled .js; under tsx/vitest the .ts source runs through tsx.
  const self = import.meta.url;
  if (self.endsWith(".ts")) {
    return { path: fileURLToPath(new URL("./runner-main.ts", self)), execArgv: ["--import", "tsx"] };
  }
  return { path: fileURLToPath(new URL("./runner-main.js", self)), execArgv: [] };
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/**
 * Runners run a few nice levels below the daemon. Their compute threads fill every core and spin
 * while they wait for each other, so at equal priority a token the runner has just produced
 * waited for the daemon to be scheduled (measured: ~6 ms more to the first token than calling
 * the engine directly); at lower priority the daemon preempts them at once, and the API stays
 * responsive while models compute. Alone on a machine, a runner still gets every idle cycle.
 */
const RUNNER_NICE_INCREMENT = 5;

function lowerPriority(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    os.setPriority(pid, Math.min(19, os.getPriority() + RUNNER_NICE_INCREMENT));
  } catch {
    // not allowed here (some containers): the runner keeps the daemon's priority
  }
}

/** Orphaned spares of a daemon that died while they were paused go on, and so end (Linux). */
export async function releaseOrphanedSpares(): Promise<number> {
  if (process.platform !== "linux") return 0;
  return continueOrphanedSpares(
    SPARE_ARG,
    /runner-main\.[jt]s$/,
    (p) => readFile(p, "utf8").catch(() => null),
    () => readdir("/proc").catch(() => []),
  );
}

export class RunnerProcess implements Runner {
  readonly exited: Promise<RunnerExit>;
  readonly features = LLAMACPP_FEATURES;
  /** Special tokens the engine adds around an embedding input (embed-inputs.ts). */
  embedAllowance = 0;
  info: LoadedInfo = { contextLength: 0, gpuLayers: 0, sizeBytes: 0, vramBytes: 0, threads: 0 };
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly streams = new Map<number, AsyncQueue<RunnerEvent>>();
  private readonly calls = new Map<number, Pending>();
  private readonly stderrTail: string[] = [];
  private exit: RunnerExit | null = null;
  private onLoaded: ((m: ChildMessage) => void) | null = null;
  private onProgress: ((progress: number) => void) | null = null;
  private wasIdle = true;
  private prepared = false;
  private stopped = false;
  /** Told when the runner goes from idle to having work in flight, and back (the spare yields). */
  onIdleChange: ((idle: boolean) => void) | null = null;

  /**
   * `env` adds to the daemon's environment (GPU pinning: CUDA_VISIBLE_DEVICES, …). A spare
   * (spare-runner.ts) is started before anyone knows its model; its slots are set by load(). With
   * `log`, the runner's own log lines go there, and under `debug` its stdout and stderr too, line
   * by line (without it, debug output is copied to the daemon's as it comes).
   */
  constructor(
    public slots: number,
    debug: boolean,
    env: Record<string, string> = {},
    spare = false,
    private readonly log?: RunnerLogSink,
  ) {
    const entry = childEntry();
    this.child = fork(entry.path, spare ? [SPARE_ARG] : [], {
      execArgv: entry.execArgv,
      env: runnerEnv(process.env, env),
      stdio: ["ignore", debug ? (log ? "pipe" : "inherit") : "ignore", "pipe", "ipc"],
      serialization: "json",
    });
    lowerPriority(this.child.pid);
    const pid = this.child.pid;
    const relay = (output: string) => lines((line) => log?.("debug", line, { runner: pid, output }));
    if (debug && log) {
      this.child.stdout?.setEncoding("utf8");
      this.child.stdout?.on("data", relay("stdout"));
    }
    const stderrLines = relay("stderr");
    this.child.stderr?.setEncoding("utf8");
    this.child.stderr?.on("data", (chunk: string) => {
      if (debug) {
        if (log) stderrLines(chunk);
        else process.stderr.write(chunk);
      }
      for (const line of chunk.split("\n")) if (line.trim()) this.stderrTail.push(line.trim().slice(0, TAIL_LINE_CHARS));
      this.stderrTail.splice(0, Math.max(0, this.stderrTail.length - STDERR_LINES));
    });
    this.child.on("message", (m) => this.dispatch(m as ChildMessage));
    // A send on a channel that just closed reports here; the exit handler does the rest. That
    // error is the daemon's own write to a runner that has died, not the runner's last words: it
    // stays out of the crash message (which would read "signal: killed: runner: write EPIPE").
    this.child.on("error", (err) => {
      if (!CHANNEL_GONE.has((err as NodeJS.ErrnoException).code ?? "")) this.stderrTail.push(`runner: ${err.message}`);
    });
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
        this.settle();
        this.onLoaded?.({ type: "load-error", message: this.exit.message });
        resolve(this.exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The child is running and reachable. */
  get alive(): boolean {
    return this.exit === null && this.child.connected;
  }

  /** No generation or call is in flight. */
  get idle(): boolean {
    return this.streams.size === 0 && this.calls.size === 0;
  }

  /** A spare whose binary is loaded (getLlama done): it uses no CPU until a load. */
  get ready(): boolean {
    return this.prepared;
  }

  /** After work was added or removed: tells onIdleChange when that changed idleness. */
  private settle(): void {
    const idle = this.idle;
    if (idle === this.wasIdle) return;
    this.wasIdle = idle;
    this.onIdleChange?.(idle);
  }

  /**
   * Pauses the process and its children (SIGSTOP), or lets them go on (SIGCONT): a spare that is
   * still starting gives the cores to a runner that computes (spare-runner.ts). Linux and macOS;
   * elsewhere nothing happens.
   */
  pause(stop: boolean): void {
    const pid = this.child.pid;
    if (pid === undefined || this.exit || stop === this.stopped) return;
    if (signalTree(pid, stop ? "SIGSTOP" : "SIGCONT", readText)) this.stopped = stop;
  }

  /** Whether this process keeps the daemon's event loop alive (a spare does not). */
  holdsDaemon(hold: boolean): void {
    const channel = this.child.channel as { ref?: () => void; unref?: () => void } | undefined;
    if (hold) {
      this.child.ref();
      channel?.ref?.();
    } else {
      this.child.unref();
      channel?.unref?.();
    }
  }

  /** Processes whose CPU the runner's thread budget leaves out (the spare, paused while it computes). */
  yielding(pids: number[]): void {
    this.tell({ type: "yielding", pids });
  }

  /** Has the child get node-llama-cpp's binary ready (getLlama) ahead of a load. */
  prepare(gpu: boolean): void {
    this.tell({ type: "prepare", gpu });
  }

  /**
   * Loads the model in the child; rejects with the engine's message, when aborted, or when the
   * load makes no progress for plan.loadTimeoutMs (Ollama's OLLAMA_LOAD_TIMEOUT stall rule). A
   * load that does not succeed kills the child.
   */
  async load(modelPath: string, opts: LoadOptions, plan: LoadPlan, signal: AbortSignal, states?: StateStore): Promise<void> {
    this.slots = opts.slots;
    let progress = 0;
    let stall: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const reply = await new Promise<ChildMessage>((resolve) => {
      this.onLoaded = resolve;
      const timeoutMs = plan.loadTimeoutMs;
      const arm = () => {
        if (timeoutMs === undefined || !Number.isFinite(timeoutMs)) return;
        clearTimeout(stall);
        stall = setTimeout(() => {
          const last = this.stderrTail.at(-1) ?? "";
          resolve({ type: "load-error", message: `timed out waiting for llama runner to start - progress ${progress.toFixed(2)} - ${last}` });
        }, timeoutMs);
      };
      this.onProgress = (p) => {
        if (p > progress) progress = p;
        arm();
      };
      onAbort = () => resolve({ type: "load-error", message: "timed out waiting for llama runner to start: context canceled" });
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      arm();
      try {
        this.post({ type: "load", modelPath, opts, gpuLayers: plan.gpuLayers, ...(plan.draftGpuLayers !== undefined ? { draftGpuLayers: plan.draftGpuLayers } : {}), ...(states ? { states } : {}) });
      } catch (err) {
        resolve({ type: "load-error", message: (err as Error).message });
      }
    });
    clearTimeout(stall);
    if (onAbort) signal.removeEventListener("abort", onAbort);
    this.onLoaded = null;
    this.onProgress = null;
    if (reply.type === "loaded") {
      this.info = reply.info;
      return;
    }
    this.child.kill("SIGKILL");
    throw new RunnerError(reply.type === "load-error" ? reply.message : "unexpected runner reply");
  }

  /** Asks node-llama-cpp in the child which GPUs it can use (the child keeps what it loaded
   *  for that, so a spare that probed is ready for a load on those GPUs). */
  async probe(): Promise<GpuProbe> {
    const reply = await new Promise<ChildMessage>((resolve) => {
      this.onLoaded = resolve;
      try {
        this.post({ type: "probe" });
      } catch (err) {
        resolve({ type: "load-error", message: (err as Error).message });
      }
    });
    this.onLoaded = null;
    if (reply.type === "probed") return reply.gpu;
    throw new RunnerError(reply.type === "load-error" ? reply.message : "unexpected runner reply");
  }

  private post(msg: HostMessage): void {
    if (this.exit || !this.child.connected) throw new RunnerError(this.exit?.message ?? "llama runner process is not running");
    this.child.send(msg);
  }

  /** Best effort (abort, close): nothing to do if the child is already gone. */
  private tell(msg: HostMessage): void {
    if (!this.exit && this.child.connected) this.child.send(msg, (err) => void err);
  }

  private dispatch(m: ChildMessage): void {
    switch (m.type) {
      case "loaded":
      case "load-error":
      case "probed":
        this.onLoaded?.(m);
        return;
      case "prepared":
        this.prepared = true;
        return;
      case "progress":
        this.onProgress?.(m.progress);
        return;
      case "text":
        this.streams.get(m.id)?.push({ type: "text", text: m.text, ...(m.logprobs ? { logprobs: m.logprobs } : {}) });
        return;
      case "done": {
        const q = this.streams.get(m.id);
        this.streams.delete(m.id);
        const { id: _id, ...stats } = m;
        q?.push(stats);
        q?.end();
        this.settle();
        return;
      }
      case "log":
        this.log?.(m.level, m.msg, { ...m.fields, runner: this.child.pid });
        return;
      case "result":
        this.calls.get(m.id)?.resolve(m.value);
        this.calls.delete(m.id);
        this.settle();
        return;
      case "error": {
        const err = m.code ? new EngineError(m.code, m.message) : new RunnerError(m.message);
        this.streams.get(m.id)?.fail(err);
        this.streams.delete(m.id);
        this.calls.get(m.id)?.reject(err);
        this.calls.delete(m.id);
        this.settle();
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
      this.tell({ type: "abort", id });
      this.settle();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      this.post({ type: "generate", id, job: runnerJob(job) });
      this.settle();
      yield* q;
    } finally {
      signal.removeEventListener("abort", onAbort);
      // A consumer that stopped early (client gone) frees the slot in the child.
      if (this.streams.delete(id)) this.tell({ type: "abort", id });
      this.settle();
    }
  }

  private call<T>(msg: (id: number) => HostMessage): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      try {
        this.post(msg(id));
        this.settle();
      } catch (err) {
        this.calls.delete(id);
        reject(err as Error);
      }
    });
  }

  rank(query: string, documents: string[], truncate: boolean): Promise<RankResult> {
    return this.call((id) => ({ type: "rank", id, query, documents, truncate }));
  }

  /** Embeds the inputs as they are; with opts, each is first fitted to the context. */
  async embed(inputs: string[], opts?: EmbedOptions): Promise<EmbedResult> {
    const texts = opts ? await fitEmbedInputs(this, inputs, inputTokenLimit(this.info.contextLength, this.embedAllowance), opts.truncate) : inputs;
    try {
      return await this.call((id) => ({ type: "embed", id, inputs: texts }));
    } catch (err) {
      if (opts && err instanceof EngineError && isInputLimitError(err.message)) throw new EngineError("input_too_long", "the input length exceeds the context length");
      throw err;
    }
  }
  tokenize(text: string, _signal?: AbortSignal, opts?: { prompt?: boolean }): Promise<number[]> {
    return this.call((id) => ({ type: "tokenize", id, text, ...(opts?.prompt ? { prompt: true } : {}) }));
  }
  detokenize(tokens: number[]): Promise<string> {
    return this.call((id) => ({ type: "detokenize", id, tokens }));
  }

  stats(): Promise<RunnerStats> {
    return this.call((id) => ({ type: "stats", id }));
  }

  setThreadBudget(threads: number): void {
    this.tell({ type: "threads", threads });
  }

  /** Ends a child that holds nothing worth a clean close (a spare): at once, whatever it is doing. */
  async terminate(): Promise<void> {
    this.pause(false); // a stopped process would not act on SIGTERM
    if (!this.exit) this.child.kill("SIGTERM");
    await this.exited;
  }

  async close(opts: { keepPromptCache?: boolean } = {}): Promise<void> {
    if (this.exit) return;
    const keep = opts.keepPromptCache === true;
    this.tell({ type: "close", keepPromptCache: keep });
    // Writing the slots' states (at most the state budget) may take a few seconds more.
    const timer = setTimeout(() => this.child.kill("SIGKILL"), keep ? 20_000 : 5000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** The child takes a rendered prompt, and `format` compiled into its grammar (json-schema.ts). */
function runnerJob(job: GenerateJob): RunnerJob {
  if (!isPromptJob(job)) throw new EngineError("unsupported", "this runner takes a rendered prompt, not messages");
  const { format, options: _defaultless, ...rest } = job;
  return { ...rest, ...(format ? { grammar: format.value as GrammarSpec } : {}) };
}
