// `npm run bench`, profile case: prompt speed, time to first token and decode speed at three
// context depths, through the daemon (HTTP streaming) and directly on node-llama-cpp
// (bench-profile-direct.ts, in a child process); same prompts, seed, sampling, threads and context
// (num_ctx 2048, batch 512) on both sides. Rounds alternate which side goes first; each side
// loads, warms up, measures and unloads, so the two never compete for the cores. Per round and
// side, in order: a ~4-token prompt (decode from an almost empty context), a 256-token prompt
// (prompt tok/s, time to first token, decode after 256 tokens) and a 1,024-token prompt (decode
// after 1,024), each followed by BENCH_PROFILE_TOKENS (default 64) generated tokens; prompts are
// new in every round and share nothing but BOS. Daemon: prompt tok/s = prompt_eval_count /
// prompt_eval_duration of the final chunk; time to first token = request written → first
// non-empty NDJSON line; decode = (eval_count − 1) / (final chunk − first chunk), client clock.
// Direct: the same from evaluate() and the token loop. Medians over BENCH_PROFILE_ROUNDS (default
// 2) rounds, undisturbed runs when both sides have some. Issue 7 asks for time to first token on
// the 256-token prompt ≤ 0.8 × llama-server's; llama-server cannot be built here, so that ratio is
// derived: (daemon / direct, measured) × (direct / llama-server = 0.734, measured in issue 7).
import type http from "node:http";
import { loadModel, unloadModel, type BenchDaemon } from "./bench-daemon.js";
import { caseShape, measureQuietMs, median, ollamaOptions, pickQuiet, promptFor, promptOfTokens, waitForQuiet } from "./bench-plan.js";
import type { ProfilePlan, ProfilePoint, ProfileRun, ProfileSide } from "./bench-profile-direct.js";
import { alternateSides } from "./bench-rounds.js";
import { generate, LoadMeter } from "./bench-stream.js";

/** node-llama-cpp direct / llama-server, time to first token on a 256-token prompt (issue 7: 1935 / 2637 ms). */
export const DIRECT_OVER_LLAMA_SERVER_TTFT = 0.734;

export interface ProfileFigure {
  daemon: number;
  direct: number;
  /** daemon / direct */
  ratio: number;
}

export interface ProfileBench {
  rounds: number;
  tokens: number;
  numCtx: number;
  threads: number;
  /** Prompt tokens as the daemon counted them (prompt_eval_count), by point. */
  promptTokens: Record<ProfilePoint, number>;
  prompt256TokPerS: ProfileFigure;
  ttft256Ms: ProfileFigure;
  prompt1024TokPerS: ProfileFigure;
  decodeTokPerS: Record<ProfilePoint, ProfileFigure>;
  /** Time to first token on the 256-token prompt, daemon / llama-server, derived (see above). */
  llamaServer: { directOverLlamaServer: number; daemonOverLlamaServerDerived: number; target: number };
  sameText: boolean;
  undisturbed: boolean;
  foreignCoresMax: number;
  daemonRounds: ProfileSide[];
  directRounds: ProfileSide[];
}

const MODEL = "bench-profile:q4_0";
const POINTS: ProfilePoint[] = ["empty", "p256", "p1024"];
const PROMPT_TOKENS: Record<ProfilePoint, number> = { empty: 4, p256: 256, p1024: 1024 };

/** One round on the daemon: load, warm up, the three prompts, unload. */
async function daemonSide(agent: http.Agent, b: BenchDaemon, plan: ProfilePlan): Promise<ProfileSide> {
  const options = ollamaOptions(plan, plan.tokens);
  const gen = (prompt: string, n: number) => generate(agent, b.d.url, { model: b.model, prompt, raw: true, keep_alive: "10m", options: { ...options, num_predict: n } });
  const loadMs = await loadModel(agent, b, options);
  await gen(plan.warmup.prompt, plan.warmup.tokens);
  const meter = new LoadMeter(b.d.proc.pid!);
  const runs: ProfileRun[] = [];
  for (const { point, prompt } of plan.prompts) {
    await waitForQuiet(await meter.ownPids(), measureQuietMs(plan.quietWaitMs));
    await meter.begin();
    const g = await gen(prompt, plan.tokens);
    const foreign = await meter.end();
    const f = g.final;
    const n = Number(f.eval_count);
    runs.push({
      point,
      promptTokens: Number(f.prompt_eval_count),
      promptTokPerS: Number(f.prompt_eval_count) / (Number(f.prompt_eval_duration) / 1e9),
      ttftMs: g.tFirst - g.tSent,
      decodeTokPerS: (n - 1) / ((g.tDone - g.tFirst) / 1000),
      tokens: n,
      text: g.text,
      foreignCores: foreign,
    });
  }
  await unloadModel(agent, b, options);
  return { runs, loadMs };
}

function figure(daemon: ProfileSide[], direct: ProfileSide[], point: ProfilePoint, v: (x: ProfileRun) => number): ProfileFigure & { quiet: boolean } {
  const at = (s: ProfileSide[]) => s.flatMap((x) => x.runs.filter((r) => r.point === point));
  const p = pickQuiet(at(daemon), at(direct));
  const d = median(p.daemon.map(v));
  const x = median(p.direct.map(v));
  return { daemon: d, direct: x, ratio: d / x, quiet: p.quiet };
}

export async function benchProfile(opts: { modelPath: string; log?: (s: string) => void; quietWaitMs?: number }): Promise<ProfileBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = Math.max(1, Number(process.env.BENCH_PROFILE_ROUNDS) || 2);
  const tokens = Math.max(8, Number(process.env.BENCH_PROFILE_TOKENS) || 64);
  const plans: ProfilePlan[] = Array.from({ length: rounds }, (_, r) => ({
    ...caseShape(opts.modelPath, opts.quietWaitMs, 2048),
    warmup: { prompt: promptFor(40), tokens: 16 },
    tokens,
    prompts: POINTS.map((point, i) => ({ point, prompt: promptOfTokens(r * POINTS.length + i, PROMPT_TOKENS[point]) })),
  }));
  const f0 = (x: number) => x.toFixed(0);
  const f1 = (x: number) => x.toFixed(1);
  const { daemon: daemonRounds, direct: directRounds } = await alternateSides<ProfileSide>({
    tag: "profile-bench",
    env: { OLLAMA_NUM_PARALLEL: "1", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m" },
    model: MODEL,
    modelPath: opts.modelPath,
    rounds,
    daemon: (agent, b, r) => daemonSide(agent, b, plans[r]!),
    direct: (r) => ({ job: "profile", plan: plans[r]! }),
    show: (side, r, res, ms) => {
      const p256 = res.runs.find((x) => x.point === "p256")!;
      log(
        `  profile round ${r + 1} ${side.padEnd(6)} prompt ${p256.promptTokens} tokens ${f1(p256.promptTokPerS)} tok/s, first token ${f0(p256.ttftMs)} ms; ` +
          `decode after ${res.runs.map((x) => x.promptTokens).join("/")} prompt tokens ${res.runs.map((x) => f1(x.decodeTokPerS)).join("/")} tok/s; ` +
          `other processes ${Math.max(...res.runs.map((x) => x.foreignCores)).toFixed(2)} cores (${(ms / 1000).toFixed(1)} s)`,
      );
    },
  });
  const fig = (point: ProfilePoint, v: (x: ProfileRun) => number) => figure(daemonRounds, directRounds, point, v);
  const decode = Object.fromEntries(POINTS.map((p) => [p, fig(p, (x) => x.decodeTokPerS)])) as Record<ProfilePoint, ProfileFigure & { quiet: boolean }>;
  const prompt256 = fig("p256", (x) => x.promptTokPerS);
  const ttft256 = fig("p256", (x) => x.ttftMs);
  const prompt1024 = fig("p1024", (x) => x.promptTokPerS);
  const all = [...daemonRounds, ...directRounds].flatMap((s) => s.runs);
  for (const p of POINTS) {
    const counts = new Set(all.filter((x) => x.point === p).map((x) => x.promptTokens));
    if (counts.size !== 1 || !counts.has(PROMPT_TOKENS[p])) log(`  WARNING: ${p} prompts had ${[...counts].join("/")} tokens, not ${PROMPT_TOKENS[p]}`);
  }
  return {
    rounds,
    tokens,
    numCtx: plans[0]!.numCtx,
    threads: plans[0]!.threads,
    promptTokens: Object.fromEntries(POINTS.map((p) => [p, daemonRounds[0]?.runs.find((x) => x.point === p)?.promptTokens ?? NaN])) as Record<ProfilePoint, number>,
    prompt256TokPerS: prompt256,
    ttft256Ms: ttft256,
    prompt1024TokPerS: prompt1024,
    decodeTokPerS: decode,
    llamaServer: { directOverLlamaServer: DIRECT_OVER_LLAMA_SERVER_TTFT, daemonOverLlamaServerDerived: ttft256.ratio * DIRECT_OVER_LLAMA_SERVER_TTFT, target: 0.8 },
    sameText: daemonRounds.every((s, r) => s.runs.every((x, i) => x.text === directRounds[r]?.runs[i]?.text)),
    undisturbed: [prompt256, ttft256, ...Object.values(decode)].every((x) => x.quiet),
    foreignCoresMax: Math.max(...all.map((x) => x.foreignCores)),
    daemonRounds,
    directRounds,
  };
}
