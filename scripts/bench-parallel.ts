// `npm run bench`, parallel case: aggregate decode tokens/s with 1, 2 and 4 concurrent streams
// on one loaded model, through the daemon (started with OLLAMA_NUM_PARALLEL=4, so the runner has
// 4 sequences and never reloads between the levels) and on plain node-llama-cpp (one context with
// 4 sequences, its default batching; bench-parallel-direct.ts, in a child process). Each stream: a
// different raw ~32-token prompt, 64 tokens (BENCH_PARALLEL_TOKENS), fixed seed, num_thread = os.availableParallelism(),
// num_ctx 1024 per sequence. Rounds alternate which side goes first; each side loads, warms up all
// four sequences, measures the three levels and unloads, so the two never compete for the cores.
// Aggregate tok/s of one level = Σ tokens / (last stream's end − first stream's first token),
// i.e. the decode window as the consumer sees it; the median over BENCH_PARALLEL_ROUNDS (default 2)
// rounds is reported, with daemon / direct per level. Issue 7's target: 4 streams ≥ 1.5 × 1 stream
// through the daemon (reported only). BENCH_PARALLEL_DIRECT=0 skips the direct side.
import type http from "node:http";
import { loadModel, unloadModel, type BenchDaemon } from "./bench-daemon.js";
import type { ParallelPlan, ParallelRound } from "./bench-parallel-direct.js";
import { caseShape, measureQuietMs, median, ollamaOptions, promptFor, waitForQuiet } from "./bench-plan.js";
import { alternateSides } from "./bench-rounds.js";
import { generate, LoadMeter, nowMs } from "./bench-stream.js";

export interface ParallelLevel {
  streams: number;
  /** Median aggregate decode tok/s over the rounds. */
  aggregateTokPerS: number;
  /** Per round. */
  rounds: ParallelRound[];
}

export interface ParallelSide {
  levels: ParallelLevel[];
  ratio2: number;
  ratio4: number;
}

export interface ParallelBench extends ParallelSide {
  target4: number;
  tokens: number;
  threads: number;
  numCtx: number;
  foreignCoresMax: number;
  /** The same on plain node-llama-cpp; null when skipped (BENCH_PARALLEL_DIRECT=0). */
  direct: ParallelSide | null;
  /** Daemon / direct aggregate tok/s at 1, 2 and 4 streams. */
  daemonOverDirect: number[];
}

const MODEL = "bench-parallel:q4_0";

/** One round on the daemon: load, warm up, the three levels, unload. */
async function daemonRound(agent: http.Agent, b: BenchDaemon, plan: ParallelPlan): Promise<ParallelRound[]> {
  const options = ollamaOptions(plan, plan.tokens);
  const gen = (prompt: string, n: number) => generate(agent, b.d.url, { model: b.model, prompt, raw: true, keep_alive: "10m", options: { ...options, num_predict: n } });
  await loadModel(agent, b, options);
  await Promise.all(plan.warmup.prompts.map((p) => gen(p, plan.warmup.tokens))); // warm up all four sequences
  const meter = new LoadMeter(b.d.proc.pid!);
  const out: ParallelRound[] = [];
  for (const level of plan.levels) {
    await waitForQuiet(await meter.ownPids(), measureQuietMs(plan.quietWaitMs));
    await meter.begin();
    const t0 = nowMs();
    const gens = await Promise.all(level.prompts.map((p) => gen(p, plan.tokens)));
    const wallMs = nowMs() - t0;
    const foreign = await meter.end();
    const counts = gens.map((g) => Number(g.final.eval_count));
    const windowMs = Math.max(...gens.map((g) => g.tEnd)) - Math.min(...gens.map((g) => g.tFirst));
    out.push({
      aggregateTokPerS: counts.reduce((a, x) => a + x, 0) / (windowMs / 1000),
      tokens: counts,
      perStreamStatsTokPerS: gens.map((g) => Number(g.final.eval_count) / (Number(g.final.eval_duration) / 1e9)),
      windowMs,
      wallMs,
      foreignCores: foreign,
    });
  }
  await unloadModel(agent, b, options);
  return out;
}

function sideOf(levels: number[], rounds: ParallelRound[][]): ParallelSide {
  const ls = levels.map((streams, i) => {
    const rs = rounds.map((r) => r[i]!);
    return { streams, aggregateTokPerS: median(rs.map((x) => x.aggregateTokPerS)), rounds: rs };
  });
  const one = ls[0]!.aggregateTokPerS;
  return { levels: ls, ratio2: ls[1]!.aggregateTokPerS / one, ratio4: ls[2]!.aggregateTokPerS / one };
}

export async function benchParallel(opts: { modelPath: string; log?: (s: string) => void; quietWaitMs?: number; rounds?: number; tokens?: number; direct?: boolean }): Promise<ParallelBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = Math.max(1, opts.rounds ?? 2);
  const tokens = Math.max(8, opts.tokens ?? 64);
  const levels = [1, 2, 4];
  // New prompts every run: no stream can reuse another's (or an earlier run's) prompt.
  const plans: ParallelPlan[] = Array.from({ length: rounds }, (_, r) => ({
    ...caseShape(opts.modelPath, opts.quietWaitMs, 1024),
    warmup: { prompts: [0, 1, 2, 3].map((i) => promptFor(100 + i)), tokens: 8 },
    tokens,
    levels: levels.map((streams) => ({ streams, prompts: Array.from({ length: streams }, (_, i) => promptFor(200 + r * 20 + streams * 4 + i)) })),
  }));
  const res = await alternateSides<ParallelRound[]>({
    tag: "parallel-bench",
    env: { OLLAMA_NUM_PARALLEL: "4", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m" },
    model: MODEL,
    modelPath: opts.modelPath,
    rounds,
    maxSockets: 8,
    daemon: (agent, b, r) => daemonRound(agent, b, plans[r]!),
    direct: opts.direct === false ? null : (r) => ({ job: "parallel", plan: plans[r]! }),
    show: (side, r, x, ms) =>
      log(
        `  parallel round ${r + 1} ${side.padEnd(6)} ` +
          x.map((y, i) => `${levels[i]}: ${y.aggregateTokPerS.toFixed(1)}`).join(", ") +
          ` tok/s aggregate, other processes ${Math.max(...x.map((y) => y.foreignCores)).toFixed(2)} cores (${(ms / 1000).toFixed(1)} s)`,
      ),
  });
  const daemon = sideOf(levels, res.daemon);
  const direct = res.direct.length > 0 ? sideOf(levels, res.direct) : null;
  const p0 = plans[0]!;
  return {
    ...daemon,
    target4: 1.5,
    tokens,
    threads: p0.threads,
    numCtx: p0.numCtx,
    foreignCoresMax: Math.max(...[...res.daemon, ...res.direct].flat().map((x) => x.foreignCores)),
    direct,
    daemonOverDirect: daemon.levels.map((l, i) => l.aggregateTokPerS / (direct?.levels[i]!.aggregateTokPerS ?? NaN)),
  };
}
