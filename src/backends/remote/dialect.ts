// What a remote runner needs from an upstream API, whichever it speaks: Ollama's /api
// (ollama-dialect.ts) or OpenAI's /v1 (openai-dialect.ts, for vLLM, SGLang, llama-server, TGI,
// LM Studio). A dialect builds request bodies and reads responses into the runner's events.
import type { EmbedResult, EmbedOptions, GenerateJob, MessagesJob, RunnerEvent, StructuredOutput } from "../backend.js";
import { EngineError } from "../errors.js";

export interface HttpCall {
  url: string;
  body: unknown;
}

/**
 * Reads one streamed answer, synchronously: the lines of one upstream read in, their events out,
 * so a read's events are parsed in one pass and travel on as one batch.
 */
export interface StreamReader {
  /** Appends the events these lines carry to `out`; throws on an error the upstream reports. */
  read(lines: readonly string[], out: RunnerEvent[]): void;
  /** Set once the final event is out: nothing after it is read. */
  readonly finished: boolean;
  /** Server-sent events: lines end at CR too, and blank lines (the ends of events) come in. */
  readonly sse?: boolean;
  /** The body ended before a final event: appends the final events, or throws if the answer was cut short. */
  end(out: RunnerEvent[]): void;
}

export interface Dialect {
  generate(job: GenerateJob, model: string): HttpCall;
  /** A reader of the streamed response; `startedAt` (hrtime ns) times what the upstream does not report. */
  reader(startedAt: bigint): StreamReader;
  embed(inputs: string[], model: string, opts: Omit<EmbedOptions, "signal">): HttpCall;
  embedResult(json: unknown): EmbedResult;
  tokenize(text: string, model: string): HttpCall;
  tokens(json: unknown): number[];
  detokenize(tokens: number[], model: string): HttpCall;
  text(json: unknown): string;
  /** The engine's own rendering of a conversation (Ollama's `_debug_render_only`), where it has one. */
  render?(input: Pick<MessagesJob, "messages" | "tools" | "think" | "completion">, model: string): HttpCall;
  rendered?(json: unknown): string;
  /** GET URLs that answer 2xx while the upstream can serve (the first that exists is used). */
  health(): string[];
  /** Where the upstream reports what a loaded model holds (Ollama's /api/ps), and reading it. */
  loaded?(): string;
  loadedInfo?(json: unknown, model: string): { sizeBytes: number; vramBytes: number; contextLength: number } | undefined;
}

export type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
export const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** An upstream's answer that is not what its API promises (a 502: the upstream misbehaves). */
export function badAnswer(what: string): EngineError {
  return new EngineError("upstream_down", `the upstream sent an answer this server cannot read (${what})`);
}

/**
 * An error the upstream reports inside its answer (OpenAI's `{"error":{message,code}}`, vLLM's
 * `{"object":"error",...}`, Ollama's `{"error":"..."}`): a 400 where its code blames the request,
 * else a 502 with its message.
 */
export function reportedError(e: unknown): EngineError {
  const o = isObj(e) ? e : {};
  const message = typeof e === "string" ? e : typeof o.message === "string" ? o.message : JSON.stringify(e).slice(0, 500);
  const code = num(o.code) ?? num(o.status) ?? 500;
  if (code >= 400 && code < 500 && code !== 429) return new EngineError("upstream_rejected", message);
  return new EngineError("upstream_down", `the upstream failed: ${message}`);
}

/** A JSON answer that is an error (a 200 with an error body): the error it reports. */
export function answerError(j: unknown): EngineError | undefined {
  if (!isObj(j)) return undefined;
  if (j.error !== undefined && j.error !== null) return reportedError(j.error);
  if (j.object === "error") return reportedError(j);
  return undefined;
}

/** Embedding vectors as sent: each a list of finite numbers, or the answer is unreadable. */
export function vectors(list: unknown[]): number[][] {
  for (const v of list) if (!Array.isArray(v) || !v.every((x) => typeof x === "number" && Number.isFinite(x))) throw badAnswer("an embedding that is not a list of numbers");
  return list as number[][];
}

export function parseLine(line: string): Json {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw badAnswer(`not JSON: ${line.slice(0, 80)}`);
  }
  if (!isObj(v)) throw badAnswer("not a JSON object");
  return v;
}


export function nowNs(): bigint {
  return process.hrtime.bigint();
}

/** The formats an upstream takes (compileFormat refuses markup shapes). */
export type UpstreamFormat = Exclude<StructuredOutput, { kind: "markup" }>;

/** `format` as a JSON Schema or "json" (what Ollama's own API takes). */
export function formatValue(f: UpstreamFormat): "json" | Json {
  return f.kind === "json" ? "json" : f.schema;
}
