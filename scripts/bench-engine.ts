// node-llama-cpp as the daemon's runner sets it up, minus the daemon: load a model and context
// (same threads, context size per sequence, batch, flash attention off, f16 KV cache) and run one
// generation with the runner's prompt-prefix reuse. Used by the direct sides of `npm run bench`
// (bench-direct.ts and the files it dispatches to), always inside the bench's child process.
import {
  getLlama,
  LlamaLogLevel,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { nowMs, type EngineShape, type Sampling } from "./bench-plan.js";

export { nowMs };

export interface Engine {
  model: LlamaModel;
  context: LlamaContext;
  sequences: LlamaContextSequence[];
  loadMs: number;
  dispose(): Promise<void>;
}

/** Loads the model and one context of `sequences` sequences, `numCtx` tokens each. */
export async function loadEngine(modelPath: string, shape: EngineShape, sequences = 1): Promise<Engine> {
  const t0 = nowMs();
  const llama: Llama = await getLlama({
    build: "never",
    gpu: false,
    maxThreads: shape.threads,
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
  });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0, defaultContextFlashAttention: false });
  const contextSize = Math.max(4, Math.min(shape.numCtx, model.trainContextSize));
  const context = await model.createContext({
    contextSize,
    sequences,
    batchSize: Math.min(shape.numBatch, contextSize),
    threads: shape.threads,
    flashAttention: false,
    experimentalKvCacheKeyType: "F16",
    experimentalKvCacheValueType: "F16",
  });
  const seqs = Array.from({ length: sequences }, () => context.getSequence());
  return {
    model,
    context,
    sequences: seqs,
    loadMs: nowMs() - t0,
    dispose: async () => {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

/** Tokenizes as the runner does (generate.ts promptTokens, raw prompt): special tokens parsed, BOS added. */
function promptTokens(model: LlamaModel, prompt: string): Token[] {
  const body = model.tokenize(prompt, true) as Token[];
  const bos = model.tokens.bos;
  if (bos != null && model.tokens.shouldPrependBosToken && body[0] !== bos) return [bos, ...body];
  return body;
}

export interface Generation {
  tokens: Token[];
  /** evaluate() called (after the prefix check), first token, last token, loop left; ms. */
  t0: number;
  tFirst: number;
  tLast: number;
  tEnd: number;
  eog: boolean;
  promptTokens: number;
}

/** One generation, as the runner's runGeneration does it minus text decoding and IPC. */
export async function generate(model: LlamaModel, seq: LlamaContextSequence, s: Sampling, prompt: string, limit: number): Promise<Generation> {
  const tokens = promptTokens(model, prompt);
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

/** The generated text as the daemon streams it (end-of-generation tokens dropped). */
export function textOf(model: LlamaModel, g: Generation): string {
  return model.detokenize(g.tokens.filter((t) => !model.isEogToken(t)), false);
}
