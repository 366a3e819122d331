// The seam between the daemon and an inference engine (DESIGN.md §4).
// A Backend loads a model into a Runner; a Runner serves generation on its slots.

export interface DeviceInfo {
  id: string;
  kind: "cpu" | "gpu";
  name: string;
  totalBytes: number;
  freeBytes: number;
  /** GPUs: the ggml backend ("cuda", "vulkan", "metal"); "cpu" for system memory. */
  library?: string;
  /** CPU: free swap, which Ollama counts toward what a model may use. */
  swapFreeBytes?: number;
}

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
}

export interface LoadPlan {
  gpuLayers: number;
  /** GPU ids (DeviceInfo.id) the runner may use; absent = all. */
  gpus?: string[];
  /** Stall timeout of the load (OLLAMA_LOAD_TIMEOUT): reset by load progress; absent = none. */
  loadTimeoutMs?: number;
}

export interface LoadedInfo {
  contextLength: number; // per slot, as allocated
  gpuLayers: number;
  sizeBytes: number; // weights + KV + compute, as allocated
  vramBytes: number;
  threads: number;
  /** What the context really got (after any fallback in the runner). */
  flashAttention?: boolean;
  kvCacheTypeK?: string;
  kvCacheTypeV?: string;
  /** Fallbacks the runner had to make, for the daemon's log. */
  warnings?: string[];
}

/** Sampling options of one request, already defaulted (Ollama's DefaultOptions). */
export interface SamplingOptions {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number; // -1 = random
  repeatLastN: number; // 0 = off, -1 = num_ctx
  repeatPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
}

export interface GenerateJob {
  /** Rendered prompt text; special tokens in it are parsed as tokens. */
  prompt: string;
  /** Extra tokens placed before the prompt (the deprecated `context` of /api/generate). */
  prefixTokens?: number[];
  sampling: SamplingOptions;
  numPredict: number; // -1 = until stop (capped by the runner)
  stop: string[];
  /** Return prompt + output token ids in the done event (/api/generate `context`). */
  wantContext: boolean;
  /** Constrained decoding (`format`): the generic JSON grammar or a JSON schema. */
  grammar?: GrammarSpec;
  /** Context shift (default true): a prompt or generation that outgrows num_ctx drops old tokens. */
  shift?: boolean;
  /** Truncate a prompt longer than num_ctx (default true); false → PROMPT_TOO_LONG. */
  truncate?: boolean;
  /** Tokens kept at the start on a context shift (Ollama num_keep, default 4). */
  numKeep?: number;
  /** The daemon's id of the request, for the runner's log lines about this job. */
  requestId?: string;
}

/** A JSON schema already rewritten into the grammar compiler's dialect (daemon/prompt/format.ts). */
export type GrammarSpec = { kind: "json" } | { kind: "schema"; schema: Record<string, unknown> };

/** Runner error for a prompt that does not fit while truncation or shifting is off (a 400). */
export const PROMPT_TOO_LONG =
  "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length";
/** Prefix of the runner error for a `format` schema the grammar compiler rejects (a 400). */
export const INVALID_SCHEMA_PREFIX = "invalid JSON schema in format: ";

export interface GenerateStats {
  doneReason: "stop" | "length";
  promptEvalCount: number;
  promptEvalDurationNs: number;
  evalCount: number;
  evalDurationNs: number;
  context?: number[];
  /** Prompt tokens taken from the slot's cache instead of being evaluated (prefix reuse). */
  cachedTokens?: number;
  /** Where those came from: the slot's own cache, a prompt snapshot, or a copy of another slot. */
  cachedFrom?: "own" | "snapshot" | "slot";
}

export type RunnerEvent = { type: "text"; text: string } | ({ type: "done" } & GenerateStats);

export interface EmbedResult {
  embeddings: number[][];
  promptEvalCount: number;
}

export interface RunnerExit {
  code: number | null;
  signal: string | null;
  message: string;
}

/** What a runner's slots hold right now (read when metrics are scraped). */
export interface RunnerStats {
  /** Slots generating or embedding. */
  slotsBusy: number;
  /** KV cache cells holding tokens, over all slots (kept prompts included). */
  kvCellsUsed: number;
}

export interface Runner {
  readonly slots: number;
  readonly info: LoadedInfo;
  generate(job: GenerateJob, signal: AbortSignal): AsyncIterable<RunnerEvent>;
  embed(inputs: string[]): Promise<EmbedResult>;
  tokenize(text: string): Promise<number[]>;
  detokenize(tokens: number[]): Promise<string>;
  /** Its slots and KV cache right now; absent where the engine cannot say. */
  stats?(): Promise<RunnerStats>;
  /** The most CPU threads it may use from its next batch on (see daemon/scheduler/threads.ts). */
  setThreadBudget?(threads: number): void;
  /** Frees every byte it held; safe to call twice. With keepPromptCache the evaluated prompts
   *  are kept (where the backend can) for the next runner of the same model and shape. */
  close(opts?: { keepPromptCache?: boolean }): Promise<void>;
  /** Resolves when the runner process ends, for whatever reason. */
  readonly exited: Promise<RunnerExit>;
}

export interface Backend {
  readonly name: string;
  devices(): Promise<DeviceInfo[]>;
  load(modelPath: string, opts: LoadOptions, plan: LoadPlan, signal: AbortSignal): Promise<Runner>;
}

/** Raised for failures a client should see as the message of an error line / 500. */
export class RunnerError extends Error {}
