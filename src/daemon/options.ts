// Ollama's option precedence: DefaultOptions → model PARAMETERs → request `options`.
// Unknown keys are ignored; a value of the wrong JSON type is rejected.
import type { SamplingOptions } from "../backends/backend.js";
import { OPTION_TYPES } from "../registry/modelfile.js";
import { badRequest } from "./errors.js";

export interface RunnerOptions {
  numCtx: number;
  numBatch: number;
  numGpu: number;
  numThread: number;
  useMmap: boolean | undefined;
}

export interface RequestRunOptions {
  runner: RunnerOptions;
  sampling: SamplingOptions;
  numPredict: number;
  numKeep: number;
  stop: string[];
}

const TYPE_WORD: Record<string, string> = { int: "integer", float: "float", bool: "boolean", "string[]": "array of strings" };

function coerce(key: string, value: unknown): unknown {
  const type = OPTION_TYPES[key];
  if (type === undefined || value === null || value === undefined) return undefined;
  const fail = () => badRequest(`option "${key}" must be of type ${TYPE_WORD[type] ?? type}`);
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
      if (typeof value === "string") return [value];
      if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) throw fail();
      return value;
    default:
      return undefined;
  }
}

function merge(layers: Array<Record<string, unknown> | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const layer of layers) {
    if (!layer) continue;
    for (const [k, v] of Object.entries(layer)) {
      const typed = coerce(k, v);
      if (typed !== undefined) out[k] = typed;
    }
  }
  return out;
}

export interface OptionDefaults {
  numCtx: number;
}

export function resolveOptions(
  defaults: OptionDefaults,
  modelParams: Record<string, unknown> | undefined,
  request: Record<string, unknown> | undefined,
): RequestRunOptions {
  const o = merge([modelParams, request]);
  const int = (k: string, d: number) => (typeof o[k] === "number" ? (o[k] as number) : d);
  const float = int;
  return {
    runner: {
      numCtx: Math.max(4, int("num_ctx", defaults.numCtx)),
      numBatch: Math.max(1, int("num_batch", 512)),
      numGpu: int("num_gpu", -1),
      numThread: Math.max(0, int("num_thread", 0)),
      useMmap: typeof o.use_mmap === "boolean" ? o.use_mmap : undefined,
    },
    sampling: {
      temperature: Math.max(0, float("temperature", 0.8)),
      topK: int("top_k", 40),
      topP: float("top_p", 0.9),
      minP: float("min_p", 0),
      seed: int("seed", -1),
      repeatLastN: int("repeat_last_n", 64),
      repeatPenalty: float("repeat_penalty", 1.0),
      presencePenalty: float("presence_penalty", 0),
      frequencyPenalty: float("frequency_penalty", 0),
    },
    numPredict: int("num_predict", -1),
    numKeep: int("num_keep", 4),
    stop: Array.isArray(o.stop) ? (o.stop as string[]) : [],
  };
}
