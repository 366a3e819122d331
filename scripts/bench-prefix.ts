// `npm run bench`, prefix case: a ~1,000-token prefix, new in every bench run and every round
// (350 seeded random words ≈ 1,000 tokens of the test model's vocabulary, the seed taken from
// the clock; BENCH_PREFIX_WORDS changes the count), sent twice through the daemon with a
// different short suffix each time. The first request has to evaluate the whole prefix; the
// second one can reuse it from the runner's context (prefix cache). Reported: time to first token
// (request written → first non-empty NDJSON line) of the second request / of the first.
// Targets: issue 3 ≤ 0.2, issue 7 ≤ 0.01 (reported only). num_ctx 2048 holds prefix + suffix +
// output. The model is loaded and warmed up on an unrelated prompt first, so neither request pays
// for the load. BENCH_PREFIX_ROUNDS (default 2) rounds; the median ratio is reported.
import http from "node:http";
import os from "node:os";
import { createModelFromFile, startDaemon, type TestDaemon } from "../test/helpers/daemon.js";
import { median, promptFor, waitForQuiet } from "./bench-plan.js";
import { generate, LoadMeter } from "./bench-stream.js";

export interface PrefixBench {
  ratio: number;
  firstMs: number;
  secondMs: number;
  prefixWords: number;
  seed: number;
  rounds: Array<{ firstMs: number; secondMs: number; ratio: number; promptTokens: [number, number]; promptEvalMs: [number, number]; foreignCores: number }>;
  targets: { issue3: number; issue7: number };
  numCtx: number;
  foreignCoresMax: number;
}

const MODEL = "bench-prefix:q4_0";

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

export async function benchPrefix(opts: { modelPath: string; log?: (s: string) => void; quietWaitMs?: number; seed?: number }): Promise<PrefixBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = Math.max(1, Number(process.env.BENCH_PREFIX_ROUNDS) || 2);
  const prefixWords = Math.max(16, Number(process.env.BENCH_PREFIX_WORDS) || 350);
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
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let d: TestDaemon | undefined;
  try {
    d = await startDaemon({ OLLAMA_NUM_PARALLEL: "1", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m" });
    const created = await createModelFromFile(d.url, MODEL, opts.modelPath);
    if (!created.ok) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    await created.text();
    const gen = (prompt: string, n = 4) => generate(agent, d!.url, { model: MODEL, prompt, raw: true, keep_alive: "10m", options: { ...options, num_predict: n } });
    await gen("", 0); // load
    await gen(promptFor(7), 8); // warm up on an unrelated prompt
    const meter = new LoadMeter(d.proc.pid!);
    await waitForQuiet(await meter.ownPids(), opts.quietWaitMs ?? 20_000);
    const out: PrefixBench["rounds"] = [];
    for (let r = 0; r < rounds; r++) {
      const prefix = randomWords(seed + r, prefixWords);
      await waitForQuiet(await meter.ownPids(), Math.min(10_000, opts.quietWaitMs ?? 20_000));
      await meter.begin();
      const a = await gen(`${prefix}\nQuestion: what comes after the list?`);
      const b = await gen(`${prefix}\nQuestion: which word is the longest?`);
      const foreign = await meter.end();
      const firstMs = a.tFirst - a.tSent;
      const secondMs = b.tFirst - b.tSent;
      const row = {
        firstMs,
        secondMs,
        ratio: secondMs / firstMs,
        promptTokens: [Number(a.final.prompt_eval_count), Number(b.final.prompt_eval_count)] as [number, number],
        promptEvalMs: [Number(a.final.prompt_eval_duration) / 1e6, Number(b.final.prompt_eval_duration) / 1e6] as [number, number],
        foreignCores: foreign,
      };
      out.push(row);
      log(
        `  prefix round ${r + 1}: first token ${firstMs.toFixed(0)} ms then ${secondMs.toFixed(0)} ms (ratio ${row.ratio.toFixed(3)}; ` +
          `prompt_eval_count ${row.promptTokens.join("/")}), other processes ${foreign.toFixed(2)} cores`,
      );
    }
    return {
      ratio: median(out.map((x) => x.ratio)),
      firstMs: median(out.map((x) => x.firstMs)),
      secondMs: median(out.map((x) => x.secondMs)),
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
