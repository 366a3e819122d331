// The direct half of the profile case (bench-profile.ts), run in the bench's child process: the
// same prompts, in the same order, with the same context, threads and sampling as the daemon side.
import { generate, loadEngine, textOf } from "./bench-engine.js";
import { cpuSnapshot, foreignCores, measureQuietMs, waitForQuiet, type EngineShape } from "./bench-plan.js";

/** Where decode is measured: after a ~4-token prompt (empty context), a 256- and a 1,024-token one. */
export type ProfilePoint = "empty" | "p256" | "p1024";

export interface ProfilePlan extends EngineShape {
  modelPath: string;
  quietWaitMs: number;
  warmup: { prompt: string; tokens: number };
  /** Tokens generated after each prompt. */
  tokens: number;
  /** Measured in this order; each starts with a different word (no prefix reuse). */
  prompts: Array<{ point: ProfilePoint; prompt: string }>;
}

export interface ProfileRun {
  point: ProfilePoint;
  promptTokens: number;
  /** Prompt tokens / time to first token as the engine sees it (daemon: prompt_eval_count / prompt_eval_duration). */
  promptTokPerS: number;
  /** daemon: request written → first non-empty NDJSON line; direct: evaluate() → first token. */
  ttftMs: number;
  /** (tokens − 1) / (last token − first token), client side. */
  decodeTokPerS: number;
  tokens: number;
  text: string;
  foreignCores: number;
}

export interface ProfileSide {
  runs: ProfileRun[];
  loadMs: number;
}

export async function runProfileDirect(plan: ProfilePlan): Promise<ProfileSide> {
  const e = await loadEngine(plan.modelPath, plan);
  const seq = e.sequences[0]!;
  await generate(e.model, seq, plan.sampling, plan.warmup.prompt, plan.warmup.tokens);
  const runs: ProfileRun[] = [];
  for (const { point, prompt } of plan.prompts) {
    await waitForQuiet(["self"], measureQuietMs(plan.quietWaitMs));
    const s0 = await cpuSnapshot(["self"]);
    const g = await generate(e.model, seq, plan.sampling, prompt, plan.tokens);
    const s1 = await cpuSnapshot(["self"]);
    const n = g.tokens.length;
    runs.push({
      point,
      promptTokens: g.promptTokens,
      promptTokPerS: g.promptTokens / ((g.tFirst - g.t0) / 1000),
      ttftMs: g.tFirst - g.t0,
      decodeTokPerS: (n - 1) / ((g.tEnd - g.tFirst) / 1000),
      tokens: n,
      text: textOf(e.model, g),
      foreignCores: foreignCores(s0, s1),
    });
  }
  await e.dispose();
  return { runs, loadMs: e.loadMs };
}
