// `npm run bench`, prefix case: a ~1,000-token prefix, new in every bench run and every round
// (350 seeded random words ≈ 1,000 tokens of the test model's vocabulary, the seed taken from
// the clock; BENCH_PREFIX_WORDS changes the count), sent through the daemon (OLLAMA_NUM_PARALLEL=2,
// one model loaded at a time), each time ending in "\nQuestion: <word>" with a different word:
// what is new after the reused prefix is a token or two, as in the llama-server figure issue 7
// compares with (12.4 s → 51 ms, one decode step).
//   1. cold: the first request evaluates the whole prefix (and leaves a snapshot when done,
//      prefix-reuse.ts);
//   2. same slot: the second request reuses it from its slot's cache;
//   3. while another stream decodes: a third request with the prefix decodes 64 tokens, and a
//      fourth arrives meanwhile. It is given the other slot, which already holds the prefix (the
//      runner copied it there after request 2 reused it); its first token still waits for the
//      third's decode step in flight (up to one step, ~52 ms at this depth), and is then
//      evaluated alone (~72 ms for its 4 new tokens at depth ~1,000): the engine's floor here;
//   4. across slots: two short unrelated prompts take both slots, so no slot holds the prefix
//      any more; a fifth request with it is given a slot that never evaluated it and loads the
//      snapshot;
//   5. after a model switch: a request to another (small) model unloads this one, then a sixth
//      request with the prefix loads it again; the states kept at unload are restored.
// Reported: time to first token (request written → first non-empty NDJSON line) of 2–5 divided
// by that of 1; for 5 also with the reload's load_duration taken out (the load itself is not
// prompt work). Targets: issue 3 ≤ 0.2; issue 7 ≤ 0.01 for 2, 4 and 5 (3 is reported: see
// docs/performance.md). num_ctx 2048.
// The model is loaded and warmed up on an unrelated prompt first, so the cold request does not
// pay for the load. BENCH_PREFIX_ROUNDS (default 2) rounds; median ratios are reported.
import http from "node:http";
import os from "node:os";
import { createModelFromFile, startDaemon, type TestDaemon } from "../test/helpers/daemon.js";
import { makeTestModel } from "./make-test-model.js";
import { median, promptFor, waitForQuiet } from "./bench-plan.js";
import { generate, LoadMeter } from "./bench-stream.js";

interface PrefixRound {
  firstMs: number;
  secondMs: number;
  ratio: number;
  whileBusyMs: number;
  whileBusyRatio: number;
  otherSlotMs: number;
  otherSlotRatio: number;
  afterSwitchMs: number;
  afterSwitchLoadMs: number;
  afterSwitchRatio: number;
  /** (afterSwitchMs − the reload's load_duration) / firstMs. */
  afterSwitchPromptRatio: number;
  promptTokens: [number, number];
  promptEvalMs: [number, number];
  foreignCores: number;
}

export interface PrefixBench {
  /** Same slot: 2nd / 1st time to first token (median). */
  ratio: number;
  firstMs: number;
  secondMs: number;
  whileBusyRatio: number;
  otherSlotRatio: number;
  afterSwitchRatio: number;
  afterSwitchPromptRatio: number;
  prefixWords: number;
  seed: number;
  rounds: PrefixRound[];
  targets: { issue3: number; issue7: number };
  numCtx: number;
  foreignCoresMax: number;
}

const MODEL = "bench-prefix:q4_0";
const OTHER = "bench-prefix-other:q4_0";

const WORDS = (
  "alpha bravo river stone cloud paper window garden silver market little yellow forest engine " +
  "winter summer letter number circle orange purple simple planet rocket castle dragon silent " +
  "bottle button camera candle carpet cotton finger flower hammer island jacket kitten ladder " +
  "magnet mirror needle pencil pepper pillow pocket rabbit ribbon saddle shadow spider spring " +
  "ticket tunnel velvet wallet wizard anchor basket butter copper desert fabric harbor lemon"
).split(/\s+/);

/** Mulberry32: a small seeded PRNG, so a run's prefix can be regenerated from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomWords(seed: number, n: number): string {
  const next = rng(seed);
  return Array.from({ length: n }, () => WORDS[Math.floor(next() * WORDS.length)]!).join(" ");
}

export async function benchPrefix(opts: { modelPath: string; log?: (s: string) => void; quietWaitMs?: number; seed?: number; rounds?: number; prefixWords?: number }): Promise<PrefixBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = Math.max(1, opts.rounds ?? 2);
  const prefixWords = Math.max(16, opts.prefixWords ?? 350);
  const seed = opts.seed ?? (Date.now() & 0x7fffffff);
  const numCtx = 2048;
  const options = {
    num_ctx: numCtx,
    num_batch: 512,
    num_thread: os.availableParallelism(),
    num_predict: 4,
    temperature: 0.8,
    top_k: 40,
    top_p: 0.9,
    seed: 42,
    repeat_penalty: 1,
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  let d: TestDaemon | undefined;
  try {
    d = await startDaemon({ OLLAMA_NUM_PARALLEL: "2", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m" });
    const otherPath = await makeTestModel({ shape: "small", type: "Q4_0", seed: 1 });
    for (const [name, file] of [[MODEL, opts.modelPath], [OTHER, otherPath]] as const) {
      const created = await createModelFromFile(d.url, name, file);
      if (!created.ok) throw new Error(`create failed: ${created.status} ${await created.text()}`);
      await created.text();
    }
    const gen = (prompt: string, n = 4, model = MODEL) =>
      generate(agent, d!.url, { model, prompt, raw: true, keep_alive: "10m", options: { ...options, num_predict: n } });
    await gen("", 0); // load
    await gen(promptFor(7), 8); // warm up on an unrelated prompt
    const meter = new LoadMeter(d.proc.pid!);
    await waitForQuiet(await meter.ownPids(), opts.quietWaitMs ?? 20_000);
    const out: PrefixBench["rounds"] = [];
    for (let r = 0; r < rounds; r++) {
      const prefix = randomWords(seed + r, prefixWords);
      await waitForQuiet(await meter.ownPids(), Math.min(10_000, opts.quietWaitMs ?? 20_000));
      await meter.begin();
      const a = await gen(`${prefix}\nQuestion: first`);
      const b = await gen(`${prefix}\nQuestion: last`);
      // The slot holding the prefix is busy decoding when the next one arrives.
      const busy = gen(`${prefix}\nQuestion: story`, 64);
      await new Promise((r) => setTimeout(r, 500));
      const c = await gen(`${prefix}\nQuestion: middle`);
      await busy;
      // Both slots are given to other prompts (the least recently used slot first).
      await gen(promptFor(100 + 2 * r), 2);
      await gen(promptFor(101 + 2 * r), 2);
      const f = await gen(`${prefix}\nQuestion: again`);
      await gen("Hello", 1, OTHER); // switches the model out (one loaded at a time)
      const e = await gen(`${prefix}\nQuestion: count`);
      const foreign = await meter.end();
      const ttft = (g: typeof a) => g.tFirst - g.tSent;
      const firstMs = ttft(a);
      const loadMs = Number(e.final.load_duration) / 1e6;
      const row: PrefixRound = {
        firstMs,
        secondMs: ttft(b),
        ratio: ttft(b) / firstMs,
        whileBusyMs: ttft(c),
        whileBusyRatio: ttft(c) / firstMs,
        otherSlotMs: ttft(f),
        otherSlotRatio: ttft(f) / firstMs,
        afterSwitchMs: ttft(e),
        afterSwitchLoadMs: loadMs,
        afterSwitchRatio: ttft(e) / firstMs,
        afterSwitchPromptRatio: (ttft(e) - loadMs) / firstMs,
        promptTokens: [Number(a.final.prompt_eval_count), Number(b.final.prompt_eval_count)] as [number, number],
        promptEvalMs: [Number(a.final.prompt_eval_duration) / 1e6, Number(b.final.prompt_eval_duration) / 1e6] as [number, number],
        foreignCores: foreign,
      };
      out.push(row);
      log(
        `  prefix round ${r + 1}: first token cold ${firstMs.toFixed(0)} ms; same slot ${row.secondMs.toFixed(0)} ms (${row.ratio.toFixed(4)}); ` +
          `while another stream decodes ${row.whileBusyMs.toFixed(0)} ms (${row.whileBusyRatio.toFixed(4)}); ` +
          `other slot ${row.otherSlotMs.toFixed(0)} ms (${row.otherSlotRatio.toFixed(4)}); after a model switch ${row.afterSwitchMs.toFixed(0)} ms ` +
          `(${row.afterSwitchRatio.toFixed(4)}; without its ${loadMs.toFixed(0)} ms load ${row.afterSwitchPromptRatio.toFixed(4)}); ` +
          `prompt_eval_count ${row.promptTokens.join("/")}, other processes ${foreign.toFixed(2)} cores`,
      );
    }
    return {
      ratio: median(out.map((x) => x.ratio)),
      firstMs: median(out.map((x) => x.firstMs)),
      secondMs: median(out.map((x) => x.secondMs)),
      whileBusyRatio: median(out.map((x) => x.whileBusyRatio)),
      otherSlotRatio: median(out.map((x) => x.otherSlotRatio)),
      afterSwitchRatio: median(out.map((x) => x.afterSwitchRatio)),
      afterSwitchPromptRatio: median(out.map((x) => x.afterSwitchPromptRatio)),
      prefixWords,
      seed,
      rounds: out,
      targets: { issue3: 0.2, issue7: 0.01 },
      numCtx,
      foreignCoresMax: Math.max(...out.map((x) => x.foreignCores)),
    };
  } catch (err) {
    if (d) process.stderr.write(`--- prefix-bench daemon log (tail) ---\n${d.logs().slice(-3000)}\n`);
    throw err;
  } finally {
    agent.destroy();
    await d?.stop();
  }
}
