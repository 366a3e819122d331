// Wire types of Ollama's native REST API, shared by the daemon, the CLI and the tests.
// Field names follow Ollama's api/types.go exactly; optional fields are omitted, never null.
import type { Logprob } from "../backends/backend.js";

export type ThinkValue = boolean | "low" | "medium" | "high" | "max";
export type KeepAlive = number | string;
export type Format = "json" | Record<string, unknown>;

/** Request `options` as sent by clients; the daemon validates and types it (daemon/options.ts). */
export type RequestOptions = Record<string, unknown>;

export interface ToolCallFunction {
  index?: number;
  name: string;
  arguments: Record<string, unknown>;
}
export interface ToolCall {
  id?: string;
  function: ToolCallFunction;
}

export interface Message {
  role: string;
  content: string;
  thinking?: string;
  images?: string[];
  tool_calls?: ToolCall[];
  tool_name?: string;
  tool_call_id?: string;
}

export interface GenerateRequest {
  model: string;
  prompt?: string;
  suffix?: string;
  system?: string;
  template?: string;
  context?: number[];
  stream?: boolean;
  raw?: boolean;
  format?: Format | null;
  keep_alive?: KeepAlive;
  images?: string[];
  options?: RequestOptions;
  think?: ThinkValue;
}

export interface ChatRequest {
  model: string;
  messages?: Message[];
  tools?: unknown[];
  stream?: boolean;
  format?: Format | null;
  keep_alive?: KeepAlive;
  options?: RequestOptions;
  think?: ThinkValue;
}

/** The six final-chunk metrics, integer nanoseconds and counts. */
export interface Metrics {
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
  prompt_eval_duration?: number;
  eval_count?: number;
  eval_duration?: number;
}

export type DoneReason = "stop" | "length" | "load" | "unload";

export interface GenerateResponse extends Metrics {
  model: string;
  created_at: string;
  response: string;
  thinking?: string;
  done: boolean;
  done_reason?: DoneReason;
  context?: number[];
  /** The tokens of this chunk (all of them when not streamed), with `logprobs: true`. */
  logprobs?: Logprob[];
}

export interface ChatResponse extends Metrics {
  model: string;
  created_at: string;
  message: Message;
  done: boolean;
  done_reason?: DoneReason;
  logprobs?: Logprob[];
}

export interface ModelDetails {
  parent_model: string;
  format: string;
  family: string;
  families: string[] | null;
  parameter_size: string;
  quantization_level: string;
}

export interface ListModel {
  name: string;
  model: string;
  modified_at: string;
  size: number;
  digest: string;
  details: ModelDetails;
  /** A remote model: its name upstream and its upstream(s). */
  remote_model?: string;
  remote_host?: string;
}
export interface ListResponse {
  models: ListModel[];
}

export interface ProcessModel {
  name: string;
  model: string;
  size: number;
  digest: string;
  details: ModelDetails;
  expires_at: string;
  size_vram: number;
  context_length: number;
  /** A remote model: its upstream engines and their state (ollamats). */
  remote_model?: string;
  remote_host?: string;
  upstreams?: Array<{ url: string; api: "ollama" | "openai"; state: "healthy" | "unhealthy" | "open"; outstanding: number }>;
}
export interface ProcessResponse {
  models: ProcessModel[];
}

export interface ShowRequest {
  model?: string;
  name?: string;
  verbose?: boolean;
  system?: string;
  options?: RequestOptions;
}

export interface TensorInfoWire {
  name: string;
  type: string;
  shape: number[];
}

export interface ShowResponse {
  license?: string;
  modelfile: string;
  parameters?: string;
  template?: string;
  system?: string;
  details: ModelDetails;
  messages?: Message[];
  model_info: Record<string, unknown>;
  tensors?: TensorInfoWire[];
  capabilities: string[];
  modified_at: string;
}

export interface CreateRequest {
  model?: string;
  name?: string;
  from?: string;
  files?: Record<string, string>;
  adapters?: Record<string, string>;
  /** The draft model (speculative decoding): file name → digest of its uploaded GGUF blob. */
  draft_files?: Record<string, string>;
  template?: string;
  system?: string;
  license?: string | string[];
  parameters?: Record<string, unknown>;
  messages?: Message[];
  quantize?: string;
  draft_quantize?: string;
  stream?: boolean;
}

export interface ProgressResponse {
  status: string;
  digest?: string;
  total?: number;
  completed?: number;
}

export interface VersionResponse {
  /** The Ollama API version served. */
  version: string;
  /** ollamats' own version (absent when the server is Ollama). */
  ollamats_version?: string;
}

export interface ErrorResponse {
  error: string;
}
