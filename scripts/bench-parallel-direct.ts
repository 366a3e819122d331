// The direct half of the parallel case (bench-parallel.ts), run in the bench's child process:
// one context with 4 sequences on plain node-llama-cpp (its default batching), the same prompts,
// token counts, context, threads and sampling as the daemon started with OLLAMA_NUM_PARALLEL=4;
// 1, 2 and 4 streams at a time, stream i on sequence i.
import { generate, loadEngine, nowMs } from "./bench-engine.js";
import { cpuSnapshot, foreignCores, measureQuietMs, waitForQuiet, type EngineShape } from "./bench-plan.js";

export interface ParallelPlan extends EngineShape {
  modelPath: string;
  quietWaitMs: number;
  /** One per sequence, run concurrently before measuring. */
  warmup: { prompts: string[]; tokens: number };
  tokens: number;
  /** One measurement per entry, in order; the prompts of one entry run concurrently. */
  levels: Array<{ streams: number; prompts: string[] }>;
}

/** One level of one round, on either side. */
export interface ParallelRound {
  aggregateTokPerS: number;
  tokens: number[];
  perStreamStatsTokPerS: number[];
  /** Last stream's end − first stream's first token. */
  windowMs: number;
  wallMs: number;
  foreignCores: number;
}

export async function runParallelDirect(plan: ParallelPlan): Promise<ParallelRound[]> {
  const sequences = Math.max(plan.warmup.prompts.length, ...plan.levels.map((l) => l.streams));
  const e = await loadEngine(plan.modelPath, plan, sequences);
  const run = (prompts: string[], tokens: number) =>
    Promise.all(prompts.map((p, i) => generate(e.model, e.sequences[i]!, plan.sampling, p, tokens)));
  await run(plan.warmup.prompts, plan.warmup.tokens);
  const out: ParallelRound[] = [];
  for (const level of plan.levels) {
    await waitForQuiet(["self"], measureQuietMs(plan.quietWaitMs));
    const s0 = await cpuSnapshot(["self"]);
    const t0 = nowMs();
    const gens = await run(level.prompts, plan.tokens);
    const wallMs = nowMs() - t0;
    const s1 = await cpuSnapshot(["self"]);
    const counts = gens.map((g) => g.tokens.length);
    const windowMs = Math.max(...gens.map((g) => g.tEnd)) - Math.min(...gens.map((g) => g.tFirst));
    out.push({
      aggregateTokPerS: counts.reduce((a, b) => a + b, 0) / (windowMs / 1000),
      tokens: counts,
      perStreamStatsTokPerS: gens.map((g) => g.tokens.length / ((g.tEnd - g.tFirst) / 1000)),
      windowMs,
      wallMs,
      foreignCores: foreignCores(s0, s1),
    });
  }
  await e.dispose();
  return out;
}
