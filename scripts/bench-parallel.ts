// `npm run bench`, parallel case: aggregate decode tokens/s through the daemon with 1, 2 and 4
// concurrent streams on one loaded model, the daemon started with OLLAMA_NUM_PARALLEL=4 (so the
// runner has 4 sequences and never reloads between the levels). Each stream: a different raw
// ~32-token prompt, 64 tokens, fixed seed, num_thread = os.availableParallelism().
// Aggregate tok/s of one level = Σ eval_count / (last stream's final chunk − first stream's first
// token), i.e. the decode window as the client sees it; the median over BENCH_PARALLEL_ROUNDS
// (default 2) rounds is reported. Issue 7's target: 4 streams ≥ 1.5 × 1 stream (reported only).
import http from "node:http";
import os from "node:os";
import { createModelFromFile, startDaemon, type TestDaemon } from "../test/helpers/daemon.js";
import { median, promptFor, waitForQuiet } from "./bench-plan.js";
import { generate, LoadMeter, nowMs } from "./bench-stream.js";

export interface ParallelLevel {
  streams: number;
  /** Median aggregate decode tok/s over the rounds. */
  aggregateTokPerS: number;
  /** Per round. */
  rounds: Array<{ aggregateTokPerS: number; tokens: number[]; perStreamStatsTokPerS: number[]; windowMs: number; wallMs: number; foreignCores: number }>;
}

export interface ParallelBench {
  levels: ParallelLevel[];
  ratio2: number;
  ratio4: number;
  target4: number;
  tokens: number;
  threads: number;
  numCtx: number;
  foreignCoresMax: number;
}

const MODEL = "bench-parallel:q4_0";

export async function benchParallel(opts: { modelPath: string; log?: (s: string) => void; quietWaitMs?: number }): Promise<ParallelBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = Math.max(1, Number(process.env.BENCH_PARALLEL_ROUNDS) || 2);
  const tokens = 64;
  const threads = os.availableParallelism();
  const numCtx = 1024;
  const levels = [1, 2, 4];
  const options = {
    num_ctx: numCtx,
    num_batch: 512,
    num_thread: threads,
    num_predict: tokens,
    temperature: 0.8,
    top_k: 40,
    top_p: 0.9,
    min_p: 0,
    seed: 42,
    repeat_penalty: 1,
  };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  let d: TestDaemon | undefined;
  try {
    d = await startDaemon({ OLLAMA_NUM_PARALLEL: "4", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m" });
    const created = await createModelFromFile(d.url, MODEL, opts.modelPath);
    if (!created.ok) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    await created.text();
    const gen = (prompt: string, n = tokens) =>
      generate(agent, d!.url, { model: MODEL, prompt, raw: true, keep_alive: "10m", options: { ...options, num_predict: n } });
    await gen("", 0); // load
    await Promise.all([0, 1, 2, 3].map((i) => gen(promptFor(100 + i), 8))); // warm up all four sequences
    const meter = new LoadMeter(d.proc.pid!);
    await waitForQuiet(await meter.ownPids(), opts.quietWaitMs ?? 20_000);
    const results: ParallelLevel[] = levels.map((streams) => ({ streams, aggregateTokPerS: NaN, rounds: [] }));
    for (let r = 0; r < rounds; r++) {
      for (const level of results) {
        // New prompts every run: no stream can reuse another's (or an earlier run's) prompt.
        const prompts = Array.from({ length: level.streams }, (_, i) => promptFor(200 + r * 20 + level.streams * 4 + i));
        await waitForQuiet(await meter.ownPids(), Math.min(10_000, opts.quietWaitMs ?? 20_000));
        await meter.begin();
        const t0 = nowMs();
        const gens = await Promise.all(prompts.map((p) => gen(p)));
        const wallMs = nowMs() - t0;
        const foreign = await meter.end();
        const counts = gens.map((g) => Number(g.final.eval_count));
        const windowMs = Math.max(...gens.map((g) => g.tEnd)) - Math.min(...gens.map((g) => g.tFirst));
        const agg = counts.reduce((a, b) => a + b, 0) / (windowMs / 1000);
        level.rounds.push({
          aggregateTokPerS: agg,
          tokens: counts,
          perStreamStatsTokPerS: gens.map((g) => Number(g.final.eval_count) / (Number(g.final.eval_duration) / 1e9)),
          windowMs,
          wallMs,
          foreignCores: foreign,
        });
        log(`  parallel round ${r + 1}, ${level.streams} stream(s): ${agg.toFixed(1)} tok/s aggregate (${counts.join("+")} tokens in ${windowMs.toFixed(0)} ms), other processes ${foreign.toFixed(2)} cores`);
      }
    }
    for (const level of results) level.aggregateTokPerS = median(level.rounds.map((x) => x.aggregateTokPerS));
    const one = results[0]!.aggregateTokPerS;
    return {
      levels: results,
      ratio2: results[1]!.aggregateTokPerS / one,
      ratio4: results[2]!.aggregateTokPerS / one,
      target4: 1.5,
      tokens,
      threads,
      numCtx,
      foreignCoresMax: Math.max(...results.flatMap((l) => l.rounds.map((x) => x.foreignCores))),
    };
  } catch (err) {
    if (d) process.stderr.write(`--- parallel-bench daemon log (tail) ---\n${d.logs().slice(-3000)}\n`);
    throw err;
  } finally {
    agent.destroy();
    await d?.stop();
  }
}
