// The range of every option (reference §1.3) and what happens outside it (issue 13). One table,
// applied twice: by the daemon when it resolves a request's options (with a 400 for a refused
// value), and by the runner on whatever it is handed, so a caller that skipped the daemon's
// checks still cannot start 100,000 threads or divide logits by zero (defence in depth).
//
// Ollama's behaviour where it has one: num_ctx is clamped to [4, training context]; num_thread
// ≤ 0 and num_gpu < 0 mean automatic; -1 means "all" / "random" for num_keep, num_predict,
// repeat_last_n and seed; seed is taken as a uint32. Where Ollama is silent the daemon is
// protected: a value past what the machine or model can use means the same as the limit and is
// clamped to it (threads past the logical cores, top_k past any vocabulary, penalties past the
// point where a token is excluded anyway); a value with no meaning that would make the sampler
// divide by zero or flip signs is refused.
import os from "node:os";
import type { SamplingOptions } from "./backend.js";
import type { LoadOptions, RunnerJob } from "./llamacpp/protocol.js";

/** What a range depends on besides the value itself. */
export interface RangeLimits {
  /** Logical cores of this machine. */
  cores: number;
  /** The context size, when it is known (bounds num_batch). */
  numCtx?: number;
}

export interface OptionRange {
  /** The range in words, for messages and docs. */
  range: string;
  /** The value inside the range that stands for `v` (clamped or normalised). */
  bound: (v: number, limits: RangeLimits) => number;
  /** Why `v` is refused (a 400 at the daemon), if it is. */
  refuse?: (v: number) => string | undefined;
}

/** Native ints are int32; nothing larger is meaningful anywhere an option goes. */
export const INT32_MAX = 2 ** 31 - 1;
/** Sampling maths runs in float32: beyond these magnitudes a penalty or temperature acts the
 *  same as at them, and a denormal divisor would overflow logits to infinity (NaN probabilities). */
const FLOAT_MAX = 1e4;
const FLOAT_MIN = 1e-4;
/** The most tokens speculative decoding may propose per step (draft_num_predict). */
export const DRAFT_MAX = 64;

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));
/** A count where any negative value is Ollama's -1 sentinel. */
const countOrAll = (v: number): number => (v < 0 ? -1 : Math.min(v, INT32_MAX));
const probability: OptionRange = { range: "0 to 1", bound: (v) => clamp(v, 0, 1) };
const penalty: OptionRange = { range: `-${FLOAT_MAX} to ${FLOAT_MAX}`, bound: (v) => clamp(v, -FLOAT_MAX, FLOAT_MAX) };
/** Options ollamats accepts and type-checks but does not use (one GPU choice). */
const unused: OptionRange = { range: `0 to ${INT32_MAX} (not used by ollamats)`, bound: (v) => clamp(v, 0, INT32_MAX) };

/** Every numeric option Ollama accepts (deprecated ones are dropped before they get here). */
export const OPTION_RANGES: Readonly<Record<string, OptionRange>> = Object.freeze({
  // Runner options. num_ctx's upper bound, the model's training context, is applied at load.
  num_ctx: { range: "4 to the model's training context", bound: (v) => clamp(v, 4, INT32_MAX) },
  // llama.cpp itself raises a batch below 1 and caps one above the context.
  num_batch: { range: "1 to num_ctx", bound: (v, l) => clamp(v, 1, l.numCtx ?? INT32_MAX) },
  // Layers past the model's count are capped by the memory plan.
  num_gpu: { range: "-1 (automatic), 0 (CPU only) or a number of layers", bound: countOrAll },
  // More threads than cores only make llama.cpp's spinning workers fight for them.
  num_thread: { range: "0 (automatic) to the number of logical cores", bound: (v, l) => (v <= 0 ? 0 : Math.min(v, l.cores)) },
  main_gpu: unused,
  // Tokens a draft (or prompt lookup) proposes per step; more than this only wastes the draft's
  // and the model's work on tokens that are refuted (llama-server's default maximum is 16).
  draft_num_predict: { range: `0 (off) to ${DRAFT_MAX}`, bound: (v) => clamp(v, 0, DRAFT_MAX) },
  // Sampling and prediction. The runner caps num_keep at the context and num_predict at 10x it.
  num_keep: { range: "-1 (the whole prompt) or a number of tokens", bound: countOrAll },
  num_predict: { range: "-1 (until a stop) or a number of tokens", bound: countOrAll },
  repeat_last_n: { range: "-1 (num_ctx), 0 (off) or a number of tokens", bound: countOrAll },
  // Ollama converts the int64 to uint32 (a wrap); here any negative value asks for a random seed.
  seed: { range: "-1 (random) or 0 to 4294967295", bound: (v) => (v < 0 ? -1 : v % 2 ** 32) },
  // 0 (or below) turns top-k off; llama.cpp caps it at the vocabulary.
  top_k: { range: `0 (off) to ${INT32_MAX}`, bound: (v) => clamp(v, 0, INT32_MAX) },
  top_p: probability,
  min_p: probability,
  typical_p: probability,
  // 0 is greedy; a positive temperature too small to divide by in float32 is greedy as well.
  temperature: { range: `0 (greedy) to ${FLOAT_MAX}`, bound: (v) => (v < FLOAT_MIN ? 0 : Math.min(v, FLOAT_MAX)) },
  repeat_penalty: {
    range: `greater than 0 (1 is off), up to ${FLOAT_MAX}`,
    bound: (v) => clamp(v, FLOAT_MIN, FLOAT_MAX),
    // The penalty divides (or multiplies) a repeated token's logit: 0 makes it infinite.
    refuse: (v) => (v <= 0 ? "must be greater than 0 (1 turns the penalty off)" : undefined),
  },
  presence_penalty: penalty,
  frequency_penalty: penalty,
});

/** The value of option `key` inside its range (unknown keys are returned as they are). */
export function boundOption(key: string, v: number, limits: RangeLimits): number {
  const r = Object.hasOwn(OPTION_RANGES, key) ? OPTION_RANGES[key] : undefined;
  return r ? r.bound(v, limits) : v;
}

/**
 * `stop`: the runner checks every stop string against the text held back after each token, in
 * time that grows with the square of a stop's length; a few hundred short strings cover every
 * real use (OpenAI allows 4), and a megabyte-long one would stall the model's runner.
 */
export const STOP_LIMITS = Object.freeze({ count: 256, length: 256 });

function stopRefusal(stops: readonly string[]): string | undefined {
  if (stops.length > STOP_LIMITS.count) return `takes at most ${STOP_LIMITS.count} sequences; got ${stops.length}`;
  const long = stops.find((s) => s.length > STOP_LIMITS.length);
  if (long !== undefined) return `sequences may be at most ${STOP_LIMITS.length} characters long; got one of ${long.length}`;
  return undefined;
}

/** Why option `key` = `v` (already of the option's type) is refused, or undefined when it is
 *  accepted (possibly clamped). */
export function optionRefusal(key: string, v: unknown): string | undefined {
  if (key === "stop") return Array.isArray(v) ? stopRefusal(v as string[]) : undefined;
  const r = Object.hasOwn(OPTION_RANGES, key) ? OPTION_RANGES[key] : undefined;
  if (typeof v !== "number") return undefined;
  const why = r?.refuse?.(v);
  return why === undefined ? undefined : `${why}; got ${v}`;
}

const machine = (): RangeLimits => ({ cores: os.availableParallelism() });

/** The load options a runner may act on: every option inside its range on this machine. */
export function boundLoadOptions(o: LoadOptions, limits: RangeLimits = machine()): LoadOptions {
  const numCtx = boundOption("num_ctx", o.numCtx, limits);
  return {
    ...o,
    numCtx,
    numBatch: boundOption("num_batch", o.numBatch, { ...limits, numCtx }),
    numGpu: boundOption("num_gpu", o.numGpu, limits),
    numThread: boundOption("num_thread", o.numThread, limits),
    slots: clamp(o.slots, 1, INT32_MAX),
  };
}

/** Each sampling field and its option. */
const SAMPLING_KEYS: Readonly<Record<keyof SamplingOptions, string>> = {
  temperature: "temperature",
  topK: "top_k",
  topP: "top_p",
  minP: "min_p",
  seed: "seed",
  repeatLastN: "repeat_last_n",
  repeatPenalty: "repeat_penalty",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
};

/** Sampling options inside their ranges (a refused value becomes the nearest safe one). */
export function boundSampling(s: SamplingOptions, limits: RangeLimits = machine()): SamplingOptions {
  const out = { ...s };
  for (const [field, key] of Object.entries(SAMPLING_KEYS) as Array<[keyof SamplingOptions, string]>) {
    out[field] = boundOption(key, s[field], limits);
  }
  return out;
}

/** A generation job as the runner may run it: sampling, num_predict and num_keep in range, and
 *  only stop strings within the limits (one past them is dropped, so it can never stall). */
export function boundJob(job: RunnerJob, limits: RangeLimits = machine()): RunnerJob {
  return {
    ...job,
    stop: job.stop.filter((s) => s.length <= STOP_LIMITS.length).slice(0, STOP_LIMITS.count),
    sampling: boundSampling(job.sampling, limits),
    numPredict: boundOption("num_predict", job.numPredict, limits),
    ...(job.numKeep !== undefined ? { numKeep: boundOption("num_keep", job.numKeep, limits) } : {}),
  };
}
