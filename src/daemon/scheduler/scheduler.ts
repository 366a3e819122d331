// The scheduler owns every loaded runner (DESIGN.md §5, Ollama's server/sched.go):
//   - a request for a loaded model with the same runner options attaches at once (no queue);
//     the runner's slots then decide when it runs;
//   - anything else goes through the pending-load queue (one at a time, OLLAMA_MAX_QUEUE waiting,
//     else 503): reload when the backend says the placement differs, otherwise ask the backend
//     for a placement, make room by unloading idle local runners (least recently used first)
//     when OLLAMA_MAX_LOADED_MODELS or the placement says so, wait while every runner is busy,
//     then load;
//   - keep-alive: the request's keep_alive replaces the runner's duration, absent keeps it, a fresh
//     load uses OLLAMA_KEEP_ALIVE; the timer starts when the last request ends; 0 unloads then;
//   - a runner that dies is forgotten, so the next request loads it afresh.
// It names no engine: the backend that handles a model decides its key, placement and reloads.
import type { Backend, Placement, Runner, RunnerOptions } from "../../backends/backend.js";
import type { Backends } from "../../backends/registry.js";
import type { Config } from "../../config.js";
import type { ModelSpec } from "../../registry/model-spec.js";
import { ApiError, errorMessage } from "../errors.js";
import { debugEnabled, formatDurationMs, type Logger } from "../log.js";
import { NO_OBSERVER, type EvictionReason, type SchedulerObserver, type UnloadReason } from "../metrics/observer.js";
import { detached, noteModel, noteWait } from "../request-context.js";
import { humanBytes2 } from "../../backends/human-bytes.js";
import { canceled, LoadQueue } from "./queue.js";
import { threadBudgets } from "./threads.js";

export interface AcquireRequest {
  spec: ModelSpec;
  runner: RunnerOptions;
  /** Request keep_alive in ms (Infinity = forever); undefined keeps the runner's current one. */
  keepAliveMs: number | undefined;
  signal: AbortSignal;
}

export interface Lease {
  readonly runner: Runner;
  readonly spec: ModelSpec;
  release(): void;
}

export interface LoadedModel {
  spec: ModelSpec;
  runner: Runner;
  backend: string;
  placement: Placement;
  expiresAt: Date;
  /** Requests attached right now. */
  refCount: number;
}

interface Entry {
  key: string;
  spec: ModelSpec;
  backend: Backend;
  placement: Placement;
  runner: Runner;
  refCount: number;
  keepAliveMs: number;
  expiresAt: Date;
  timer: NodeJS.Timeout | null;
  lastUsed: number;
  /** The thread budget last given to the runner (threads.ts). */
  threadBudget?: number;
  /** Set when a reload waits for the runner to go idle: why it is unloaded then. */
  unloadReason?: UnloadReason;
}

const MAX_TIMER_MS = 2 ** 31 - 1;
/** What Ollama shows for keep_alive < 0: about 292 years ahead. */
const FOREVER_MS = 292 * 365.25 * 86400e3;

export class Scheduler {
  private readonly entries = new Map<string, Entry>();
  private readonly queue: LoadQueue;
  private waiters: Array<() => void> = [];
  private readonly closing = new AbortController();
  private readonly observer: SchedulerObserver;

  /** The daemon's log, for what a request does with its runner (services/debug-log.ts). */
  get log(): Logger {
    return this.deps.log;
  }

  constructor(private readonly deps: { backends: Backends; config: Config; log: Logger; observer?: SchedulerObserver }) {
    this.queue = new LoadQueue(deps.config.maxQueue);
    this.observer = deps.observer ?? NO_OBSERVER;
  }

  /** Lets each backend look at its devices or upstreams ahead of the first load. */
  warmUp(): void {
    for (const b of this.deps.backends.all) b.warmUp?.((m) => this.deps.log.info(m));
  }

  /** The backend that serves a model. */
  backendFor(spec: ModelSpec): Backend {
    return this.deps.backends.for(spec);
  }

  /** A lease on the request's model; how long it took is the request's queue wait. */
  async acquire(req: AcquireRequest): Promise<Lease> {
    const model = req.spec.shortName;
    noteModel(model);
    const t0 = performance.now();
    try {
      const lease = await this.lease(req);
      const waitMs = performance.now() - t0;
      noteWait(waitMs);
      this.observer.acquired(model, waitMs / 1000);
      return lease;
    } catch (err) {
      this.observer.acquired(model, undefined);
      throw err;
    }
  }

  private async lease(req: AcquireRequest): Promise<Lease> {
    if (this.closing.signal.aborted) throw shuttingDown();
    if (req.signal.aborted) throw canceled();
    const backend = this.backendFor(req.spec);
    const wanted = backend.want(req.spec, req.runner);
    const key = backend.modelKey(req.spec);
    const e = this.entries.get(key);
    if (e && !backend.needsReload(e.placement, wanted)) return this.attach(e, req);
    return this.queue.run(req.signal, () => this.process(req, backend, key, wanted));
  }

  /** The head of the load queue: reload, make room, load; returns the request's lease. */
  private async process(req: AcquireRequest, backend: Backend, key: string, wanted: unknown): Promise<Lease> {
    const { log } = this.deps;
    let reloading: Entry | null = null;
    for (;;) {
      if (this.closing.signal.aborted) throw shuttingDown();
      if (req.signal.aborted) throw canceled();
      const e = this.entries.get(key);
      if (e) {
        if (!backend.needsReload(e.placement, wanted)) return this.attach(e, req);
        // Runner options differ: unload it once idle, then load again.
        if (reloading !== e) log.info(`reloading ${e.spec.shortName}: runner options changed`);
        reloading = e;
        e.keepAliveMs = 0;
        e.unloadReason = "options_changed";
        if (e.refCount === 0) await this.unload(e, "options_changed");
        else await this.changed(req.signal);
        continue;
      }
      // Planned again each time round: memory changes while this request waits.
      const placement = await backend.plan(req.spec, wanted);
      const room = this.room(placement);
      if (room === "wait") {
        log.debug(`waiting for a busy runner to finish before loading ${req.spec.shortName}`);
        await this.changed(req.signal);
        continue;
      }
      if (room !== "ok") {
        log.info(`unloading ${room.victim.spec.shortName} to make room for ${req.spec.shortName}`, { reason: room.reason });
        this.observer.evicted(room.victim.spec.shortName, room.reason);
        await this.unload(room.victim, "evicted");
        continue;
      }
      if (placement.refusal) throw new ApiError("internal", placement.refusal);
      const entry = await this.load(req, backend, key, placement);
      return this.attach(entry, req);
    }
  }

  /** "ok", the runner to unload first and why, or "wait" when every local runner is busy. */
  private room(placement: Placement): "ok" | "wait" | { victim: Entry; reason: EvictionReason } {
    // A model that holds no memory here (a remote engine) never makes room.
    if (!placement.local) return "ok";
    const local = [...this.entries.values()].filter((e) => e.placement.local);
    if (local.length === 0) return "ok";
    const tooMany = local.length >= maxLoaded(this.deps.config);
    // With other models loaded the new one must fit entirely where it was asked to go.
    if (!tooMany && placement.fits) return "ok";
    let victim: Entry | null = null;
    for (const e of local) {
      if (e.refCount === 0 && (!victim || e.lastUsed < victim.lastUsed)) victim = e;
    }
    return victim ? { victim, reason: tooMany ? "max_loaded_models" : "memory" } : "wait";
  }

  private async load(req: AcquireRequest, backend: Backend, key: string, placement: Placement): Promise<Entry> {
    const { config, log } = this.deps;
    const { spec } = req;
    for (const w of placement.warnings ?? []) log.warn(`${spec.shortName}: ${w}`);
    log.info(`loading ${spec.shortName}`, { ...placement.describe, backend: backend.name });
    // OLLAMA_DEBUG: the whole placement (for llama.cpp the memory plan and the runner's options),
    // less the model's source (its GGUF header, already described by `show`)
    if (debugEnabled(log)) log.debug(`load plan for ${spec.shortName}`, { placement: { ...placement, source: undefined } });
    const loadStarted = performance.now();
    const signal = AbortSignal.any([req.signal, this.closing.signal]);
    let runner: Runner;
    try {
      // The runner outlives this request: it must not carry its id (request-context.ts).
      runner = await detached(() => backend.load(spec, placement, signal));
    } catch (err) {
      this.observer.loadFailed(spec.shortName);
      if (req.signal.aborted) throw canceled();
      throw new ApiError("internal", `failed to load model ${spec.shortName}: ${errorMessage(err)}`);
    }
    this.observer.loaded(spec.shortName, (performance.now() - loadStarted) / 1000);
    const info = runner.info;
    for (const w of info.warnings ?? []) log.warn(`${spec.shortName}: ${w}`);
    log.info(`loaded ${spec.shortName}`, {
      ctx: `${info.contextLength}x${runner.slots}`,
      threads: info.threads,
      gpu_layers: info.gpuLayers,
      size: humanBytes2(info.sizeBytes),
      vram: humanBytes2(info.vramBytes),
      kv: info.kvCacheTypeK ? `${info.kvCacheTypeK}/${info.kvCacheTypeV}` : undefined,
      flash_attention: info.flashAttention,
    });
    log.debug(`runner started for ${spec.shortName}`, { duration: formatDurationMs(performance.now() - loadStarted) });
    const entry: Entry = {
      key,
      spec,
      backend,
      placement,
      runner,
      refCount: 0,
      keepAliveMs: req.keepAliveMs ?? config.keepAliveMs,
      expiresAt: new Date(),
      timer: null,
      lastUsed: Date.now(),
    };
    this.entries.set(entry.key, entry);
    void detached(() =>
      runner.exited.then((exit) => {
        if (this.entries.get(entry.key) === entry) {
          log.warn(`${spec.shortName}: ${exit.message}`);
          this.observer.crashed(spec.shortName);
          this.forget(entry);
        }
      }),
    );
    return entry;
  }

  private attach(e: Entry, req: AcquireRequest): Lease {
    e.refCount++;
    if (e.refCount === 1) this.rebalanceThreads();
    e.lastUsed = Date.now();
    this.stopTimer(e);
    if (req.keepAliveMs !== undefined) e.keepAliveMs = req.keepAliveMs;
    let released = false;
    return {
      runner: e.runner,
      spec: e.spec,
      release: () => {
        if (released) return;
        released = true;
        e.refCount--;
        e.lastUsed = Date.now();
        if (e.refCount === 0) {
          this.idle(e);
          this.rebalanceThreads();
        }
        this.notify();
      },
    };
  }

  /** Splits the CPU between the runners busy right now (threads.ts). */
  private rebalanceThreads(): void {
    const entries = [...this.entries.values()];
    const budgets = threadBudgets(
      entries.map((e) => ({ busy: e.refCount > 0, cpuBound: e.placement.sharesCpu, fixed: false })),
    );
    entries.forEach((e, i) => {
      const budget = budgets[i];
      if (budget === undefined || budget === e.threadBudget) return;
      e.threadBudget = budget;
      e.runner.setThreadBudget?.(budget);
    });
  }

  /** Keep-alive: armed when the last request ends; only idle runners expire. */
  private idle(e: Entry): void {
    if (this.entries.get(e.key) !== e) return;
    if (e.keepAliveMs <= 0) {
      e.expiresAt = new Date();
      void this.unload(e, e.unloadReason ?? "unload_requested");
      return;
    }
    if (!Number.isFinite(e.keepAliveMs)) {
      e.expiresAt = new Date(Date.now() + FOREVER_MS);
      return;
    }
    e.expiresAt = new Date(Date.now() + e.keepAliveMs);
    this.arm(e);
  }

  /** Timers past ~24.8 days are chained (setTimeout cannot wait longer). Not part of the
   *  request that armed it (request-context.ts). */
  private arm(e: Entry): void {
    const left = e.expiresAt.getTime() - Date.now();
    e.timer = detached(() =>
      setTimeout(() => {
        e.timer = null;
        if (e.refCount > 0) return;
        if (e.expiresAt.getTime() > Date.now()) this.arm(e);
        else void this.unload(e, "expired");
      }, Math.max(0, Math.min(left, MAX_TIMER_MS))),
    );
    e.timer.unref();
  }

  private stopTimer(e: Entry): void {
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
  }

  /** Explicit unload (keep_alive 0 with an empty prompt, `ollamats stop`): now, or when idle. */
  async expire(spec: ModelSpec): Promise<void> {
    const e = this.entries.get(this.backendFor(spec).modelKey(spec));
    if (!e) return;
    e.keepAliveMs = 0;
    e.expiresAt = new Date();
    this.stopTimer(e);
    if (e.refCount === 0) await this.unload(e, "unload_requested");
  }

  private async unload(e: Entry, reason: UnloadReason): Promise<void> {
    if (this.entries.get(e.key) !== e) return;
    this.forget(e);
    this.observer.unloaded(e.spec.shortName, reason);
    // Its evaluated prompts are kept for the next time this model is loaded.
    await e.runner.close({ keepPromptCache: true });
    this.deps.log.info(`unloaded ${e.spec.shortName}`, { reason });
    this.notify();
  }

  private forget(e: Entry): void {
    this.stopTimer(e);
    if (this.entries.get(e.key) === e) this.entries.delete(e.key);
    this.rebalanceThreads();
    this.notify();
  }

  /** Resolves at the next change (a request ended, a runner went), or when the signal aborts. */
  private changed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        this.closing.signal.removeEventListener("abort", done);
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      this.closing.signal.addEventListener("abort", done, { once: true });
      this.waiters.push(done);
    });
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  loaded(): LoadedModel[] {
    return [...this.entries.values()].map((e) => ({
      spec: e.spec,
      runner: e.runner,
      backend: e.backend.name,
      placement: e.placement,
      expiresAt: e.expiresAt,
      refCount: e.refCount,
    }));
  }

  /** Requests waiting for a model to load, the one being loaded included. */
  get queueDepth(): number {
    return this.queue.length + (this.queue.active ? 1 : 0);
  }

  /** Requests attached to runners right now. */
  get activeRequests(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.refCount;
    return n;
  }

  /**
   * Graceful shutdown: refuse new requests and queued loads, let the running generations finish
   * (at most `graceMs`), then unload every runner.
   */
  async shutdown(graceMs = 0): Promise<void> {
    if (!this.closing.signal.aborted) {
      this.queue.close(shuttingDown());
      this.closing.abort();
      this.notify();
    }
    const deadline = Date.now() + graceMs;
    while (this.activeRequests > 0 && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    const all = [...this.entries.values()];
    for (const e of all) {
      this.forget(e);
      this.observer.unloaded(e.spec.shortName, "shutdown");
    }
    await Promise.all([...all.map((e) => e.runner.close()), ...this.deps.backends.all.map((b) => b.close?.())]);
  }
}

function shuttingDown(): ApiError {
  return new ApiError("shutting_down", "server is shutting down");
}

/**
 * OLLAMA_MAX_LOADED_MODELS; 0 leaves it to the placements alone (issue 3). Ollama's automatic
 * value is 3 per GPU instead, a guard against GPUs that misreport free memory, which our own
 * accounting of what each runner holds does not need.
 */
export function maxLoaded(config: Config): number {
  return config.maxLoadedModels > 0 ? config.maxLoadedModels : Infinity;
}
