// The seam between the daemon and an inference engine (DESIGN.md §4). Nothing above
// src/backends/ names an engine: the scheduler asks the backend that handles a model for its key,
// its placement and its reload rule; the services hand a runner a job and read typed events.
import type { ToolCall } from "../api/types.js";
import type { ModelSpec } from "../registry/model-spec.js";
import type { EngineError } from "./errors.js";

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

/** A directory the daemon owns (mode 0700, removed when it stops) where a backend may keep what
 *  outlives a runner, such as a local engine's slot KV states across unloads. */
export interface StateStore {
  dir: string;
  /** The most bytes of state files one runner writes when it is unloaded. */
  budgetBytes: number;
}

/** The runner options of a request (Ollama's runner options: a change means a reload). */
export interface RunnerOptions {
  numCtx: number;
  numBatch: number;
  numGpu: number;
  numThread: number;
  useMmap: boolean | undefined;
  /** draft_num_predict when the model's PARAMETERs or the request set it (the default depends
   *  on whether the model has a draft, which the backend knows). */
  draftNumPredict?: number;
  /** prompt_lookup: speculative decoding from the prompt's own tokens (ollamats). */
  promptLookup?: boolean;
}

/**
 * Where and how a model would run, decided by its backend (memory, layers, upstreams); opaque
 * to the scheduler except for these fields. Backends extend it with what their load needs.
 */
export interface Placement {
  /** Fits next to what is loaded now; false: the scheduler unloads an idle runner first (or waits). */
  fits: boolean;
  /** Why it cannot load even with nothing else loaded (a 500 with this message). */
  refusal?: string;
  /** Holds memory on this machine: counts toward OLLAMA_MAX_LOADED_MODELS and may be evicted for room. */
  local: boolean;
  /** Computes on this machine's CPU with automatic threads (the cores are shared, threads.ts). */
  sharesCpu: boolean;
  /** Fields of the "loading" log line. */
  describe: Record<string, unknown>;
  /** Said once in the log when it loads. */
  warnings?: string[];
}

export interface Backend<P extends Placement = Placement, W = unknown> {
  readonly name: string;
  /** This backend serves the model (a local GGUF, a remote engine, …). */
  handles(spec: ModelSpec): boolean;
  /** What the scheduler keys runners by: one runner per key (Ollama's scheduler key). */
  modelKey(spec: ModelSpec): string;
  /** Refuses a model this daemon may not serve (a 4xx), before anything is queued. */
  admit?(spec: ModelSpec): void;
  /** What a runner of this model can do; each missing feature names why (a 400). */
  features(spec: ModelSpec): RunnerFeatures;
  /** `format` compiled for this engine (off the event loop where that is work); throws or
   *  rejects with EngineError("invalid_schema") before any load. */
  compileFormat(format: StructuredOutput): CompiledFormat | Promise<CompiledFormat>;
  /** What a request wants of a runner (cheap: it is asked on every request). */
  want(spec: ModelSpec, runner: RunnerOptions): W;
  /** A loaded runner placed as `loaded` cannot serve a request that wants `wanted`. */
  needsReload(loaded: P, wanted: W): boolean;
  /** Where the model would run (memory, devices, upstreams); asked only when it must load. */
  plan(spec: ModelSpec, wanted: W): Promise<P>;
  load(spec: ModelSpec, placement: P, signal: AbortSignal): Promise<Runner>;
  /** Looks at devices or upstreams ahead of the first load. */
  warmUp?(log: (msg: string) => void): void;
  /** Ends what the backend keeps besides runners (a warm spare process); called at shutdown. */
  close?(): Promise<void>;
}

/** A feature a runner lacks: the reason, for the 400 that refuses a request needing it. */
export type Missing = { missing: string };
export interface RunnerFeatures {
  /** Takes messages + tools + think and templates them itself (else a rendered prompt). */
  messages: boolean;
  tokenize: true | Missing;
  logprobs: true | Missing;
  images: true | Missing;
  embed: true | Missing;
  /** Scores documents for a query (a reranking model). */
  rank: true | Missing;
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

/** `format` as the client sent it, shape-checked: any JSON, or a JSON Schema object. */
export type StructuredOutput =
  | { kind: "json" }
  /** `prefix`: text the output starts with before the value (a tool call's tag, tool_choice).
   *  `compact`: at most one space between tokens (a forced tool call: its JSON is re-serialized,
   *  so whitespace means nothing, and a sampled model could spend its whole budget on it). */
  | { kind: "schema"; schema: Record<string, unknown>; prefix?: string; compact?: boolean }
  /** Text of a fixed shape with values in it: a tool call a model writes as markup (Qwen3-Coder's
   *  XML, GLM's pairs), for tool_choice. Engines that take only schemas refuse it. */
  | { kind: "markup"; pieces: readonly MarkupPiece[] };

/** One part of a markup shape. */
export type MarkupPiece =
  /** These characters. */
  | { text: string }
  /** A compact JSON value of `schema`, its $refs resolved in `root` (the tool's parameters). */
  | { json: unknown; root: unknown }
  /** Any text that contains none of `avoid` (a value written raw, up to its closing tag) and no
   *  match of `patterns` (regular expressions, no anchors: what a reader takes as the end). */
  | { free: readonly string[]; patterns?: readonly string[] }
  /** One of these sequences. */
  | { choice: readonly (readonly MarkupPiece[])[] }
  /** Members in order, required ones always, optional ones free to be left out, with
   *  `separator` between those written. */
  | { members: readonly { pieces: readonly MarkupPiece[]; required: boolean }[]; separator: string }
  /** `pieces` any number of times (none too), with `separator` between them. */
  | { repeat: readonly MarkupPiece[]; separator: string };
/** `format` in the form one engine needs (a grammar, a response_format, …); opaque above. */
export type CompiledFormat = { readonly backend: string; readonly value: unknown };

export interface JobMessage {
  role: string;
  content: string;
  thinking?: string;
  tool_calls?: Array<{ id?: string; function: { index?: number; name: string; arguments?: unknown } }>;
  tool_name?: string;
  tool_call_id?: string;
}

interface JobCommon {
  sampling: SamplingOptions;
  /** Options as the model's PARAMETERs and the request set them, without defaults, for engines
   *  that keep their own defaults (remote upstreams); `sampling` has them all resolved. */
  options?: Record<string, unknown>;
  numPredict: number; // -1 = until stop (capped by the runner)
  stop: string[];
  /** Return prompt + output token ids in the done event (/api/generate `context`). */
  wantContext: boolean;
  format?: CompiledFormat;
  /** Context shift (default true): a prompt or generation that outgrows num_ctx drops old tokens. */
  shift?: boolean;
  /** Truncate a prompt longer than num_ctx (default true); false → prompt_too_long. */
  truncate?: boolean;
  /** Tokens kept at the start on a context shift (Ollama num_keep, default 4). */
  numKeep?: number;
  /** Log probabilities of the generated tokens, with this many alternatives each (0..20);
   *  absent: none. */
  logprobs?: number;
  /** The daemon's id of the request, for the runner's log lines about this job. */
  requestId?: string;
}

/** A token's log probability, Ollama's api.TokenLogprob (the wire shape). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** The token's bytes (a token may hold part of a UTF-8 character). */
  bytes: number[];
}

/** A generated token's log probability and its most likely alternatives (api.Logprob). */
export interface Logprob extends TokenLogprob {
  top_logprobs?: TokenLogprob[];
}

/** A rendered prompt: special tokens in it are parsed as tokens. */
export interface PromptJob extends JobCommon {
  prompt: string;
  /** Extra tokens placed before the prompt (the deprecated `context` of /api/generate). */
  prefixTokens?: number[];
}

/** A conversation, for runners that template it themselves (features.messages). */
export interface MessagesJob extends JobCommon {
  messages: JobMessage[];
  tools?: Array<Record<string, unknown>>;
  /** The request's think, as sent (undefined: the engine's default). */
  think?: boolean | string;
  /** The answer must be a call: to some tool ("required") or to the one named. */
  toolChoice?: "required" | { name: string };
  /**
   * The request was a completion (/api/generate): the same conversation as its prompt and
   * system, for engines with such an endpoint of their own (Ollama's, which returns `context`).
   */
  completion?: { prompt: string; system?: string; context?: number[] };
}

export type GenerateJob = PromptJob | MessagesJob;

export const isPromptJob = (job: GenerateJob): job is PromptJob => "prompt" in job;

export interface GenerateStats {
  doneReason: "stop" | "length";
  promptEvalCount: number;
  promptEvalDurationNs: number;
  evalCount: number;
  evalDurationNs: number;
  context?: number[];
  /** Prompt tokens taken from a cache instead of being evaluated (prefix reuse). */
  cachedTokens?: number;
  /** Where those came from: the slot's own cache, a prompt snapshot, a copy of another slot, or a
   *  snapshot loaded back into an idle slot before the request came. */
  cachedFrom?: "own" | "snapshot" | "slot" | "restored";
  /** Speculative decoding: tokens proposed (by a draft model or prompt lookup) and checked by
   *  the model, and how many of those it accepted. */
  draftTokens?: number;
  draftAccepted?: number;
}

/**
 * What a runner yields. A prompt runner yields raw `text` (the daemon splits thinking and tool
 * calls out of it); a messages runner yields `content`, `thinking` and `tool_calls` itself.
 */
/** `logprobs` (when the job asked for them): the entries of the tokens this text completes. */
export type RunnerEvent =
  | { type: "text"; text: string; logprobs?: Logprob[] }
  | { type: "content"; text: string; logprobs?: Logprob[] }
  | { type: "thinking"; text: string; logprobs?: Logprob[] }
  | { type: "tool_calls"; calls: ToolCall[] }
  | ({ type: "done" } & GenerateStats);

export interface EmbedResult {
  embeddings: number[][];
  promptEvalCount: number;
}

/** Relevance of each document to a query, 0..1, in the documents' order. */
export interface RankResult {
  scores: number[];
  promptEvalCount: number;
}

export interface EmbedOptions {
  /** Cut inputs longer than the context (true) or refuse them (false). */
  truncate: boolean;
  /** The pooled vectors as they are (legacy /api/embeddings), not normalised. */
  raw?: boolean;
  /** Options as set, without defaults (see GenerateJob.options). */
  options?: Record<string, unknown>;
  dimensions?: number;
  signal: AbortSignal;
}

export interface RunnerExit {
  code: number | null;
  signal: string | null;
  message: string;
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
  /** An embedding model's: the tokens the engine adds around every input (BOS/[CLS], EOS/[SEP]),
   *  counted on the loaded model; they take room in the context like the text's own tokens. */
  inputSpecials?: number;
  /** Fallbacks the runner had to make, for the daemon's log. */
  warnings?: string[];
}

/** An upstream engine of a remote runner, as /api/ps shows it (no credentials). */
export interface UpstreamState {
  url: string;
  api: "ollama" | "openai";
  state: "healthy" | "unhealthy" | "open";
  outstanding: number;
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
  readonly features: RunnerFeatures;
  generate(job: GenerateJob, signal: AbortSignal): AsyncIterable<RunnerEvent>;
  /** The same events, each step carrying all that arrived together (batches.ts); the completion
   *  layer reads this where a runner has it. */
  generateBatches?(job: GenerateJob, signal: AbortSignal): AsyncIterable<RunnerEvent[]>;
  embed(inputs: string[], opts?: EmbedOptions): Promise<EmbedResult>;
  /** Reranking models (features.rank): scores of the documents for the query. `truncate`: a
   *  document longer than the context is scored by its best-scoring part instead of refused. */
  rank?(query: string, documents: string[], truncate: boolean, signal?: AbortSignal): Promise<RankResult>;
  /** `prompt`: the tokens the engine evaluates for `text` as a prompt (with the BOS token it puts
   *  first), where it can say; else the text's own tokens. */
  tokenize(text: string, signal?: AbortSignal, opts?: { prompt?: boolean }): Promise<number[]>;
  detokenize(tokens: number[], signal?: AbortSignal): Promise<string>;
  /** Its slots and KV cache right now; absent where the engine cannot say. */
  stats?(): Promise<RunnerStats>;
  /** The most CPU threads it may use from its next batch on (see daemon/scheduler/threads.ts). */
  setThreadBudget?(threads: number): void;
  /** The prompt the engine would build from a conversation (`_debug_render_only`), where it can say. */
  render?(input: Pick<MessagesJob, "messages" | "tools" | "think" | "completion">, signal: AbortSignal): Promise<string>;
  /** Remote runners: their upstreams and their state. */
  upstreams?(): UpstreamState[];
  /** Frees every byte it held; safe to call twice. With keepPromptCache the evaluated prompts
   *  are kept (where the backend can) for the next runner of the same model and shape. */
  close(opts?: { keepPromptCache?: boolean }): Promise<void>;
  /** Resolves when the runner ends, for whatever reason. */
  readonly exited: Promise<RunnerExit>;
}

export type { EngineError };
