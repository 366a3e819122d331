// The warm spare runner (src/backends/llamacpp/spare-runner.ts) with the real daemon: a load
// takes the spare process, another one follows once the runners are idle, it is never a loaded
// model (ps, OLLAMA_MAX_LOADED_MODELS), a dead spare costs nothing, and it ends with the daemon.
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { statFields } from "../../src/backends/llamacpp/process-tree.js";
import { childPids, createModelFromFile, createTinyPair, eventually as eventuallyWithin, sparePids, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { Scrape } from "../helpers/prometheus.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function generate(d: TestDaemon, body: object): Promise<{ status: number; done_reason?: string; response?: string; error?: string }> {
  const r = await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ stream: false, ...body }) });
  return { status: r.status, ...((await r.json()) as object) };
}

async function psNames(d: TestDaemon): Promise<string[]> {
  const r = (await (await fetch(`${d.url}/api/ps`)).json()) as { models: Array<{ name: string }> };
  return r.models.map((m) => m.name).sort();
}

/** Spares start at a runner's pace: allow for a loaded machine. */
const eventually = <T>(read: () => Promise<T>, check: (v: T) => boolean, ms = 30_000) => eventuallyWithin(read, check, ms);

const spares = (d: TestDaemon) => sparePids(d.proc.pid as number);
const runners = (d: TestDaemon) => childPids(d.proc.pid as number);
const oneSpare = (p: number[]) => p.length === 1;

let tiny: string;
beforeAll(async () => {
  tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
}, 60_000);

describe("the warm spare runner (OLLAMA_MAX_LOADED_MODELS=1)", () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startDaemon({ OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m" });
    await createTinyPair(d.url);
  }, 60_000);
  afterAll(async () => {
    await d?.stop();
  });

  it("is started with the daemon, is no loaded model, and a load takes it", async () => {
    const [spare] = await eventually(() => spares(d), oneSpare);
    expect(spare).toBeGreaterThan(0);
    expect(await runners(d)).toEqual([]);
    expect(await psNames(d)).toEqual([]);

    expect((await generate(d, { model: "a", prompt: "" })).done_reason).toBe("load");
    // The model runs in the very process that was the spare.
    expect(await runners(d)).toEqual([spare]);
    expect(await psNames(d)).toEqual(["a:latest"]);
    // A new spare follows once the runner is idle.
    const [next] = await eventually(() => spares(d), oneSpare);
    expect(next).toBeDefined();
    expect(next).not.toBe(spare);
  }, 60_000);

  it("runners ask glibc for huge pages, and a loaded model's memory gets them where the kernel offers them", async () => {
    if (process.platform !== "linux") return;
    expect((await generate(d, { model: "a", prompt: "" })).status).toBe(200);
    const [runner] = await runners(d);
    const environ = (await readFile(`/proc/${runner}/environ`, "utf8")).split("\0");
    expect(environ).toContain("GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
    // THP mode `madvise` (or `always`): the model's buffers are backed by 2 MiB pages
    const thp = await readFile("/sys/kernel/mm/transparent_hugepage/enabled", "utf8").catch(() => "[never]");
    if (!/\[(madvise|always)\]/.test(thp)) return;
    const huge = /AnonHugePages:\s+(\d+) kB/.exec(await readFile(`/proc/${runner}/smaps_rollup`, "utf8"));
    expect(Number(huge?.[1])).toBeGreaterThanOrEqual(2048);
  }, 60_000);

  it("the load's warm-up evaluation leaves nothing behind: the first prompt after a load takes no token from a cache", async () => {
    const cached = async () => new Scrape(await (await fetch(`${d.url}/metrics`)).text()).value("ollamats_prompt_cached_tokens_total", { model: "a:latest" });
    expect((await generate(d, { model: "a", prompt: "", keep_alive: 0 })).status).toBe(200); // unloaded (a spare takes the next load)
    const before = await cached();
    // raw: the prompt starts with BOS, as the warm-up's tokens did
    const prompt = `warm-up check ${Date.now()}`;
    const first = await generate(d, { model: "a", prompt, raw: true, options: { num_predict: 2, temperature: 0 } });
    expect(first.status).toBe(200);
    expect(await cached()).toBe(before);
    // the same prompt again is taken from the slot: the counter does see cached tokens
    expect((await generate(d, { model: "a", prompt, raw: true, options: { num_predict: 2, temperature: 0 } })).status).toBe(200);
    expect(await cached()).toBeGreaterThan(before);
  }, 60_000);

  it("a model switch loads into the spare; the spare never counts as a loaded model", async () => {
    const [spare] = await eventually(() => spares(d), oneSpare);
    const r = await generate(d, { model: "b", prompt: "Hello", options: { num_predict: 3 } });
    expect(r.status).toBe(200);
    expect(r.response?.length).toBeGreaterThan(0);
    expect(await psNames(d)).toEqual(["b:latest"]);
    expect(await runners(d)).toEqual([spare]);
    expect(await eventually(() => spares(d), (p) => p.length === 1 && p[0] !== spare)).toHaveLength(1);
  }, 60_000);

  it("a spare killed while waiting is replaced by a fresh process at the next load", async () => {
    const [spare] = await eventually(() => spares(d), oneSpare);
    process.kill(spare!, "SIGKILL");
    await eventually(() => spares(d), (p) => p.length === 0);
    const r = await generate(d, { model: "a", prompt: "Still fine?", options: { num_predict: 3 } });
    expect(r.status).toBe(200);
    expect(r.response?.length).toBeGreaterThan(0);
    const now = await runners(d);
    expect(now).toHaveLength(1);
    expect(now).not.toContain(spare);
    expect(await eventually(() => spares(d), oneSpare)).toHaveLength(1);
    expect(d.proc.exitCode).toBeNull();
  }, 60_000);

  it("SIGTERM ends the spare with the runners; the daemon exits 0", async () => {
    const [spare] = await eventually(() => spares(d), oneSpare);
    const [runner] = await runners(d);
    const exited = new Promise<number | null>((r) => d.proc.once("exit", (code) => r(code)));
    d.proc.kill("SIGTERM");
    expect(await exited).toBe(0);
    for (const pid of [spare!, runner!]) {
      await eventually(
        async () => {
          try {
            process.kill(pid, 0);
            return true;
          } catch {
            return false;
          }
        },
        (alive) => !alive,
        10_000,
      );
      expect(() => process.kill(pid, 0)).toThrow();
    }
  }, 60_000);
});

/** The state letter of /proc/<pid>/stat (R, S, T …) and the process's CPU ticks. */
async function procState(pid: number): Promise<{ state: string; ticks: number }> {
  const f = statFields(await readFile(`/proc/${pid}/stat`, "utf8"));
  return { state: f[0]!, ticks: Number(f[11]) + Number(f[12]) };
}

describe.runIf(process.platform === "linux")("a spare still starting gives way to a runner that computes", () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startDaemon({ OLLAMA_KEEP_ALIVE: "10m" });
    expect((await createModelFromFile(d.url, "a", tiny)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await d?.stop();
  });

  it("is paused while a generation streams, and goes on once the runner is idle", async () => {
    const [first] = await eventually(() => spares(d), oneSpare);
    expect((await generate(d, { model: "a", prompt: "" })).done_reason).toBe("load");
    // The load took the spare; the next one starts once the runner has been idle a moment and
    // needs over a second to import node-llama-cpp and test its binary.
    const [starting] = await eventually(() => spares(d), (p) => p.length === 1 && p[0] !== first, 30_000);
    const ac = new AbortController();
    const r = await fetch(`${d.url}/api/generate`, {
      method: "POST",
      body: JSON.stringify({ model: "a", prompt: "Count on:", options: { num_predict: 100_000, num_ctx: 4096 } }),
      signal: ac.signal,
    });
    const reader = r.body!.getReader();
    await reader.read(); // the generation is under way
    const paused = await procState(starting!);
    expect(paused.state).toBe("T");
    await sleep(300);
    const later = await procState(starting!);
    expect(later.state).toBe("T");
    expect(later.ticks).toBe(paused.ticks); // stopped: no CPU at all
    ac.abort();
    await reader.cancel().catch(() => undefined);
    // Idle again: it goes on, and its start completes (its CPU grows, then it is no longer stopped).
    const resumed = await eventually(() => procState(starting!), (s) => s.state !== "T" && s.ticks > paused.ticks, 15_000);
    expect(resumed.state).not.toBe("T");
    // A load still finds it and runs in it.
    await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "a", keep_alive: 0, prompt: "" }) }).then((x) => x.text());
    await eventually(() => runners(d), (p) => p.length === 0);
    const again = await generate(d, { model: "a", prompt: "Hi", options: { num_predict: 3 } });
    expect(again.status).toBe(200);
    expect(await runners(d)).toEqual([starting]);
  }, 90_000);
});

describe("OLLAMATS_SPARE_RUNNER=0", () => {
  it("keeps no spare: the probe child ends, and loads start their own process", async () => {
    const d = await startDaemon({ OLLAMATS_SPARE_RUNNER: "0" });
    try {
      expect((await createModelFromFile(d.url, "a", tiny)).status).toBe(200);
      await eventually(async () => d.logs(), (l) => /GPU|device discovery/.test(l));
      expect(await eventually(() => spares(d), (p) => p.length === 0)).toEqual([]);
      expect((await generate(d, { model: "a", prompt: "" })).done_reason).toBe("load");
      expect(await runners(d)).toHaveLength(1);
      await sleep(1500); // past the spare's idle wait, had it been on
      expect(await spares(d)).toEqual([]);
    } finally {
      await d.stop();
    }
  }, 60_000);
});
