// The direct side of the bench: plain node-llama-cpp with its defaults, as an application would
// call it (`getLlama()`, `loadModel({modelPath})`, `createContext({contextSize, threads})`,
// `LlamaCompletion`), in a process of its own. The only setting given is the thread count (one
// per core, as the daemon's runner uses on an idle machine): node-llama-cpp's default of 4 on a
// 2-core machine is ~50× slower, which no one would measure against. Sampling is an input, not
// configuration: greedy without repeat penalty on both sides, so the texts can be compared.
//
// Driven over IPC by direct.ts: one request at a time, one reply each.
import os from "node:os";
import { getLlama, LlamaCompletion, type Llama, type LlamaContext, type LlamaModel } from "node-llama-cpp";
import { nowMs } from "./client.js";
import { completionRoom } from "./direct.js";
import { promptOfWords } from "../bench-plan.js";

export type DirectRequest =
  | { op: "open"; modelPath: string; contextSize: number; threads?: number }
  /** Evaluates the prompt (BOS added by LlamaCompletion) and generates up to maxTokens. */
  | { op: "complete"; prompt: string; maxTokens: number }
  /** Disposes what is open, then loads `modelPath` and its context; both timed. */
  | { op: "swap"; modelPath: string; contextSize: number; threads?: number }
  /** The longest fresh prompt (bench-plan.ts promptOfWords for `seed`) that is at most `tokens`
   *  tokens with BOS under this model's tokenizer: the test vocabulary makes each word one token,
   *  another model's may make it several. */
  | { op: "fit"; seed: number; tokens: number }
  /** getLlama only: a process ready to load, as the daemon's spare runner is. */
  | { op: "prepare" }
  | { op: "close" };

export interface Completion {
  promptTokens: number;
  /** generateCompletion called, first token, last token; ms. */
  t0: number;
  tFirst: number;
  tLast: number;
  tokens: number;
  text: string;
}

export interface Swap {
  disposeMs: number;
  /** loadModel + createContext, node-llama-cpp already initialised (getLlama done). */
  loadMs: number;
}

let llama: Llama | undefined;
let model: LlamaModel | undefined;
let context: LlamaContext | undefined;
let completion: LlamaCompletion | undefined;

/** getLlama once per process (what a spare runner has done before its load). */
async function ready(): Promise<Llama> {
  return (llama ??= await getLlama());
}

async function open(modelPath: string, contextSize: number, threads = os.availableParallelism()): Promise<number> {
  const l = await ready();
  const t0 = nowMs();
  model = await l.loadModel({ modelPath });
  context = await model.createContext({ contextSize, threads });
  completion = new LlamaCompletion({ contextSequence: context.getSequence() });
  return nowMs() - t0;
}

async function dispose(): Promise<number> {
  const t0 = nowMs();
  completion?.dispose();
  await context?.dispose();
  await model?.dispose();
  completion = undefined;
  context = undefined;
  model = undefined;
  return nowMs() - t0;
}

async function complete(prompt: string, maxTokens: number): Promise<Completion> {
  if (!completion || !model || !context) throw new Error("no model is open");
  const times: number[] = [];
  const t0 = nowMs();
  // Tokenized as the daemon's runner tokenizes a raw prompt (special tokens parsed; LlamaCompletion
  // adds BOS): given a string, LlamaCompletion trims its leading space, so the two sides would
  // evaluate different tokens.
  const tokens = model.tokenize(prompt, true);
  const promptTokens = tokens.length + bosCount(model);
  // Past this, LlamaCompletion drops the prompt's start: the sides would evaluate different tokens.
  const room = completionRoom(context.contextSize);
  if (promptTokens > room) throw new Error(`a ${promptTokens}-token prompt is cut to ${room} tokens by LlamaCompletion in a ${context.contextSize}-token context: give it more context`);
  const text = await completion.generateCompletion(tokens, {
    maxTokens,
    repeatPenalty: false,
    onToken: (tokens) => {
      const t = nowMs();
      for (let i = 0; i < tokens.length; i++) times.push(t);
    },
  });
  return { promptTokens, t0, tFirst: times[0] ?? NaN, tLast: times.at(-1) ?? NaN, tokens: times.length, text };
}

/** The BOS token LlamaCompletion (and the runner) put before a prompt, if the model has one. */
const bosCount = (m: LlamaModel): number => (m.tokens.bos != null ? 1 : 0);

/** Tokens the runner evaluates for a raw prompt: special tokens parsed, BOS added. */
function promptTokenCount(m: LlamaModel, prompt: string): number {
  return m.tokenize(prompt, true).length + bosCount(m);
}

function fit(seed: number, tokens: number): { prompt: string; tokens: number } {
  if (!model) throw new Error("no model is open");
  const m = model;
  // Tokens grow with words (never shrink), so the longest fitting prompt is found by bisection.
  let lo = 0;
  let hi = tokens;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (promptTokenCount(m, promptOfWords(seed, mid)) <= tokens) lo = mid;
    else hi = mid - 1;
  }
  const prompt = promptOfWords(seed, lo);
  return { prompt, tokens: promptTokenCount(m, prompt) };
}

async function handle(m: DirectRequest): Promise<unknown> {
  switch (m.op) {
    case "open":
      return { loadMs: await open(m.modelPath, m.contextSize, m.threads) };
    case "complete":
      return complete(m.prompt, m.maxTokens);
    case "swap": {
      const disposeMs = await dispose();
      return { disposeMs, loadMs: await open(m.modelPath, m.contextSize, m.threads) } satisfies Swap;
    }
    case "fit":
      return fit(m.seed, m.tokens);
    case "prepare":
      await ready();
      return {};
    case "close":
      await dispose();
      await llama?.dispose();
      return {};
  }
}

process.on("message", (m) => {
  handle(m as DirectRequest).then(
    (value) => process.send?.({ ok: true, value }),
    (err: unknown) => process.send?.({ ok: false, message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
