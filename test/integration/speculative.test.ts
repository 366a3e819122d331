// Speculative decoding against the real daemon and real runners (issue 16 item 4): a DRAFT model
// through /api/create `draft_files` and through `ollamats create` with a Modelfile DRAFT line,
// checked against the model's vocabulary; and greedy output that is the same token for token with
// a draft (one that agrees with the model, one cut down to its first layer), with prompt lookup,
// and without either, while /metrics shows that proposals were made and checked; and a
// speculative runner's reused prefixes (snapshots, other slots) give the text of a cold run.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import type { GenerateJob, Runner, RunnerEvent } from "../../src/backends/backend.js";
import { LlamaCppBackend } from "../../src/backends/llamacpp/backend.js";
import type { LoadOptions } from "../../src/backends/llamacpp/protocol.js";
import { CLI, createModelFromFile, sha256File, startDaemon, uploadFile, type TestDaemon } from "../helpers/daemon.js";
import { testLoadOptions } from "../helpers/load-options.js";
import { Scrape } from "../helpers/prometheus.js";

let d: TestDaemon;
let dir: string;
let model: string;
let cut: string;
let cutF16: string;
let otherVocab: string;

const GREEDY = { temperature: 0, top_k: 1, seed: 42, num_predict: 32, num_ctx: 512 };
const PROMPTS = [
  "the quick brown fox jumps over the lazy dog",
  "user: tell me a story about the sea and the ships",
  "one two three four five six seven eight",
  // quote-heavy: the answer may repeat the prompt, which is what prompt lookup proposes
  "copy this: the cat sat on the mat. the cat sat on the mat. the cat sat on the",
];

async function upload(file: string): Promise<string> {
  const { digest, status } = await uploadFile(d.url, file);
  expect([200, 201]).toContain(status);
  return digest;
}

async function create(name: string, file: string, extra: Record<string, unknown> = {}): Promise<{ status: number; body: string }> {
  const r = await createModelFromFile(d.url, name, file, extra);
  return { status: r.status, body: await r.text() };
}

async function generate(model: string, prompt: string, options: Record<string, unknown> = {}): Promise<string> {
  const r = await fetch(`${d.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model, prompt, raw: true, stream: false, options: { ...GREEDY, ...options } }),
  });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return (JSON.parse(text) as { response: string }).response;
}

async function drafted(model: string): Promise<{ accepted: number; rejected: number }> {
  const s = new Scrape(await (await fetch(`${d.url}/metrics`)).text());
  const n = (result: string) => s.value("ollamats_draft_tokens_total", { model, result });
  return { accepted: n("accepted"), rejected: n("rejected") };
}

async function manifestLayers(name: string): Promise<Array<{ mediaType: string; digest: string }>> {
  const file = path.join(d.models, "manifests", "registry.ollama.ai", "library", name, "latest");
  return (JSON.parse(await readFile(file, "utf8")) as { layers: Array<{ mediaType: string; digest: string }> }).layers;
}

async function show(name: string): Promise<{ modelfile: string }> {
  const r = await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model: name }) });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return JSON.parse(text) as { modelfile: string };
}

function cli(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: d.env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
    });
  });
}

const DRAFT = "application/vnd.ollama.image.draft";

beforeAll(async () => {
  [model, cut, cutF16, otherVocab] = await Promise.all([
    makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }),
    makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1, layers: 1 }),
    makeTestModel({ shape: "tiny", type: "F16", seed: 1, layers: 1 }),
    makeTestModel({ shape: "small", type: "Q4_0", seed: 1 }),
  ]);
  // Random weights are never confident: without this the draft would stop at its first token.
  d = await startDaemon({ OLLAMATS_DRAFT_P_MIN: "0" });
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-speculative-"));
}, 120_000);

afterAll(async () => {
  await d?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("creating a model with a draft", () => {
  it("stores the draft as its own layer, records it in the config, and show prints DRAFT", async () => {
    const draftDigest = await upload(cut);
    const r = await create("with-draft", model, { draft_files: { "draft.gguf": draftDigest } });
    expect(r.status, r.body).toBe(200);
    const layers = await manifestLayers("with-draft");
    const draftLayers = layers.filter((l) => l.mediaType === DRAFT);
    expect(draftLayers.map((l) => l.digest)).toEqual([draftDigest]);
    expect(layers.find((l) => l.mediaType === "application/vnd.ollama.image.model")?.digest).toBe(await sha256File(model));
    const { modelfile } = await show("with-draft");
    const blob = path.join(d.models, "blobs", draftDigest.replace(":", "-"));
    expect(modelfile).toContain(`\nDRAFT ${blob}\n`);
    // FROM, then the draft (Ollama's order)
    expect(modelfile.indexOf("\nFROM ")).toBeLessThan(modelfile.indexOf("\nDRAFT "));
  });

  it("keeps the draft of a model it is created from, and a new draft replaces it", async () => {
    let r = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ model: "derived", from: "with-draft", system: "be brief", stream: false }) });
    expect(r.status, await r.text()).toBe(200);
    expect((await manifestLayers("derived")).filter((l) => l.mediaType === DRAFT).map((l) => l.digest)).toEqual([await sha256File(cut)]);
    const self = await upload(model);
    r = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ model: "redrafted", from: "with-draft", draft_files: { "d.gguf": self }, stream: false }) });
    expect(r.status, await r.text()).toBe(200);
    expect((await manifestLayers("redrafted")).filter((l) => l.mediaType === DRAFT).map((l) => l.digest)).toEqual([self]);
  });

  it("refuses a draft with another vocabulary with a 400 that says what differs", async () => {
    const r = await create("bad-draft", model, { draft_files: { "draft.gguf": await upload(otherVocab) } });
    expect(r.status).toBe(400);
    expect(r.body).toContain("draft model's vocabulary does not match the model's");
    expect(r.body).toContain("4096 tokens in the draft, 1024 in the model");
    const tags = (await (await fetch(`${d.url}/api/tags`)).json()) as { models: Array<{ name: string }> };
    expect(tags.models.map((m) => m.name)).not.toContain("bad-draft:latest");
  });

  it("answers draft_quantize as Ollama does: a DRAFT is needed, and an unquantized one", async () => {
    let r = await create("dq-none", model, { draft_quantize: "q8_0" });
    expect(r.status).toBe(400);
    expect(r.body).toContain("--draft-quantize requires a DRAFT model");
    r = await create("dq-quantized", model, { draft_files: { "d.gguf": await upload(cut) }, draft_quantize: "q8_0" });
    expect(r.status).toBe(400);
    expect(r.body).toContain("draft quantization requires an unquantized draft model, got Q4_0");
    r = await create("dq", model, { draft_files: { "d.gguf": await upload(cutF16) }, draft_quantize: "q8_0" });
    expect(r.status, r.body).toBe(200);
    const [layer] = (await manifestLayers("dq")).filter((l) => l.mediaType === DRAFT);
    expect(layer?.digest).not.toBe(await sha256File(cutF16));
    const blob = await readFile(path.join(d.models, "blobs", (layer?.digest ?? "").replace(":", "-")));
    expect(blob.subarray(0, 4).toString()).toBe("GGUF");
  });

  it("a Modelfile DRAFT goes through `ollamats create` (uploaded like FROM), with --draft-quantize", async () => {
    await writeFile(path.join(dir, "Modelfile"), `FROM ${model}\nDRAFT ${cutF16}\n`);
    const ok = await cli(["create", "cli-draft", "-f", path.join(dir, "Modelfile"), "--draft-quantize", "q8_0"]);
    expect(ok.code, ok.stderr).toBe(0);
    const layers = await manifestLayers("cli-draft");
    const [layer] = layers.filter((l) => l.mediaType === DRAFT);
    expect(layer).toBeDefined();
    expect(layer?.digest).not.toBe(await sha256File(cutF16)); // quantized on the way in
    expect((await show("cli-draft")).modelfile).toMatch(/\nDRAFT \S+sha256-[0-9a-f]{64}\n/);

    await writeFile(path.join(dir, "Plain"), `FROM ${model}\n`);
    const refused = await cli(["create", "cli-plain", "-f", path.join(dir, "Plain"), "--draft-quantize", "q8_0"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("--draft-quantize requires a DRAFT model");
  });
});

describe("greedy output is the same with and without speculative decoding", () => {
  let plain: string[];

  beforeAll(async () => {
    expect((await create("plain", model)).status).toBe(200);
    expect((await create("self-draft", model, { draft_files: { "d.gguf": await upload(model) } })).status).toBe(200);
    plain = [];
    for (const p of PROMPTS) plain.push(await generate("plain", p));
  }, 120_000);

  it("gives text to compare (a model that said nothing would match anything)", () => {
    for (const t of plain) expect(t.length).toBeGreaterThan(20);
    expect(new Set(plain).size).toBe(PROMPTS.length);
  });

  it("with a draft cut down to the model's first layer", async () => {
    for (const [i, p] of PROMPTS.entries()) expect(await generate("with-draft", p), p).toBe(plain[i]);
    const n = await drafted("with-draft:latest");
    expect(n.accepted + n.rejected).toBeGreaterThan(0);
  });

  it("with the model as its own draft, which proposes what the model would choose", async () => {
    for (const [i, p] of PROMPTS.entries()) expect(await generate("self-draft", p), p).toBe(plain[i]);
    const n = await drafted("self-draft:latest");
    expect(n.accepted).toBeGreaterThan(0);
  });

  it("with prompt lookup", async () => {
    for (const [i, p] of PROMPTS.entries()) expect(await generate("plain", p, { prompt_lookup: true }), p).toBe(plain[i]);
    const n = await drafted("plain:latest");
    expect(n.accepted + n.rejected).toBeGreaterThan(0);
  });

  it("with draft_num_predict 1 and 8", async () => {
    for (const k of [1, 8]) {
      for (const [i, p] of PROMPTS.entries()) expect(await generate("self-draft", p, { draft_num_predict: k }), `${k}: ${p}`).toBe(plain[i]);
    }
  });

  it("draft_num_predict 0 turns it off, and a request with penalties runs without proposals", async () => {
    const before = await drafted("self-draft:latest");
    expect(await generate("self-draft", PROMPTS[0] as string, { draft_num_predict: 0 })).toBe(plain[0]);
    const penalized = { repeat_penalty: 1.3, repeat_last_n: 16 };
    for (const p of PROMPTS) {
      const withPenalty = await generate("self-draft", p, penalized);
      expect(await generate("plain", p, penalized)).toBe(withPenalty);
    }
    expect(await drafted("self-draft:latest")).toEqual(before);
  });
});

describe("a speculative runner's reused prefixes", () => {
  // Runners driven directly (no daemon): 2 slots; the model as its own draft, so most steps end
  // with an accepted proposal loaded in the sequence; greedy, and cut short by num_predict.
  const words = "river stone cloud lantern meadow copper whisper harbor orchard ember violet canyon".split(" ");
  const text = (n: number, seed: number) => Array.from({ length: n }, (_, i) => words[(i * 5 + seed) % words.length]).join(" ");
  const prefix = text(80, 1); // ~350 tokens of the tiny vocabulary: over SNAPSHOT_MIN_TOKENS, so snapshotted
  const job = (prompt: string, numPredict = 13): GenerateJob => ({
    prompt,
    sampling: { temperature: 0, topK: 1, topP: 1, minP: 0, seed: 42, repeatLastN: 64, repeatPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 },
    numPredict,
    stop: [],
    wantContext: false,
  });
  type Done = Extract<RunnerEvent, { type: "done" }>;

  async function run(runner: Runner, j: GenerateJob, signal = new AbortController().signal): Promise<{ text: string; done: Done }> {
    let out = "";
    for await (const ev of runner.generate(j, signal)) {
      if (ev.type === "text") out += ev.text;
      else if (ev.type === "done") return { text: out, done: ev };
    }
    throw new Error("no done event");
  }

  async function withRunner<T>(opts: Partial<LoadOptions>, use: (r: Runner) => Promise<T>): Promise<T> {
    const runner = await new LlamaCppBackend({ debug: false, cpuOnly: true }).start(model, testLoadOptions({ numCtx: 1024, slots: 2, ...opts }), { gpuLayers: 0 }, new AbortController().signal);
    try {
      return await use(runner);
    } finally {
      await runner.close();
    }
  }
  const speculative: Partial<LoadOptions> = { draft: "", draftNumPredict: 4, draftMinConfidence: 0 };

  it("a prefix loaded from the snapshot a cut-short generation left gives the cold run's text", async () => {
    const again = job(`${prefix} so what about the lantern`, 24);
    const cold = await withRunner({}, (r) => run(r, again));
    const warm = await withRunner({ ...speculative, draft: model }, async (r) => {
      // Without dropping the proposals it held, this snapshot failed to evaluate after a load.
      const first = await run(r, job(`${prefix} first of all`));
      expect(first.done.draftAccepted).toBeGreaterThan(0);
      await run(r, job(`${text(80, 2)} something else`));
      await run(r, job(`${text(80, 4)} something else again`));
      return run(r, again);
    });
    expect(warm.done.cachedFrom).toBe("snapshot");
    expect(warm.done.cachedTokens).toBeGreaterThan(200);
    expect(warm.text).toBe(cold.text);
  }, 120_000);

  // Sequences that verify several proposed tokens per step, next to each other and to prompts of
  // other lengths in the same batches: no sequence may read another's rows or cache. (The race
  // of output-order.ts needs a larger vocabulary to show: batching.test.ts has that one.)
  it("four concurrent speculative sequences with prompts of different lengths each get the plain runner's greedy text", async () => {
    const rounds = [0, 1, 2, 3].map((round) => [3, 40, 11, 90].map((n, i) => job(`${round}-${i} ${text(n, round * 10 + i)}`, 24)));
    const cold = await withRunner({ slots: 4 }, async (r) => {
      const texts: string[] = [];
      for (const j of rounds.flat()) texts.push((await run(r, j)).text);
      return texts;
    });
    const together = await withRunner({ ...speculative, draft: model, slots: 4 }, async (r) => {
      const out: Array<{ text: string; done: Done }> = [];
      for (const jobs of rounds) out.push(...(await Promise.all(jobs.map((j) => run(r, j)))));
      return out;
    });
    expect(together.map((t) => t.text)).toEqual(cold);
    expect(together.reduce((a, t) => a + (t.done.draftAccepted ?? 0), 0)).toBeGreaterThan(100);
    expect(new Set(cold).size).toBe(16);
  }, 120_000);

  // A copy of the busy slot carried its loaded proposals, and the copy failed to evaluate.
  it("a prompt whose prefix sits in a busy speculative slot is not copied from it, and gets the cold run's text", async () => {
    const start = text(20, 3);
    const b = job(`${start} and then the second question`, 24);
    const cold = await withRunner({}, (r) => run(r, b));
    const warm = await withRunner({ ...speculative, draft: model }, async (r) => {
      await run(r, job(`${start} and the question before`));
      const stop = new AbortController();
      let pieces = 0;
      let firstPiece: () => void = () => undefined;
      const started = new Promise<void>((resolve) => (firstPiece = resolve));
      const busy = (async () => {
        for await (const ev of r.generate(job(`${start} and then the first question`, 100_000), stop.signal)) {
          if (ev.type === "text" && ++pieces === 1) firstPiece();
        }
      })();
      try {
        await started;
        return await run(r, b);
      } finally {
        stop.abort();
        await busy;
      }
    });
    expect(warm.done.cachedFrom).toBeUndefined();
    expect(warm.text).toBe(cold.text);
  }, 120_000);
});
