// The scheduler owns every loaded runner: it loads on demand (one load at a time), attaches
// requests to loaded runners, reloads when runner options differ, unloads on keep-alive expiry,
// evicts the least recently used idle runner when the loaded-model limit is reached, and
// forgets a runner that died so the next request loads it afresh.
import type { Backend, LoadOptions, Runner } from "../../backends/backend.js";
import type { Config } from "../../config.js";
import type { ModelSpec } from "../../registry/model-spec.js";
import { ApiError } from "../errors.js";
import type { Logger } from "../log.js";
import type { RunnerOptions } from "../options.js";

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
  opts: LoadOptions;
  expiresAt: Date;
}

interface Entry {
  key: string;
  spec: ModelSpec;
  opts: LoadOptions;
  runner: Runner | null;
  loading: Promise<Runner> | null;
  refCount: number;
  keepAliveMs: number;
  expiresAt: Date;
  timer: NodeJS.Timeout | null;
  lastUsed: number;
}

const FOREVER = new Date(Date.now() + 292 * 365.25 * 86400e3); // what Ollama shows for keep_alive < 0

export class Scheduler {
  private readonly entries = new Map<string, Entry>();
  private loadChain: Promise<unknown> = Promise.resolve();
  private pending = 0;
  private waiters: Array<() => void> = [];

  constructor(private readonly deps: { backend: Backend; config: Config; log: Logger }) {}

  /** Load options of a request: runner options plus the daemon-wide ones. */
  loadOptions(spec: ModelSpec, r: RunnerOptions): LoadOptions {
    const c = this.deps.config;
    const train = spec.facts.contextLength ?? r.numCtx;
    return {
      numCtx: Math.max(4, Math.min(r.numCtx, train)),
      numBatch: r.numBatch,
      numGpu: r.numGpu,
      numThread: r.numThread,
      useMmap: r.useMmap,
      slots: spec.facts.isEmbedding ? 1 : Math.max(1, c.numParallel),
      flashAttention: c.flashAttention,
      kvCacheTypeK: c.kvCacheTypeK,
      kvCacheTypeV: c.kvCacheTypeV,
      embedding: spec.facts.isEmbedding,
    };
  }

  async acquire(req: AcquireRequest): Promise<Lease> {
    const opts = this.loadOptions(req.spec, req.runner);
    const key = req.spec.modelPath;
    for (;;) {
      if (req.signal.aborted) throw new ApiError(499, "request canceled");
      const e = this.entries.get(key);
      if (e?.loading) {
        await e.loading.catch(() => undefined);
        continue;
      }
      if (e?.runner && !needsReload(e.opts, opts)) return this.attach(e, req);
      if (e) {
        // Options differ: unload once idle, then load with the new ones.
        e.keepAliveMs = 0;
        if (e.refCount === 0) await this.unload(e);
        else await this.changed();
        continue;
      }
      await this.admit(req.signal, () => this.load(key, req, opts));
    }
  }

  /** Loads queue behind each other; at most OLLAMA_MAX_QUEUE may wait. */
  private async admit(signal: AbortSignal, load: () => Promise<void>): Promise<void> {
    if (this.pending >= this.deps.config.maxQueue) {
      throw new ApiError(503, "server busy, please try again.  maximum pending requests exceeded");
    }
    this.pending++;
    const run = this.loadChain.then(async () => {
      this.pending--;
      if (!signal.aborted) await load();
    });
    this.loadChain = run.catch(() => undefined);
    await run;
  }

  private async load(key: string, req: AcquireRequest, opts: LoadOptions): Promise<void> {
    if (this.entries.has(key)) return; // another request loaded it while we queued
    await this.makeRoom();
    const { backend, config, log } = this.deps;
    const entry: Entry = {
      key,
      spec: req.spec,
      opts,
      runner: null,
      loading: null,
      refCount: 0,
      keepAliveMs: req.keepAliveMs ?? config.keepAliveMs,
      expiresAt: new Date(),
      timer: null,
      lastUsed: Date.now(),
    };
    const timeout = Number.isFinite(config.loadTimeoutMs) ? AbortSignal.timeout(config.loadTimeoutMs) : new AbortController().signal;
    const gpuLayers = opts.numGpu >= 0 ? opts.numGpu : 0; // CPU-only until the memory planner places layers
    entry.loading = backend.load(req.spec.modelPath, opts, { gpuLayers }, timeout);
    this.entries.set(key, entry);
    try {
      const runner = await entry.loading;
      entry.runner = runner;
      log.info(`loaded ${req.spec.shortName} (ctx ${runner.info.contextLength} x ${opts.slots}, ${runner.info.threads} threads)`);
      void runner.exited.then((exit) => {
        if (this.entries.get(key)?.runner === runner) {
          log.warn(`${req.spec.shortName}: ${exit.message}`);
          this.forget(entry);
        }
      });
    } catch (err) {
      this.forget(entry);
      throw new ApiError(500, `failed to load model ${req.spec.shortName}: ${(err as Error).message}`);
    } finally {
      entry.loading = null;
    }
  }

  private attach(e: Entry, req: AcquireRequest): Lease {
    e.refCount++;
    if (e.timer) clearTimeout(e.timer);
    e.timer = null;
    if (req.keepAliveMs !== undefined) e.keepAliveMs = req.keepAliveMs;
    const runner = e.runner as Runner;
    let released = false;
    return {
      runner,
      spec: e.spec,
      release: () => {
        if (released) return;
        released = true;
        e.refCount--;
        e.lastUsed = Date.now();
        if (e.refCount === 0) this.idle(e);
        this.notify();
      },
    };
  }

  /** Keep-alive: reset when the last request ends; only idle runners expire. */
  private idle(e: Entry): void {
    if (e.keepAliveMs <= 0) {
      e.expiresAt = new Date();
      void this.unload(e);
      return;
    }
    if (!Number.isFinite(e.keepAliveMs)) {
      e.expiresAt = FOREVER;
      return;
    }
    e.expiresAt = new Date(Date.now() + e.keepAliveMs);
    e.timer = setTimeout(() => void this.unload(e), Math.min(e.keepAliveMs, 2 ** 31 - 1));
    e.timer.unref();
  }

  private async makeRoom(): Promise<void> {
    const max = this.deps.config.maxLoadedModels > 0 ? this.deps.config.maxLoadedModels : 3;
    while (this.entries.size >= max) {
      const idle = [...this.entries.values()].filter((e) => e.refCount === 0 && e.runner);
      idle.sort((a, b) => a.lastUsed - b.lastUsed);
      const victim = idle[0];
      if (victim) await this.unload(victim);
      else await this.changed();
    }
  }

  /** Explicit unload (keep_alive 0 with an empty prompt, `ollamats stop`). */
  async expire(spec: ModelSpec): Promise<void> {
    const e = this.entries.get(spec.modelPath);
    if (!e) return;
    e.keepAliveMs = 0;
    e.expiresAt = new Date();
    if (e.refCount === 0 && e.runner) await this.unload(e);
  }

  private async unload(e: Entry): Promise<void> {
    if (this.entries.get(e.key) !== e) return;
    this.forget(e);
    await e.runner?.close();
    this.deps.log.info(`unloaded ${e.spec.shortName}`);
    this.notify();
  }

  private forget(e: Entry): void {
    if (e.timer) clearTimeout(e.timer);
    if (this.entries.get(e.key) === e) this.entries.delete(e.key);
    this.notify();
  }

  private changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private notify(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  loaded(): LoadedModel[] {
    const out: LoadedModel[] = [];
    for (const e of this.entries.values()) {
      if (e.runner) out.push({ spec: e.spec, runner: e.runner, opts: e.opts, expiresAt: e.expiresAt });
    }
    return out;
  }

  async shutdown(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => e.runner?.close()));
  }
}

function needsReload(a: LoadOptions, b: LoadOptions): boolean {
  return (
    a.numCtx !== b.numCtx ||
    a.numBatch !== b.numBatch ||
    (b.numGpu >= 0 && a.numGpu !== b.numGpu) ||
    a.numThread !== b.numThread ||
    (b.useMmap !== undefined && a.useMmap !== b.useMmap)
  );
}
