// Messages between the daemon (host) and a runner child process over Node's IPC channel.
import type { GenerateStats, LoadedInfo, Logprob, SamplingOptions, StateStore } from "../backend.js";
import type { EngineErrorCode } from "../errors.js";

export type RunnerLogLevel = "debug" | "info" | "warn" | "error";

/** Options fixed when a runner is loaded; a request that differs forces a reload. */
export interface LoadOptions {
  numCtx: number; // per slot
  numBatch: number;
  numGpu: number; // -1 = automatic
  numThread: number; // 0 = all cores
  useMmap: boolean | undefined;
  slots: number;
  flashAttention: boolean | undefined; // undefined = auto
  kvCacheTypeK: string; // "" | f16 | q8_0 | q4_0
  kvCacheTypeV: string;
  embedding: boolean;
  /** LoRA adapter GGUF paths (Modelfile ADAPTER), applied to every sequence. */
  adapters: string[];
  /** Speculative decoding (speculative.ts): the draft model's GGUF path (Modelfile DRAFT), or
   *  prompt lookup for a model without one; `draftNumPredict` tokens proposed per step. All
   *  absent: none (a model without a draft, an embedding model, draft_num_predict 0). */
  draft?: string;
  promptLookup?: boolean;
  draftNumPredict?: number;
  /** A drafted token less probable than this (to the draft) ends the step's proposal. */
  draftMinConfidence?: number;
}

export interface LoadPlan {
  gpuLayers: number;
  /** The draft model's layers on the GPU (all or none; draft-memory.ts). */
  draftGpuLayers?: number;
  /** GPU ids (DeviceInfo.id) the runner may use; absent = all. */
  gpus?: string[];
  /** Stall timeout of the load (OLLAMA_LOAD_TIMEOUT): reset by load progress; absent = none. */
  loadTimeoutMs?: number;
}

/** `format` for the runner: node-llama-cpp's generic JSON grammar, or a schema already compiled
 *  to GBNF by the backend (json-schema.ts, before any load). */
export type GrammarSpec = { kind: "json" } | { kind: "gbnf"; grammar: string };

/** A generation as the runner child takes it: a rendered prompt. */
export interface RunnerJob {
  prompt: string;
  prefixTokens?: number[];
  sampling: SamplingOptions;
  numPredict: number;
  stop: string[];
  wantContext: boolean;
  grammar?: GrammarSpec;
  shift?: boolean;
  truncate?: boolean;
  numKeep?: number;
  /** Log probabilities with this many alternatives per token (0..20); absent: none. */
  logprobs?: number;
  /** The daemon's id of the request, for the runner's log line about it. */
  requestId?: string;
}

/** What a probe child found: node-llama-cpp reports the sum over its GPUs, and their names. */
export interface GpuProbe {
  library: string | false; // "cuda" | "vulkan" | "metal" | false (CPU only)
  names: string[];
  totalBytes: number;
  freeBytes: number;
}

/** The argument a spare runner is started with (spare-runner.ts); its command line drops it once
 *  the spare loads a model, so `ps` and tests tell a spare from a runner serving a model. */
export const SPARE_ARG = "--spare";

export type { StateStore };

export type HostMessage =
  | { type: "probe" }
  /** A spare runner: load node-llama-cpp's binary now, for a later load (gpu: layers may go to a GPU). */
  | { type: "prepare"; gpu: boolean }
  | { type: "load"; modelPath: string; opts: LoadOptions; gpuLayers: number; draftGpuLayers?: number; states?: StateStore }
  | { type: "generate"; id: number; job: RunnerJob }
  | { type: "abort"; id: number }
  | { type: "embed"; id: number; inputs: string[] }
  | { type: "rank"; id: number; query: string; documents: string[]; truncate: boolean }
  /** `prompt`: with the BOS token a generation puts first. */
  | { type: "tokenize"; id: number; text: string; prompt?: boolean }
  | { type: "detokenize"; id: number; tokens: number[] }
  | { type: "threads"; threads: number }
  /** Processes that are paused while this runner computes (the spare): their CPU is not taken. */
  | { type: "yielding"; pids: number[] }
  /** Answered with a RunnerStats result. */
  | { type: "stats"; id: number }
  | { type: "close"; keepPromptCache?: boolean };

export type ChildMessage =
  | { type: "probed"; gpu: GpuProbe }
  /** A spare's binary is ready (or failed to be: the load meets that again): it is idle now. */
  | { type: "prepared" }
  /** Model load progress, 0..1 (resets the load stall timer). */
  | { type: "progress"; progress: number }
  | { type: "loaded"; info: LoadedInfo }
  | { type: "load-error"; message: string }
  /** Text produced since the last message; several tokens may be joined into one message. */
  | { type: "text"; id: number; text: string; logprobs?: Logprob[] }
  | ({ type: "done"; id: number } & GenerateStats)
  | { type: "result"; id: number; value: unknown }
  /** A line for the daemon's log (request_id among the fields when it is about a request). */
  | { type: "log"; level: RunnerLogLevel; msg: string; fields?: Record<string, string | number | boolean> }
  | { type: "error"; id: number; message: string; code?: EngineErrorCode };
