// Steps shared by the inference services: model lookup (and the backend's admission), keep_alive
// and think validation, the runner features a request needs, the prompt template.
import type { CompiledFormat, Logprob, RunnerFeatures, StructuredOutput } from "../../backends/backend.js";
import { parseKeepAliveRequest } from "../../config.js";
import { EngineError, INVALID_SCHEMA_PREFIX } from "../../backends/errors.js";
import { ggufArrayLength, ggufTokenText } from "../../registry/gguf-slim.js";
import { ggufSource, InvalidModelNameError, type ModelSpec } from "../../registry/model-spec.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest, modelNotFound, toApiError } from "../errors.js";
import { selectTemplate, type PromptTemplate } from "../prompt/render.js";

export async function resolveSpec(deps: Deps, model: string): Promise<ModelSpec> {
  if (model === "") throw modelNotFound(model);
  try {
    const spec = await deps.models.resolve(model);
    if (!spec) throw modelNotFound(model);
    admit(deps, spec);
    return spec;
  } catch (err) {
    if (err instanceof InvalidModelNameError) throw badRequest("invalid model name");
    throw err;
  }
}

/** The backend that serves the model may refuse it here (a remote host not allowed). */
function admit(deps: Deps, spec: ModelSpec): void {
  try {
    deps.scheduler.backendFor(spec).admit?.(spec);
  } catch (err) {
    throw toApiError(err);
  }
}

/** `format` compiled by the model's backend: a schema its engine cannot honour is a 400 now.
 *  `forToolChoice`: the format is tool_choice's call, which the client did not write, and its 400
 *  says so. */
export async function compileFormat(deps: Deps, spec: ModelSpec, format: StructuredOutput | undefined, forToolChoice = false): Promise<CompiledFormat | undefined> {
  if (!format) return undefined;
  try {
    return await deps.scheduler.backendFor(spec).compileFormat(format);
  } catch (err) {
    // the client wrote no format: say what of theirs could not be made a grammar
    if (forToolChoice && err instanceof EngineError && err.code === "invalid_schema") {
      throw badRequest(`tool_choice cannot make the answer a call of the offered tools: ${err.message.replace(INVALID_SCHEMA_PREFIX, "")}`);
    }
    throw toApiError(err);
  }
}

/** The runner features of a model, before it is loaded. */
export function featuresOf(deps: Deps, spec: ModelSpec): RunnerFeatures {
  return deps.scheduler.backendFor(spec).features(spec);
}

export function keepAliveOf(value: number | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseKeepAliveRequest(value);
  } catch (err) {
    throw badRequest((err as Error).message);
  }
}

const THINK_LEVELS = new Set(["low", "medium", "high", "max"]);

/** The request's `think`, resolved as Ollama does (api.ThinkValue + the handlers' defaulting). */
export interface ThinkSetting {
  /** ThinkValue.Bool(): thinking is on. */
  enabled: boolean;
  /** ThinkValue.String(): "" when off, "medium" for true, else the level. */
  level: string;
  /** The request set think (or the model defaulted it on). */
  isSet: boolean;
}

/** Checks the JSON shape of `think` (400 with Go's messages), before the model is looked up. */
export function validateThink(think: unknown): void {
  if (think === undefined || think === null || typeof think === "boolean") return;
  if (typeof think === "string") {
    if (THINK_LEVELS.has(think)) return;
    throw badRequest(`invalid think value: ${JSON.stringify(think)} (must be "high", "medium", "low", "max", true, or false)`);
  }
  throw badRequest('think must be a boolean or string ("high", "medium", "low", "max", true, or false)');
}

/**
 * `think: false` is accepted everywhere; a truthy think needs the thinking capability; a model
 * that can think thinks by default when the request does not say.
 */
export function resolveThink(spec: ModelSpec, model: string, think: unknown): ThinkSetting {
  validateThink(think);
  const capable = spec.capabilities.includes("thinking");
  if (think === undefined || think === null) {
    return capable ? { enabled: true, level: "medium", isSet: true } : { enabled: false, level: "", isSet: false };
  }
  const enabled = think !== false;
  if (enabled && !capable) throw badRequest(`"${model}" does not support thinking`);
  return { enabled, level: typeof think === "string" ? think : enabled ? "medium" : "", isSet: true };
}

/** Ollama checks the range first of all; the backend cannot produce logprobs at all. */
export function checkTopLogprobs(topLogprobs: number | null | undefined): void {
  if (topLogprobs != null && (topLogprobs < 0 || topLogprobs > 20)) throw badRequest("top_logprobs must be between 0 and 20");
}

/** Sets a response's `logprobs`, last, when there are any (Ollama's omitempty); the response
 *  itself is returned, not a copy: every streamed token goes through here. */
export function withLogprobs<T extends { logprobs?: Logprob[] }>(response: T, logprobs: Logprob[] | undefined): T {
  if (logprobs && logprobs.length > 0) response.logprobs = logprobs;
  return response;
}

/** Alternatives per token when `logprobs` is on (top_logprobs alone asks for nothing, as in Ollama). */
export function logprobsOf(body: { logprobs?: boolean | null; top_logprobs?: number | null }): number | undefined {
  return body.logprobs === true ? (body.top_logprobs ?? 0) : undefined;
}

/** What a request asks of a runner that it may lack; each has the start of its refusal. */
const FEATURE_REFUSAL = {
  logprobs: "logprobs are not supported by this backend",
  images: "images are not supported",
  tokenize: "tokenization is not supported by this backend",
  embed: "embeddings are not supported by this backend",
  rank: "reranking is not supported by this model",
} as const;

/** A 400 naming why, when the request needs a feature the model's runner lacks. */
export function requireFeature(features: RunnerFeatures, feature: keyof typeof FEATURE_REFUSAL): void {
  const f = features[feature];
  if (f !== true) throw new ApiError("unsupported", `${FEATURE_REFUSAL[feature]}: ${f.missing}`);
}

export function rejectLogprobs(features: RunnerFeatures, logprobs: boolean | null | undefined): void {
  if (logprobs === true) requireFeature(features, "logprobs");
}

export function rejectImages(features: RunnerFeatures, images: Array<unknown[] | null | undefined>): void {
  if (images.some((i) => i != null && i.length > 0)) requireFeature(features, "images");
}

function tokenText(spec: ModelSpec, idKey: string): string {
  const src = ggufSource(spec);
  const id = src?.gguf.metadata[idKey];
  return src && typeof id === "number" ? (ggufTokenText(src.gguf, id) ?? "") : "";
}

export function templateFor(spec: ModelSpec, override?: string, withTools = false): PromptTemplate {
  const facts = ggufSource(spec)?.facts;
  // A conversation with tools gets the GGUF's tool_use template where it has one (llama.cpp's rule).
  const jinja = (withTools ? facts?.toolUseTemplate : undefined) ?? facts?.chatTemplate;
  // A RENDERER (Ollama's Go copy of a model's own chat template, which then replaces its TEMPLATE,
  // often a bare `{{ .Prompt }}` in such models) is stood in for by the model's own template.
  const go = override ?? (spec.config?.renderer && jinja ? undefined : spec.template);
  return selectTemplate(
    go,
    jinja,
    tokenText(spec, "tokenizer.ggml.bos_token_id"),
    tokenText(spec, "tokenizer.ggml.eos_token_id"),
  );
}

/** The full name Ollama puts in capability errors (registry.ollama.ai/library/x:latest). */
export function fullModelName(spec: ModelSpec): string {
  const n = spec.name;
  return `${n.host}/${n.namespace}/${n.model}:${n.tag}`;
}

let lastMs = -1;
let lastIso = "";

/** Now as Ollama's created_at (RFC 3339, UTC). Every streamed chunk carries one: the string is
 *  made once per millisecond, not once per token. */
export function createdAt(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

/** Aborts when the client disconnects; the runner stops and frees its slot. */
export function requestSignal(raw: Request): AbortController {
  const ac = new AbortController();
  if (raw.signal.aborted) ac.abort();
  else raw.signal.addEventListener("abort", () => ac.abort(), { once: true });
  return ac;
}

/** Token ids from a client (detokenize `tokens`, generate `context`) must name vocabulary entries:
 *  an unknown id makes the runner's evaluation fail (a 500) or read outside its tables. */
export function checkTokenIds(spec: ModelSpec, tokens: readonly number[], field?: string): void {
  // A remote model's vocabulary is its upstream's: the upstream checks its own ids.
  const src = ggufSource(spec);
  const size = (src && ggufArrayLength(src.gguf, "tokenizer.ggml.tokens")) ?? Infinity;
  const bad = tokens.find((t) => t < 0 || t >= size);
  if (bad !== undefined) throw badRequest(`invalid token id ${bad}${field ? ` in "${field}"` : ""}: the vocabulary has ${size} tokens`);
}
