// The scheduler with real runners on tiny generated models: several models, parallel slots,
// keep-alive, reloads, eviction, the load queue, disconnects, KV cache types, load timeout and
// graceful shutdown. Models are tiny, token counts small, and no assertion depends on timing.
import { writeGguf, kv as kvEntry } from "../../scripts/gguf-writer.js";
import { buildModel, DEFAULT_MODEL_DIR, makeTestModel } from "../../scripts/make-test-model.js";
import { mkdir, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LlamaCppBackend } from "../../src/backends/llamacpp/backend.js";
import type { GenerateJob, Runner, RunnerEvent } from "../../src/backends/backend.js";
import { childPids, createModelFromFile, eventually, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { testLoadOptions } from "../helpers/load-options.js";

interface Line {
  response?: string;
  done?: boolean;
  done_reason?: string;
  error?: string;
  eval_count?: number;
}

interface PsModel {
  name: string;
  size: number;
  size_vram: number;
  context_length: number;
  expires_at: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const YEAR_MS = 365 * 86400e3;

async function post(d: TestDaemon, route: string, body: object, signal?: AbortSignal): Promise<Response> {
  return fetch(`${d.url}${route}`, { method: "POST", body: JSON.stringify(body), signal });
}

async function generate(d: TestDaemon, body: object): Promise<Line & { status: number }> {
  const r = await post(d, "/api/generate", { stream: false, ...body });
  return { status: r.status, ...((await r.json()) as Line) };
}

/** An NDJSON stream read line by line, so a test decides when to read on or hang up. */
class Stream {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private buf = "";
  private readonly decoder = new TextDecoder();
  text = "";
  last: Line | undefined;
  constructor(readonly res: Response, private readonly ac: AbortController) {
    this.reader = (res.body as ReadableStream<Uint8Array>).getReader();
  }
  static async open(d: TestDaemon, body: object): Promise<Stream> {
    const ac = new AbortController();
    const res = await post(d, "/api/generate", { stream: true, ...body }, ac.signal);
    return new Stream(res, ac);
  }
  async next(): Promise<Line | undefined> {
    for (;;) {
      const nl = this.buf.indexOf("\n");
      if (nl >= 0) {
        const line = JSON.parse(this.buf.slice(0, nl)) as Line;
        this.buf = this.buf.slice(nl + 1);
        this.text += line.response ?? "";
        this.last = line;
        return line;
      }
      const { value, done } = await this.reader.read();
      if (done) return undefined;
      this.buf += this.decoder.decode(value, { stream: true });
    }
  }
  async rest(): Promise<Line | undefined> {
    while (await this.next());
    return this.last;
  }
  hangUp(): void {
    this.ac.abort();
  }
}

async function ps(d: TestDaemon): Promise<PsModel[]> {
  return ((await (await fetch(`${d.url}/api/ps`)).json()) as { models: PsModel[] }).models;
}

async function psNames(d: TestDaemon): Promise<string[]> {
  return (await ps(d)).map((m) => m.name).sort();
}

/** Starts a daemon and waits for its GPU probe (the probe child stays as the warm spare, which childPids leaves out). */
async function start(env: Record<string, string>): Promise<TestDaemon> {
  const d = await startDaemon(env);
  await eventually(async () => d.logs(), (l) => /GPU|device discovery/.test(l));
  return d;
}

async function setupModels(d: TestDaemon, names: Record<string, string>): Promise<void> {
  for (const [name, file] of Object.entries(names)) {
    const r = await createModelFromFile(d.url, name, file);
    expect(r.status).toBe(200);
  }
}

/** The tiny model with 4 heads of 16 (not a multiple of the 32-element ggml blocks). */
async function headDim16Model(): Promise<string> {
  const file = path.join(DEFAULT_MODEL_DIR, "tiny-hd16-Q4_0-s1.gguf");
  if (await stat(file).catch(() => null)) return file;
  const { kvs, tensors } = buildModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  const override: Record<string, number> = { "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": 16 };
  const patched = kvs.map((e) => (e.key in override ? kvEntry.u32(e.key, override[e.key] as number) : e));
  await mkdir(DEFAULT_MODEL_DIR, { recursive: true });
  await writeGguf(file, patched, tensors);
  return file;
}

let tiny: string;
let tiny2: string;
let tiny3: string;

beforeAll(async () => {
  tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  tiny2 = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 2 });
  tiny3 = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 3 });
}, 60_000);

describe("many models, parallel slots, keep-alive, reload (NUM_PARALLEL=4)", () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await start({ OLLAMA_NUM_PARALLEL: "4", OLLAMA_KEEP_ALIVE: "10m" });
    await setupModels(d, { a: tiny, b: tiny2 });
  }, 60_000);
  afterAll(async () => {
    await d?.stop();
  });

  it("two models are loaded at once; /api/ps reports what the runners allocated", async () => {
    expect((await generate(d, { model: "a", prompt: "" })).done_reason).toBe("load");
    expect((await generate(d, { model: "b", prompt: "", options: { num_ctx: 1024 } })).done_reason).toBe("load");
    const models = await ps(d);
    expect(models.map((m) => m.name).sort()).toEqual(["a:latest", "b:latest"]);
    const runners = await childPids(d.proc.pid as number);
    expect(runners).toHaveLength(2);
    // Runners compute a few nice levels below the daemon, so the daemon preempts them at once.
    const daemonNice = os.getPriority(d.proc.pid as number);
    for (const pid of runners) expect(os.getPriority(pid)).toBe(Math.min(19, daemonNice + 5));
    const b = models.find((m) => m.name === "b:latest") as PsModel;
    expect(b.context_length).toBe(1024);
    for (const m of models) {
      expect(m.size).toBeGreaterThan(100_000); // weights + 4 slots of KV cache
      expect(m.size_vram).toBe(0); // this machine has no GPU
      // a fresh load without keep_alive uses OLLAMA_KEEP_ALIVE (10m)
      const left = new Date(m.expires_at).getTime() - Date.now();
      expect(left).toBeGreaterThan(5 * 60_000);
      expect(left).toBeLessThanOrEqual(10 * 60_000);
    }
    expect(d.logs()).toMatch(/no GPU found, models run on the CPU/);
    expect(d.logs()).toMatch(/msg="loading a:latest" layers="0\/3 on GPU"/);
  });

  it("four concurrent streams each produce the text they produce alone (own seed and sampling)", async () => {
    const jobs = [0, 1, 2, 3].map((i) => ({
      model: "a",
      prompt: `Parallel request number ${i}`,
      options: { seed: 100 + i, temperature: [0.2, 0.8, 1.2, 0][i], top_k: [40, 20, 60, 1][i], num_predict: 16 },
    }));
    const alone: string[] = [];
    for (const j of jobs) alone.push((await generate(d, j)).response as string);
    expect(new Set(alone).size).toBeGreaterThan(1);
    const streams = await Promise.all(jobs.map((j) => Stream.open(d, j)));
    const ends = await Promise.all(streams.map((s) => s.rest()));
    expect(ends.map((e) => e?.done)).toEqual([true, true, true, true]);
    expect(streams.map((s) => s.text)).toEqual(alone);
  }, 60_000);

  it("a temperature change reuses the runner; a num_ctx change reloads it", async () => {
    const base = { model: "a", prompt: "Reload?", options: { num_predict: 2, num_ctx: 2048, temperature: 0.5 } };
    await generate(d, base);
    const pid = async () => (await childPids(d.proc.pid as number)).sort().join(",");
    const before = await pid();
    const ctx = async () => (await ps(d)).find((m) => m.name === "a:latest")?.context_length;
    expect(await ctx()).toBe(2048);
    await generate(d, { ...base, options: { ...base.options, temperature: 1.5, seed: 3, top_p: 0.5 } });
    expect(await pid()).toBe(before);
    await generate(d, { ...base, options: { ...base.options, num_ctx: 1024 } });
    expect(await ctx()).toBe(1024);
    expect(await pid()).not.toBe(before);
    expect(d.logs()).toMatch(/reloading a:latest: runner options changed/);
  });

  it("keep_alive: -1 is forever and an absent one keeps it; \"1s\" expires; 0 unloads at once", async () => {
    await generate(d, { model: "b", prompt: "", keep_alive: -1 });
    const exp = async () => new Date((await ps(d)).find((m) => m.name === "b:latest")?.expires_at ?? 0).getTime();
    expect(await exp()).toBeGreaterThan(Date.now() + 200 * YEAR_MS);
    await generate(d, { model: "b", prompt: "Hi", options: { num_predict: 2 } }); // absent: still forever
    expect(await exp()).toBeGreaterThan(Date.now() + 200 * YEAR_MS);

    await generate(d, { model: "b", prompt: "Hi", keep_alive: "1s", options: { num_predict: 2 } });
    expect(await exp()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(await eventually(() => psNames(d), (n) => !n.includes("b:latest"))).not.toContain("b:latest");

    const r = await generate(d, { model: "a", prompt: "Bye", keep_alive: 0, options: { num_predict: 2 } });
    expect(r.done).toBe(true);
    expect(await psNames(d)).not.toContain("a:latest"); // unloaded before the reply
  });
});

describe("eviction and the queue (MAX_LOADED_MODELS=1, MAX_QUEUE=1, NUM_PARALLEL=1)", () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await start({ OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_MAX_QUEUE: "1", OLLAMA_NUM_PARALLEL: "1" });
    await setupModels(d, { a: tiny, b: tiny2, c: tiny3 });
  }, 60_000);
  afterAll(async () => {
    await d?.stop();
  });

  it("loading a second model unloads the idle first one", async () => {
    await generate(d, { model: "a", prompt: "" });
    const [pidA] = await childPids(d.proc.pid as number);
    await generate(d, { model: "b", prompt: "" });
    expect(await psNames(d)).toEqual(["b:latest"]);
    expect(await childPids(d.proc.pid as number)).not.toContain(pidA);
  });

  it("a busy runner is never evicted: the other model waits, then loads", async () => {
    // A generation long enough (up to 10 x num_ctx tokens) to stay busy however fast the machine.
    const s = await Stream.open(d, { model: "b", prompt: "Keep going", options: { num_predict: 100000, seed: 1 } });
    await s.next();
    let waited = true;
    const other = generate(d, { model: "c", prompt: "Me next", options: { num_predict: 2 } }).then((r) => ((waited = false), r));
    for (let i = 0; i < 3; i++) {
      await sleep(200);
      expect(await psNames(d)).toEqual(["b:latest"]);
      expect(waited).toBe(true);
    }
    expect((await s.next())?.done).toBe(false); // still streaming: its runner was not taken away
    s.hangUp(); // now b is idle and can make room
    expect((await other).done).toBe(true);
    expect(await psNames(d)).toEqual(["c:latest"]);
  }, 30_000);

  it("queue overflow is 503 with Ollama's message; the others load in turn", async () => {
    const s = await Stream.open(d, { model: "c", prompt: "Hold on", options: { num_predict: 100000 } });
    await s.next(); // c is busy (for as long as the stream lasts), so nothing can be loaded
    // One request is handled (it waits for c to be idle), one waits in the queue, one is refused.
    const reqs = ["a", "b", "a"].map((model, i) => generate(d, { model, prompt: `${i}`, options: { num_predict: 2 } }));
    const first = await Promise.race(reqs);
    expect(first.status).toBe(503);
    expect(first.error).toBe("server busy, please try again.  maximum pending requests exceeded");
    expect((await s.next())?.done).toBe(false); // c is still busy
    s.hangUp(); // c goes idle: the handled request evicts it, then the queued one runs
    const all = await Promise.all(reqs);
    expect(all.filter((r) => r.status === 503)).toHaveLength(1);
    expect(all.filter((r) => r.status === 200 && r.done)).toHaveLength(2);
  }, 30_000);

  it("a client that hangs up frees its slot at once, also while it waits for one", async () => {
    await generate(d, { model: "a", prompt: "" });
    const first = await Stream.open(d, { model: "a", prompt: "Forever", options: { num_predict: 100000 } });
    await first.next();
    // The second request waits for the only slot (no reply line, not even headers, until it runs).
    const ac = new AbortController();
    const second = post(d, "/api/generate", { model: "a", prompt: "Waiting for the slot", options: { num_predict: 100000 } }, ac.signal);
    second.catch(() => undefined);
    await sleep(500);
    ac.abort(); // hangs up while it waits
    first.hangUp(); // hangs up while generating
    // With one slot, this would wait for ~40,000 abandoned tokens if either kept the slot.
    const next = await generate(d, { model: "a", prompt: "Next", options: { num_predict: 4 } });
    expect(next.done).toBe(true);
    expect(next.eval_count).toBeGreaterThan(0);
  }, 30_000);
});

describe("KV cache types and flash attention", () => {
  it("q8_0 on a head size of 32 turns flash attention on; a head size of 16 falls back to f16 with a warning (flash attention still automatic: on)", async () => {
    const d = await start({ OLLAMA_KV_CACHE_TYPE: "q8_0" });
    try {
      await setupModels(d, { a: tiny, h16: await headDim16Model() });
      expect((await generate(d, { model: "a", prompt: "Quantized cache", options: { num_predict: 4 } })).done).toBe(true);
      expect(d.logs()).toMatch(/msg="loaded a:latest".* kv=q8_0\/q8_0 flash_attention=true/);
      const r = await generate(d, { model: "h16", prompt: "Small heads", options: { num_predict: 4 } });
      expect(r.status).toBe(200);
      expect(r.done).toBe(true);
      expect(d.logs()).toMatch(/level=WARN msg="h16:latest: K cache type q8_0 needs a head size divisible by 32, the model's is 16; using f16"/);
      expect(d.logs()).toMatch(/msg="loaded h16:latest".* kv=f16\/f16 flash_attention=true/);
    } finally {
      await d.stop();
    }
  }, 60_000);

  it("an explicit quantized V cache with OLLAMA_FLASH_ATTENTION=0 is refused at start", async () => {
    const err = await startDaemon({ OLLAMA_KV_CACHE_TYPE_V: "q4_0", OLLAMA_FLASH_ATTENTION: "0" }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/OLLAMA_KV_CACHE_TYPE_V=q4_0 needs flash attention, but OLLAMA_FLASH_ATTENTION turns it off/);
  });
});

describe("load timeout and shutdown", () => {
  it("OLLAMA_LOAD_TIMEOUT kills a load that makes no progress", async () => {
    const d = await start({ OLLAMA_LOAD_TIMEOUT: "1ms" });
    try {
      await setupModels(d, { a: tiny });
      const r = await generate(d, { model: "a", prompt: "Hi" });
      expect(r.status).toBe(500);
      expect(r.error).toMatch(/^failed to load model a:latest: timed out waiting for llama runner to start - progress \d\.\d\d - /);
      expect(await eventually(() => childPids(d.proc.pid as number), (p) => p.length === 0)).toEqual([]);
      expect(await psNames(d)).toEqual([]);
    } finally {
      await d.stop();
    }
  }, 30_000);

  it("SIGTERM: running generations finish, every runner is unloaded, exit code 0", async () => {
    const d = await start({ OLLAMA_NUM_PARALLEL: "2" });
    await setupModels(d, { a: tiny, b: tiny2 });
    await generate(d, { model: "b", prompt: "" });
    const s = await Stream.open(d, { model: "a", prompt: "Finish me", options: { num_predict: 12 } });
    await s.next();
    const runners = await childPids(d.proc.pid as number);
    expect(runners).toHaveLength(2);
    const exited = new Promise<number | null>((r) => d.proc.once("exit", (code) => r(code)));
    d.proc.kill("SIGTERM");
    const end = await s.rest();
    expect(end?.done).toBe(true);
    expect(end?.error).toBeUndefined();
    expect(await exited).toBe(0);
    for (const pid of runners) expect(() => process.kill(pid, 0)).toThrow();
    expect(d.logs()).toMatch(/received SIGTERM, shutting down/);
    await d.stop();
  }, 30_000);
});

describe("the runner: longest-prefix slot choice and prompt reuse", () => {
  let runner: Runner;
  const opts = testLoadOptions({ slots: 2 });
  const job = (prompt: string): GenerateJob => ({
    prompt,
    sampling: { temperature: 0, topK: 40, topP: 0.9, minP: 0, seed: 1, repeatLastN: 64, repeatPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 },
    numPredict: 4,
    stop: [],
    wantContext: false,
  });
  async function run(prompt: string): Promise<Extract<RunnerEvent, { type: "done" }>> {
    for await (const ev of runner.generate(job(prompt), new AbortController().signal)) if (ev.type === "done") return ev;
    throw new Error("no done event");
  }

  beforeAll(async () => {
    runner = await new LlamaCppBackend({ debug: false, cpuOnly: true }).start(tiny, opts, { gpuLayers: 0 }, new AbortController().signal);
  }, 60_000);
  afterAll(async () => {
    await runner?.close();
  });

  it("a follow-up evaluates only its new tokens, on the slot that holds its prefix", async () => {
    const story = "Once upon a time a small robot lived in a quiet town by the sea, where it";
    const other = "Completely different words about mountains, rivers and many tall trees";
    const first = await run(story);
    expect(first.cachedTokens).toBe(0);
    const second = await run(other); // takes the other slot: the story's cache stays
    expect(second.cachedTokens).toBeLessThanOrEqual(1); // at most the BOS token
    const more = await run(`${story} painted houses`);
    expect(more.cachedTokens).toBeGreaterThanOrEqual(first.promptEvalCount - 2);
    const again = await run(`${other} and lakes`);
    expect(again.cachedTokens).toBeGreaterThanOrEqual(second.promptEvalCount - 2);
  });
});
