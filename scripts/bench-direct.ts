// The in-process side of `npm run bench`: the same generations as the daemon's runner performs,
// called directly on node-llama-cpp (same context shape, threads, sampling, prompt-prefix reuse),
// with nothing between the engine and the consumer. Run as a child of the bench (bench-child.ts),
// which sends a job over IPC and receives its result back: "side" is the decode / first-token
// case below, "profile" and "parallel" the direct halves of bench-profile.ts and bench-parallel.ts.
import { generate, loadEngine, textOf } from "./bench-engine.js";
import { runParallelDirect, type ParallelPlan } from "./bench-parallel-direct.js";
import { cpuMs, cpuSnapshot, foreignCores, readRssMiB, waitForQuiet, type BenchPlan, type DecodeRun, type SideResult, type TtftRun } from "./bench-plan.js";
import { runProfileDirect, type ProfilePlan } from "./bench-profile-direct.js";

export type DirectJob = { job: "side"; plan: BenchPlan } | { job: "profile"; plan: ProfilePlan } | { job: "parallel"; plan: ParallelPlan };

async function run(plan: BenchPlan): Promise<SideResult> {
  const e = await loadEngine(plan.modelPath, plan);
  const { model } = e;
  const seq = e.sequences[0]!;

  await generate(model, seq, plan.sampling, plan.warmup.prompt, plan.warmup.tokens);

  const quietWaitedMs = await waitForQuiet(["self"], plan.quietWaitMs);
  const cpu0 = await cpuSnapshot(["self"]);
  const decode: DecodeRun[] = [];
  for (let i = 0; i < plan.decode.runs; i++) {
    const s0 = await cpuSnapshot(["self"]);
    const c0 = await cpuMs(process.pid, "main");
    const g = await generate(model, seq, plan.sampling, plan.decode.prompt, plan.decode.tokens);
    const c1 = await cpuMs(process.pid, "main");
    const s1 = await cpuSnapshot(["self"]);
    const n = g.tokens.length;
    decode.push({
      promptTokens: g.promptTokens,
      tokens: n,
      doneReason: g.eog ? "stop" : "length",
      statsTokPerS: n / ((g.tEnd - g.tFirst) / 1000),
      wallTokPerS: (n - 1) / ((g.tEnd - g.tFirst) / 1000),
      chunks: n,
      text: textOf(model, g),
      cpuMsPerToken: { main: (c1 - c0) / n },
      foreignCores: foreignCores(s0, s1),
    });
  }

  const ttft: TtftRun[] = [];
  for (const prompt of plan.ttft.prompts) {
    const s0 = await cpuSnapshot(["self"]);
    const g = await generate(model, seq, plan.sampling, prompt, plan.ttft.tokens);
    const s1 = await cpuSnapshot(["self"]);
    ttft.push({ promptTokens: g.promptTokens, ms: g.tFirst - g.t0, foreignCores: foreignCores(s0, s1) });
  }

  const cpu1 = await cpuSnapshot(["self"]);
  const modelRssMiB = await readRssMiB("self");
  await e.dispose();
  return { decode, ttft, loadMs: e.loadMs, modelRssMiB, foreignCores: foreignCores(cpu0, cpu1), quietWaitedMs };
}

function dispatch(m: DirectJob): Promise<unknown> {
  switch (m.job) {
    case "side":
      return run(m.plan);
    case "profile":
      return runProfileDirect(m.plan);
    case "parallel":
      return runParallelDirect(m.plan);
  }
}

/**
 * The first-token server (bench-ttft-pairs.ts): loads once and warms up, says "ready", then times
 * each prompt it is sent (evaluate() → first token, as the runner measures prompt_eval_duration)
 * until it is told to stop. The daemon's runner holds the model at the same time, idle.
 */
async function serveFirstTokens(plan: BenchPlan): Promise<void> {
  const e = await loadEngine(plan.modelPath, plan);
  const seq = e.sequences[0]!;
  await generate(e.model, seq, plan.sampling, plan.warmup.prompt, plan.warmup.tokens);
  process.on("message", (m: { prompt?: string; stop?: true }) => {
    if (m.stop) {
      void e.dispose().then(() => process.exit(0));
      return;
    }
    void generate(e.model, seq, plan.sampling, m.prompt ?? "", 1).then(
      (g) => process.send?.({ ms: g.tFirst - g.t0, promptTokens: g.promptTokens }),
      (err: unknown) => process.send?.({ error: err instanceof Error ? err.message : String(err) }),
    );
  });
  process.send?.({ ready: true });
}

process.once("message", (m) => {
  if ((m as { job?: string }).job === "first-token-server") {
    serveFirstTokens((m as { plan: BenchPlan }).plan).catch((err: unknown) => {
      process.send?.({ error: err instanceof Error ? (err.stack ?? err.message) : String(err) }, () => process.exit(1));
    });
    return;
  }
  dispatch(m as DirectJob).then(
    (result) => process.send?.({ ok: true, result }, () => process.exit(0)),
    (err: unknown) => {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      process.send?.({ ok: false, message }, () => process.exit(1));
    },
  );
});
