import os from "node:os";
// The scheduler with a fake backend: eviction, waiting, the load queue, keep-alive, reloads,
// memory-driven placement and shutdown, without any runner process.
import { afterEach, describe, expect, it } from "vitest";
import type { DeviceInfo, LoadedInfo, Runner, RunnerExit } from "../../src/backends/backend.js";
import { LlamaCppBackend } from "../../src/backends/llamacpp/backend.js";
import type { LoadOptions, LoadPlan } from "../../src/backends/llamacpp/protocol.js";
import { LLAMACPP_FEATURES, type RunnerProcess } from "../../src/backends/llamacpp/runner-process.js";
import { Backends } from "../../src/backends/registry.js";
import { loadConfig, type Config } from "../../src/config.js";
import { ApiError } from "../../src/daemon/errors.js";
import { createLogger } from "../../src/daemon/log.js";
import type { SchedulerObserver } from "../../src/daemon/metrics/observer.js";
import type { RunnerOptions } from "../../src/daemon/options.js";
import { QUEUE_FULL } from "../../src/daemon/scheduler/queue.js";
import { Scheduler, type Lease } from "../../src/daemon/scheduler/scheduler.js";
import type { GgufInfo } from "../../src/registry/gguf.js";
import type { ModelSpec } from "../../src/registry/model-spec.js";

const GiB = 1024 ** 3;

class FakeRunner implements Runner {
  readonly slots = 1;
  readonly features = LLAMACPP_FEATURES;
  closed = false;
  readonly budgets: number[] = [];
  setThreadBudget(threads: number) {
    this.budgets.push(threads);
  }
  private exit!: (e: RunnerExit) => void;
  readonly exited = new Promise<RunnerExit>((r) => (this.exit = r));
  constructor(readonly info: LoadedInfo, readonly path: string) {}
  async *generate() {}
  async embed() {
    return { embeddings: [], promptEvalCount: 0 };
  }
  async tokenize() {
    return [];
  }
  async detokenize() {
    return "";
  }
  async close() {
    this.closed = true;
    this.exit({ code: 0, signal: null, message: "closed" });
  }
  die() {
    this.exit({ code: null, signal: "SIGKILL", message: "llama runner process has terminated: signal: killed" });
  }
}

/** The real llama.cpp backend (planner, reload rule) with fake devices and runners. */
class FakeBackend extends LlamaCppBackend {
  readonly loads: Array<{ path: string; opts: LoadOptions; plan: LoadPlan }> = [];
  readonly runners: FakeRunner[] = [];
  ramBytes = 64 * GiB;
  gpus: DeviceInfo[] = [];
  /** Loads wait for this when set. */
  gate: Promise<void> | null = null;

  liveRunners(): FakeRunner[] {
    return this.runners.filter((r) => !r.closed);
  }

  override async devices(): Promise<DeviceInfo[]> {
    const used = this.liveRunners().reduce((a, r) => a + r.info.sizeBytes - r.info.vramBytes, 0);
    const cpu: DeviceInfo = { id: "cpu", kind: "cpu", name: "CPU", totalBytes: this.ramBytes, freeBytes: this.ramBytes - used };
    return [cpu, ...this.gpus];
  }

  override async start(path: string, opts: LoadOptions, plan: LoadPlan, signal: AbortSignal): Promise<RunnerProcess> {
    this.loads.push({ path, opts, plan });
    if (this.gate) {
      await Promise.race([this.gate, new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted"))))]);
    }
    const size = MODEL_BYTES.get(path) ?? GiB;
    const r = new FakeRunner({ contextLength: opts.numCtx, gpuLayers: plan.gpuLayers, sizeBytes: size, vramBytes: 0, threads: 2 }, path);
    this.runners.push(r);
    return r as unknown as RunnerProcess;
  }
}

const MODEL_BYTES = new Map<string, number>();

/** A llama-shaped GGUF header of `bytes` weights in 4 blocks (plus embeddings and output). */
function spec(name: string, bytes = GiB): ModelSpec {
  const path = `/models/${name}.gguf`;
  MODEL_BYTES.set(path, bytes);
  const block = Math.floor(bytes / 8);
  const gguf: GgufInfo = {
    version: 3,
    types: {},
    metadata: {
      "general.architecture": "llama",
      "llama.block_count": 4,
      "llama.embedding_length": 64,
      "llama.attention.head_count": 2,
      "llama.attention.head_count_kv": 1,
      "llama.context_length": 4096,
      "llama.vocab_size": 1024,
    },
    tensors: [
      { name: "token_embd.weight", type: 2, typeName: "Q4_0", dims: [], offset: 0, bytes: 2 * block },
      ...[0, 1, 2, 3].map((i) => ({ name: `blk.${i}.ffn_up.weight`, type: 2, typeName: "Q4_0", dims: [], offset: 0, bytes: block })),
      { name: "output.weight", type: 2, typeName: "Q4_0", dims: [], offset: 0, bytes: 2 * block },
    ],
    dataOffset: 0,
    fileSize: bytes,
  };
  return {
    shortName: `${name}:latest`,
    source: { kind: "gguf", path, adapters: [], gguf, facts: { contextLength: 4096, isEmbedding: false } },
  } as unknown as ModelSpec;
}

const runnerOpts = (o: Partial<RunnerOptions> = {}): RunnerOptions => ({ numCtx: 2048, numBatch: 512, numGpu: -1, numThread: 0, useMmap: undefined, ...o });

let scheduler: Scheduler | undefined;
function setup(env: Record<string, string> = {}, observer?: SchedulerObserver): { s: Scheduler; b: FakeBackend; config: Config } {
  const config = loadConfig({ OLLAMA_MODELS: "/tmp/none", ...env });
  const b = new FakeBackend({ debug: false, cpuOnly: true, config });
  const s = new Scheduler({ backends: new Backends([b]), config, log: createLogger(0, () => {}), ...(observer ? { observer } : {}) });
  scheduler = s;
  return { s, b, config };
}

afterEach(async () => {
  await scheduler?.shutdown();
  scheduler = undefined;
});

function acquire(s: Scheduler, m: ModelSpec, o: { keepAliveMs?: number; signal?: AbortSignal; runner?: Partial<RunnerOptions> } = {}): Promise<Lease> {
  return s.acquire({ spec: m, runner: runnerOpts(o.runner), keepAliveMs: o.keepAliveMs, signal: o.signal ?? new AbortController().signal });
}

const names = (s: Scheduler) => s.loaded().map((m) => m.spec.shortName).sort();
const tick = () => new Promise((r) => setTimeout(r, 0));
const settle = async () => {
  for (let i = 0; i < 20; i++) await tick();
};

describe("loading and eviction", () => {
  it("loads several models at once; a loaded model attaches without a new load", async () => {
    const { s, b } = setup();
    const a = spec("a");
    (await acquire(s, a)).release();
    (await acquire(s, spec("b"))).release();
    (await acquire(s, a)).release();
    expect(names(s)).toEqual(["a:latest", "b:latest"]);
    expect(b.loads.map((l) => l.path)).toEqual(["/models/a.gguf", "/models/b.gguf"]);
  });

  it("OLLAMA_MAX_LOADED_MODELS=0 sets no count: as many as the memory holds", async () => {
    const { s } = setup();
    for (const n of ["a", "b", "c", "d", "e"]) (await acquire(s, spec(n))).release();
    expect(names(s)).toHaveLength(5);
  });

  it("OLLAMA_MAX_LOADED_MODELS=1 unloads the idle model for the new one", async () => {
    const { s, b } = setup({ OLLAMA_MAX_LOADED_MODELS: "1" });
    (await acquire(s, spec("a"))).release();
    (await acquire(s, spec("b"))).release();
    expect(names(s)).toEqual(["b:latest"]);
    expect(b.runners[0]?.closed).toBe(true);
  });

  it("the least recently used idle runner goes first", async () => {
    const { s } = setup({ OLLAMA_MAX_LOADED_MODELS: "2" });
    const a = spec("a");
    (await acquire(s, a)).release();
    (await acquire(s, spec("b"))).release();
    await new Promise((r) => setTimeout(r, 5));
    (await acquire(s, a)).release(); // a is now the most recent
    (await acquire(s, spec("c"))).release();
    expect(names(s)).toEqual(["a:latest", "c:latest"]);
  });

  it("a busy runner is never evicted: the load waits until it is idle", async () => {
    const { s, b } = setup({ OLLAMA_MAX_LOADED_MODELS: "1" });
    const busy = await acquire(s, spec("a"));
    let loadedB = false;
    const pending = acquire(s, spec("b")).then((l) => ((loadedB = true), l));
    await settle();
    expect(loadedB).toBe(false);
    expect(b.runners[0]?.closed).toBe(false);
    expect(names(s)).toEqual(["a:latest"]);
    busy.release();
    (await pending).release();
    expect(names(s)).toEqual(["b:latest"]);
  });

  it("0 = decided by memory: a model that does not fit next to the loaded one evicts it", async () => {
    const { s, b } = setup();
    b.ramBytes = 10 * GiB;
    (await acquire(s, spec("a", 6 * GiB))).release();
    (await acquire(s, spec("b", 1 * GiB))).release(); // fits beside a
    expect(names(s)).toEqual(["a:latest", "b:latest"]);
    (await acquire(s, spec("c", 5 * GiB))).release(); // needs a's memory: a is the LRU
    expect(names(s)).toEqual(["b:latest", "c:latest"]);
  });

  it("memory: waits while the runner it needs to unload is busy", async () => {
    const { s, b } = setup();
    b.ramBytes = 10 * GiB;
    const busy = await acquire(s, spec("a", 6 * GiB));
    let done = false;
    const pending = acquire(s, spec("c", 5 * GiB)).then((l) => ((done = true), l));
    await settle();
    expect(done).toBe(false);
    busy.release();
    (await pending).release();
    expect(names(s)).toEqual(["c:latest"]);
  });

  it("a model larger than RAM with nothing to unload fails with Ollama's message", async () => {
    const { s, b } = setup();
    b.ramBytes = 2 * GiB;
    const err = await acquire(s, spec("huge", 4 * GiB)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(500);
    expect((err as ApiError).message).toMatch(/^model requires more system memory \(\d+\.\d GiB\) than is available \(2\.0 GiB\)$/);
    expect(b.loads).toHaveLength(0);
  });

  it("a runner that dies is forgotten and loaded again on the next request", async () => {
    const { s, b } = setup();
    const a = spec("a");
    (await acquire(s, a)).release();
    b.runners[0]?.die();
    await settle();
    expect(names(s)).toEqual([]);
    (await acquire(s, a)).release();
    expect(b.loads).toHaveLength(2);
  });
});

describe("GPU placement", () => {
  it("the memory plan's layers are what the backend is asked to load; CPU only means 0", async () => {
    const { s, b } = setup();
    (await acquire(s, spec("cpu"))).release();
    expect(b.loads[0]?.plan.gpuLayers).toBe(0);
    b.gpus = [{ id: "0", kind: "gpu", library: "cuda", name: "Fake GPU", totalBytes: 24 * GiB, freeBytes: 24 * GiB }];
    (await acquire(s, spec("gpu"))).release();
    expect(b.loads[1]?.plan).toMatchObject({ gpuLayers: 5, gpus: ["0"] }); // 4 blocks + output
    (await acquire(s, spec("half"), { runner: { numGpu: 2 } })).release();
    expect(b.loads[2]?.plan.gpuLayers).toBe(2);
  });

  it("with another model loaded, one that does not fit whole on the GPU evicts it first", async () => {
    const { s, b } = setup();
    b.gpus = [{ id: "0", kind: "gpu", library: "cuda", name: "Fake GPU", totalBytes: 8 * GiB, freeBytes: 8 * GiB }];
    (await acquire(s, spec("a", GiB))).release();
    b.gpus = [{ ...b.gpus[0]!, freeBytes: 2 * GiB }]; // a holds the rest
    (await acquire(s, spec("b", 4 * GiB))).release();
    expect(names(s)).toEqual(["b:latest"]);
  });
});

describe("the load queue", () => {
  it("overflow is 503 with Ollama's message; a waiter that goes away leaves room at once", async () => {
    const { s } = setup({ OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_MAX_QUEUE: "1" });
    const busy = await acquire(s, spec("a"));
    const b = acquire(s, spec("b")); // handled: waits for a
    const ac = new AbortController();
    const c = acquire(s, spec("c"), { signal: ac.signal }); // queued
    const d = acquire(s, spec("d"));
    await expect(d).rejects.toMatchObject({ status: 503, message: QUEUE_FULL });
    expect(QUEUE_FULL).toBe("server busy, please try again.  maximum pending requests exceeded");
    ac.abort();
    await expect(c).rejects.toMatchObject({ status: 499 });
    const e = acquire(s, spec("e")); // room again
    busy.release();
    (await b).release();
    (await e).release();
    expect(names(s)).toEqual(["e:latest"]);
  });

  it("a request waiting for room can be cancelled, and the queue moves on", async () => {
    const { s } = setup({ OLLAMA_MAX_LOADED_MODELS: "1" });
    const busy = await acquire(s, spec("a"));
    const ac = new AbortController();
    const b = acquire(s, spec("b"), { signal: ac.signal });
    await settle();
    ac.abort();
    await expect(b).rejects.toMatchObject({ status: 499 });
    const a2 = await acquire(s, spec("a")); // attaches to the loaded runner
    a2.release();
    busy.release();
    expect(names(s)).toEqual(["a:latest"]);
  });
});

describe("keep-alive", () => {
  it("0 unloads when the request ends; absent keeps the runner's duration", async () => {
    const { s } = setup();
    const a = spec("a");
    const l = await acquire(s, a, { keepAliveMs: 0 });
    expect(names(s)).toEqual(["a:latest"]);
    l.release();
    expect(names(s)).toEqual([]);

    (await acquire(s, a, { keepAliveMs: Infinity })).release();
    (await acquire(s, a)).release(); // absent: still forever
    const year = 365 * 86400e3;
    expect(s.loaded()[0]!.expiresAt.getTime()).toBeGreaterThan(Date.now() + 200 * year);
  });

  it("a fresh load uses OLLAMA_KEEP_ALIVE; a duration expires only once idle", async () => {
    const { s } = setup({ OLLAMA_KEEP_ALIVE: "50ms" });
    const a = spec("a");
    (await acquire(s, a)).release();
    expect(s.loaded()[0]!.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 50);
    const busy = await acquire(s, a); // stops the timer
    await new Promise((r) => setTimeout(r, 120));
    expect(names(s)).toEqual(["a:latest"]);
    busy.release(); // re-armed for 50 ms from now
    await new Promise((r) => setTimeout(r, 120));
    expect(names(s)).toEqual([]);
  });

  it("a request's keep_alive replaces the runner's; explicit expire unloads when idle", async () => {
    const { s } = setup();
    const a = spec("a");
    (await acquire(s, a, { keepAliveMs: 60_000 })).release();
    const held = await acquire(s, a);
    await s.expire(a);
    expect(names(s)).toEqual(["a:latest"]); // busy: goes when idle
    held.release();
    expect(names(s)).toEqual([]);
  });
});

describe("reload", () => {
  it("reloads on a runner option (num_ctx), not on an equal one or num_gpu -1", async () => {
    const { s, b } = setup();
    const a = spec("a");
    (await acquire(s, a, { runner: { numCtx: 2048 } })).release();
    (await acquire(s, a, { runner: { numCtx: 2048, numGpu: -1 } })).release();
    expect(b.loads).toHaveLength(1);
    (await acquire(s, a, { runner: { numCtx: 1024 } })).release();
    expect(b.loads).toHaveLength(2);
    expect(b.runners[0]?.closed).toBe(true);
    expect(s.loaded()[0]?.runner.info.contextLength).toBe(1024);
    // num_ctx above the training context is clamped: 8192 and 9000 both mean 4096
    (await acquire(s, a, { runner: { numCtx: 8192 } })).release();
    (await acquire(s, a, { runner: { numCtx: 9000 } })).release();
    expect(b.loads).toHaveLength(3);
  });

  it("a busy runner finishes before its reload", async () => {
    const { s, b } = setup();
    const a = spec("a");
    const busy = await acquire(s, a, { runner: { numCtx: 2048 } });
    let reloaded = false;
    const next = acquire(s, a, { runner: { numCtx: 1024 } }).then((l) => ((reloaded = true), l));
    await settle();
    expect(reloaded).toBe(false);
    expect(b.runners[0]?.closed).toBe(false);
    busy.release();
    (await next).release();
    expect(b.runners[0]?.closed).toBe(true);
  });
});

describe("shutdown", () => {
  it("refuses new requests, lets running ones finish within the grace period, unloads everything", async () => {
    const { s, b } = setup();
    const l = await acquire(s, spec("a"));
    const done = s.shutdown(10_000);
    await settle();
    await expect(acquire(s, spec("a"))).rejects.toMatchObject({ status: 503 });
    expect(b.runners[0]?.closed).toBe(false);
    l.release();
    await done;
    expect(b.runners[0]?.closed).toBe(true);
    expect(names(s)).toEqual([]);
  });

  it("the grace period is a bound", async () => {
    const { s, b } = setup();
    await acquire(s, spec("a")); // never released
    await s.shutdown(20);
    expect(b.runners[0]?.closed).toBe(true);
  });
});

describe("thread budgets", () => {
  it("busy CPU runners split the cores; one left alone gets them all back; num_thread is never changed", async () => {
    const { s, b } = setup();
    const cores = os.availableParallelism();
    const half = Math.max(1, Math.floor(cores / 2));
    const la = await acquire(s, spec("a"));
    const ra = b.runners[0]!;
    expect(ra.budgets.at(-1)).toBe(cores);
    const lb = await acquire(s, spec("b"));
    const rb = b.runners[1]!;
    expect(ra.budgets.at(-1)).toBe(half);
    expect(rb.budgets.at(-1)).toBe(half);
    lb.release();
    expect(ra.budgets.at(-1)).toBe(cores);
    const lc = await acquire(s, spec("c"), { runner: { numThread: 1 } });
    expect(b.runners[2]!.budgets).toEqual([]); // fixed by the request
    expect(ra.budgets.at(-1)).toBe(cores); // a fixed runner does not count either
    lc.release();
    la.release();
  });
});

describe("what the scheduler tells the metrics", () => {
  /** Every event as a line: "unloaded a:latest expired". */
  function recorder(): { events: string[]; observer: SchedulerObserver } {
    const events: string[] = [];
    const on = (kind: string) => (model: string, x?: unknown) => void events.push([kind, model, ...(typeof x === "string" ? [x] : [])].join(" "));
    return {
      events,
      observer: {
        acquired: (model, wait) => void events.push(`acquired ${model} ${wait === undefined ? "failed" : "ok"}`),
        loaded: on("loaded"),
        loadFailed: on("loadFailed"),
        unloaded: on("unloaded"),
        evicted: on("evicted"),
        crashed: on("crashed"),
      },
    };
  }

  it("says why each runner was unloaded: evictions by count or by memory", async () => {
    const { events, observer } = recorder();
    const { s, b } = setup({ OLLAMA_MAX_LOADED_MODELS: "2" }, observer);
    b.ramBytes = 10 * GiB;
    (await acquire(s, spec("a", 1 * GiB))).release();
    (await acquire(s, spec("b", 1 * GiB))).release();
    (await acquire(s, spec("c", 1 * GiB))).release(); // two loaded already: a (LRU) goes
    (await acquire(s, spec("d", 9 * GiB))).release(); // two loaded: b (LRU) goes; then d does not fit beside c
    expect(events.filter((e) => !e.startsWith("acquired"))).toEqual([
      "loaded a:latest",
      "loaded b:latest",
      "evicted a:latest max_loaded_models",
      "unloaded a:latest evicted",
      "loaded c:latest",
      "evicted b:latest max_loaded_models",
      "unloaded b:latest evicted",
      "evicted c:latest memory",
      "unloaded c:latest evicted",
      "loaded d:latest",
    ]);
  });

  it("... and expiry, keep_alive 0, a reload, a crash and shutdown", async () => {
    const { events, observer } = recorder();
    const { s, b } = setup({}, observer);
    // A reload asked for while the runner is busy happens when it goes idle: options_changed.
    const d = spec("d");
    const busy = await acquire(s, d);
    const other = acquire(s, d, { runner: { numCtx: 1024 } });
    await settle();
    busy.release();
    (await other).release();
    (await acquire(s, d, { runner: { numCtx: 1024 }, keepAliveMs: 0 })).release();
    await settle();
    (await acquire(s, d, { keepAliveMs: 5 })).release();
    await new Promise((r) => setTimeout(r, 30));
    await settle();
    (await acquire(s, d)).release();
    b.runners.at(-1)?.die();
    await settle();
    (await acquire(s, d)).release();
    await s.shutdown();
    expect(events.filter((e) => !e.startsWith("acquired"))).toEqual([
      "loaded d:latest",
      "unloaded d:latest options_changed",
      "loaded d:latest",
      "unloaded d:latest unload_requested",
      "loaded d:latest",
      "unloaded d:latest expired",
      "loaded d:latest",
      "crashed d:latest",
      "loaded d:latest",
      "unloaded d:latest shutdown",
    ]);
    expect(events.filter((e) => e.startsWith("acquired"))).toEqual(Array(6).fill("acquired d:latest ok"));
  });

  it("reports a request that got no runner", async () => {
    const { events, observer } = recorder();
    const { s, b } = setup({}, observer);
    b.ramBytes = 2 * GiB;
    await acquire(s, spec("huge", 4 * GiB)).catch(() => undefined);
    expect(events).toEqual(["acquired huge:latest failed"]);
  });
});
