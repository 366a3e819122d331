// Ollama's option precedence: DefaultOptions → model PARAMETERs → request `options`.
// Unknown keys are ignored; a value of the wrong JSON type is a 500 with Ollama's words; every number is brought
// into its range (backends/option-ranges.ts), and a value with no meaning is refused with a 400.
import os from "node:os";
import type { RunnerOptions, SamplingOptions } from "../backends/backend.js";
import { boundOption, optionRefusal, type RangeLimits } from "../backends/option-ranges.js";
import { DEPRECATED_OPTIONS, OPTION_TYPES } from "../registry/modelfile.js";
import { ApiError, badRequest } from "./errors.js";

export type { RunnerOptions };

export interface RequestRunOptions {
  runner: RunnerOptions;
  sampling: SamplingOptions;
  numPredict: number;
  numKeep: number;
  stop: string[];
  /** Only what the model's PARAMETERs and the request set (typed, in range), without defaults:
   *  for engines that apply defaults of their own (a remote upstream). */
  explicit: Record<string, unknown>;
}

/** Ollama's words for the types (Options.FromMap: Go's float32, "array" for a slice). */
const TYPE_WORD: Record<string, string> = { int: "integer", float: "float32", bool: "boolean", "string[]": "array" };

/** A value of the wrong JSON type, answered exactly as Ollama does (reference §1.3). */
const wrongType = (key: string, what: string) => new ApiError("invalid_option", `option "${key}" must be of ${what}`);

function coerce(key: string, value: unknown): unknown {
  const type = Object.hasOwn(OPTION_TYPES, key) ? OPTION_TYPES[key] : undefined;
  // Ollama's Options no longer hold the deprecated keys: in the API they are ignored, any type.
  if (type === undefined || DEPRECATED_OPTIONS.has(key) || value === null || value === undefined) return undefined;
  const fail = () => wrongType(key, `type ${TYPE_WORD[type] ?? type}`);
  switch (type) {
    case "int":
      if (typeof value !== "number" || !Number.isFinite(value)) throw fail();
      return Math.trunc(value); // Ollama accepts JSON floats for ints and truncates them
    case "float":
      if (typeof value !== "number" || !Number.isFinite(value)) throw fail();
      return value;
    case "bool":
      if (typeof value !== "boolean") throw fail();
      return value;
    case "string[]":
      if (!Array.isArray(value)) throw fail(); // a bare string too: Ollama wants the array
      if (!value.every((v) => typeof v === "string")) throw wrongType(key, "an array of strings");
      return value;
    default:
      return undefined;
  }
}

type Source = "model" | "request";

/** The layers merged, each value typed and remembered with the layer it came from. */
function merge(layers: Array<[Source, Record<string, unknown> | undefined]>): Map<string, { value: unknown; source: Source }> {
  const out = new Map<string, { value: unknown; source: Source }>();
  for (const [source, layer] of layers) {
    if (!layer) continue;
    for (const [k, v] of Object.entries(layer)) {
      const typed = coerce(k, v);
      if (typed !== undefined) out.set(k, { value: typed, source });
    }
  }
  return out;
}

/** A 400 for a value outside what its option can mean, naming the option, its range and where
 *  the value came from (a model's PARAMETER is fixed by re-creating the model or overriding it). */
function refuse(merged: Map<string, { value: unknown; source: Source }>): void {
  for (const [k, { value, source }] of merged) {
    const why = optionRefusal(k, value);
    if (why === undefined) continue;
    const from = source === "model" ? " (set by the model's PARAMETER: override it in the request's options, or re-create the model)" : "";
    throw badRequest(`option "${k}" ${why}${from}`);
  }
}

export interface OptionDefaults {
  numCtx: number;
  /** Logical cores (num_thread's bound); this machine's when absent. */
  cores?: number;
}

export function resolveOptions(
  defaults: OptionDefaults,
  modelParams: Record<string, unknown> | undefined,
  request: Record<string, unknown> | undefined,
): RequestRunOptions {
  const merged = merge([
    ["model", modelParams],
    ["request", request],
  ]);
  refuse(merged);
  const limits: RangeLimits = { cores: defaults.cores ?? os.availableParallelism() };
  const num = (k: string, d: number) => {
    const v = merged.get(k)?.value;
    return boundOption(k, typeof v === "number" ? v : d, limits);
  };
  const numCtx = num("num_ctx", defaults.numCtx);
  limits.numCtx = numCtx;
  const mmap = merged.get("use_mmap")?.value;
  const lookup = merged.get("prompt_lookup")?.value;
  const stop = merged.get("stop")?.value;
  return {
    runner: {
      numCtx,
      numBatch: num("num_batch", 512),
      numGpu: num("num_gpu", -1),
      numThread: num("num_thread", 0),
      useMmap: typeof mmap === "boolean" ? mmap : undefined,
      ...(merged.has("draft_num_predict") ? { draftNumPredict: num("draft_num_predict", 0) } : {}),
      ...(lookup === true ? { promptLookup: true } : {}),
    },
    sampling: {
      temperature: num("temperature", 0.8),
      topK: num("top_k", 40),
      topP: num("top_p", 0.9),
      minP: num("min_p", 0),
      seed: num("seed", -1),
      repeatLastN: num("repeat_last_n", 64),
      repeatPenalty: num("repeat_penalty", 1.0),
      presencePenalty: num("presence_penalty", 0),
      frequencyPenalty: num("frequency_penalty", 0),
    },
    numPredict: num("num_predict", -1),
    numKeep: num("num_keep", 4),
    stop: Array.isArray(stop) ? (stop as string[]) : [],
    explicit: Object.fromEntries([...merged].map(([k, { value }]) => [k, typeof value === "number" ? boundOption(k, value, limits) : value])),
  };
}
