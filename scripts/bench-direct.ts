// The in-process side of `npm run bench`: the same generations as the daemon's runner performs,
// called directly on node-llama-cpp (same context shape, threads, sampling, prompt-prefix reuse),
// with nothing between the engine and the consumer. Run as a child of bench.ts, which sends the
// plan over IPC and receives a SideResult back.
import {
  getLlama,
  LlamaLogLevel,
  type LlamaContextSequence,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { cpuMs, cpuSnapshot, foreignCores, readRssMiB, waitForQuiet, type BenchPlan, type DecodeRun, type SideResult, type TtftRun } from "./bench-plan.js";

function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Tokenizes as the runner does (generate.ts promptTokens, raw prompt): special tokens parsed, BOS added. */
function promptTokens(model: LlamaModel, prompt: string): Token[] {
  const body = model.tokenize(prompt, true) as Token[];
  const bos = model.tokens.bos;
  if (bos != null && model.tokens.shouldPrependBosToken && body[0] !== bos) return [bos, ...body];
  return body;
}

interface Generation {
  tokens: Token[];
  t0: number;
  tFirst: number;
  tLast: number;
  tEnd: number;
  eog: boolean;
  promptTokens: number;
}

/** One generation, as the runner's runGeneration does it minus text decoding and IPC. */
async function generate(model: LlamaModel, seq: LlamaContextSequence, plan: BenchPlan, prompt: string, limit: number): Promise<Generation> {
  const tokens = promptTokens(model, prompt);
  const s = plan.sampling;
  const t0 = nowMs();
  const common = seq.compareContextTokens(tokens).firstDifferentIndex;
  const keep = Math.min(common, tokens.length - 1);
  if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
  const out: Token[] = [];
  let tFirst = 0;
  let tLast = 0;
  const gen = seq.evaluate(tokens.slice(keep), {
    temperature: s.temperature,
    topK: s.topK,
    topP: s.topP,
    minP: s.minP,
    seed: s.seed,
    repeatPenalty: undefined, // repeat_penalty 1: off, as the runner passes it
  });
  for await (const token of gen) {
    tLast = nowMs();
    if (out.length === 0) tFirst = tLast;
    out.push(token);
    if (out.length >= limit) break;
  }
  const tEnd = nowMs();
  return { tokens: out, t0, tFirst: tFirst || tEnd, tLast: tLast || tEnd, tEnd, eog: out.length < limit, promptTokens: tokens.length };
}

async function run(plan: BenchPlan): Promise<SideResult> {
  const tLoad = nowMs();
  const llama = await getLlama({
    build: "never",
    gpu: false,
    maxThreads: plan.threads,
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
  });
  const model = await llama.loadModel({ modelPath: plan.modelPath, gpuLayers: 0, defaultContextFlashAttention: false });
  const contextSize = Math.max(4, Math.min(plan.numCtx, model.trainContextSize));
  const context = await model.createContext({
    contextSize,
    sequences: 1,
    batchSize: Math.min(plan.numBatch, contextSize),
    threads: plan.threads,
    flashAttention: false,
    experimentalKvCacheKeyType: "F16",
    experimentalKvCacheValueType: "F16",
  });
  const seq = context.getSequence();
  const loadMs = nowMs() - tLoad;

  await generate(model, seq, plan, plan.warmup.prompt, plan.warmup.tokens);

  const quietWaitedMs = await waitForQuiet(["self"], plan.quietWaitMs);
  const cpu0 = await cpuSnapshot(["self"]);
  const decode: DecodeRun[] = [];
  for (let i = 0; i < plan.decode.runs; i++) {
    const s0 = await cpuSnapshot(["self"]);
    const c0 = await cpuMs(process.pid, "main");
    const g = await generate(model, seq, plan, plan.decode.prompt, plan.decode.tokens);
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
      text: model.detokenize(g.tokens.filter((t) => !model.isEogToken(t)), false),
      cpuMsPerToken: { main: (c1 - c0) / n },
      foreignCores: foreignCores(s0, s1),
    });
  }

  const ttft: TtftRun[] = [];
  for (const prompt of plan.ttft.prompts) {
    const s0 = await cpuSnapshot(["self"]);
    const g = await generate(model, seq, plan, prompt, plan.ttft.tokens);
    const s1 = await cpuSnapshot(["self"]);
    ttft.push({ promptTokens: g.promptTokens, ms: g.tFirst - g.t0, foreignCores: foreignCores(s0, s1) });
  }

  const cpu1 = await cpuSnapshot(["self"]);
  const modelRssMiB = await readRssMiB("self");
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  return { decode, ttft, loadMs, modelRssMiB, foreignCores: foreignCores(cpu0, cpu1), quietWaitedMs };
}

process.once("message", (plan) => {
  run(plan as BenchPlan).then(
    (result) => process.send?.({ ok: true, result }, () => process.exit(0)),
    (err: unknown) => {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      process.send?.({ ok: false, message }, () => process.exit(1));
    },
  );
});
