// `npm run bench`, first-token overhead: pairs of requests on the same short prompt, one through
// the daemon and one on the direct engine, taken back to back with both engines loaded (each
// idle while the other works) and alternating which goes first. The rounds of the decode case
// are tens of seconds apart, and the machine drifts by a few percent over that time: on a
// 340 ms first token that is ±17 ms, far more than the few milliseconds the daemon adds, so
// the overhead is measured here instead, on ~8-token prompts (~100 ms of prompt evaluation)
// where each pair is a second apart. Overhead = median over pairs of (daemon − direct); the
// daemon's own path (first token minus the runner's prompt_eval_duration: HTTP, routing,
// scheduler, IPC both ways) is reported beside it.
import { startFirstTokenServer } from "./bench-child.js";
import { cpuSnapshot, foreignCores, median, promptOfTokens, QUIET_CORES, type BenchPlan } from "./bench-plan.js";

export interface TtftPair {
  promptTokens: number;
  daemonMs: number;
  directMs: number;
  /** The daemon's first token minus the runner's prompt_eval_duration. */
  pathMs: number;
  daemonFirst: boolean;
}

export interface TtftPairs {
  pairs: TtftPair[];
  /** Median of daemon − direct over the pairs. */
  overheadMs: number;
  pathMs: number;
  daemonMs: number;
  directMs: number;
  foreignCores: number;
  undisturbed: boolean;
}

/** The daemon's side of one prompt: request written → first token, and its path share. */
export type DaemonFirstToken = (prompt: string) => Promise<{ ms: number; pathMs: number; promptTokens: number }>;

export const PAIR_PROMPT_TOKENS = 8;

export async function ttftPairs(plan: BenchPlan, count: number, daemon: DaemonFirstToken, ownPids: number[]): Promise<TtftPairs> {
  const direct = await startFirstTokenServer(plan);
  const pairs: TtftPair[] = [];
  const s0 = await cpuSnapshot(["self", direct.pid, ...ownPids]);
  let s1 = s0;
  try {
    for (let i = 0; i < count; i++) {
      // Seeds 60.. share no prefix with each other (nor with the decode case's prompts) but BOS.
      const prompt = promptOfTokens(60 + i, PAIR_PROMPT_TOKENS);
      const daemonFirst = i % 2 === 0;
      let d: Awaited<ReturnType<DaemonFirstToken>>;
      let x: { ms: number; promptTokens: number };
      if (daemonFirst) {
        d = await daemon(prompt);
        x = await direct.time(prompt);
      } else {
        x = await direct.time(prompt);
        d = await daemon(prompt);
      }
      if (d.promptTokens !== x.promptTokens) throw new Error(`pair ${i}: ${d.promptTokens} prompt tokens through the daemon, ${x.promptTokens} direct`);
      pairs.push({ promptTokens: d.promptTokens, daemonMs: d.ms, directMs: x.ms, pathMs: d.pathMs, daemonFirst });
    }
    s1 = await cpuSnapshot(["self", direct.pid, ...ownPids]);
  } finally {
    await direct.stop();
  }
  const foreign = foreignCores(s0, s1);
  return {
    pairs,
    overheadMs: median(pairs.map((p) => p.daemonMs - p.directMs)),
    pathMs: median(pairs.map((p) => p.pathMs)),
    daemonMs: median(pairs.map((p) => p.daemonMs)),
    directMs: median(pairs.map((p) => p.directMs)),
    foreignCores: foreign,
    undisturbed: foreign < QUIET_CORES,
  };
}
