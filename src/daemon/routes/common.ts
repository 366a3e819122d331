// Steps shared by the inference routes: model lookup, keep_alive and think validation.
import { parseKeepAliveRequest } from "../../config.js";
import { InvalidModelNameError, type ModelSpec } from "../../registry/model-spec.js";
import type { Deps } from "../deps.js";
import { badRequest, modelNotFound } from "../errors.js";
import { selectTemplate, type PromptTemplate } from "../prompt/render.js";
import { ggufArrayLength, ggufTokenText } from "../../registry/gguf-slim.js";

export async function resolveSpec(deps: Deps, model: string): Promise<ModelSpec> {
  if (model === "") throw modelNotFound(model);
  try {
    const spec = await deps.models.resolve(model);
    if (!spec) throw modelNotFound(model);
    return spec;
  } catch (err) {
    if (err instanceof InvalidModelNameError) throw badRequest("invalid model name");
    throw err;
  }
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

export const LOGPROBS_UNSUPPORTED =
  "logprobs are not supported by this backend: node-llama-cpp 3.21.1 does not expose token probabilities during generation";

export function rejectLogprobs(logprobs: boolean | null | undefined, topLogprobs: number | null | undefined): void {
  if (logprobs === true || (topLogprobs != null && topLogprobs > 0)) throw badRequest(LOGPROBS_UNSUPPORTED);
}

export const IMAGES_UNSUPPORTED =
  "images are not supported: this engine version (node-llama-cpp 3.21.1) has no multimodal (vision) support";

export function rejectImages(images: Array<unknown[] | null | undefined>): void {
  if (images.some((i) => i != null && i.length > 0)) throw badRequest(IMAGES_UNSUPPORTED);
}

function tokenText(spec: ModelSpec, idKey: string): string {
  const id = spec.gguf.metadata[idKey];
  return typeof id === "number" ? (ggufTokenText(spec.gguf, id) ?? "") : "";
}

export function templateFor(spec: ModelSpec, override?: string): PromptTemplate {
  return selectTemplate(
    override ?? spec.template,
    spec.facts.chatTemplate,
    tokenText(spec, "tokenizer.ggml.bos_token_id"),
    tokenText(spec, "tokenizer.ggml.eos_token_id"),
  );
}

/** The full name Ollama puts in capability errors (registry.ollama.ai/library/x:latest). */
export function fullModelName(spec: ModelSpec): string {
  const n = spec.name;
  return `${n.host}/${n.namespace}/${n.model}:${n.tag}`;
}

export function createdAt(): string {
  return new Date().toISOString();
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
  const size = ggufArrayLength(spec.gguf, "tokenizer.ggml.tokens") ?? Infinity;
  const bad = tokens.find((t) => t < 0 || t >= size);
  if (bad !== undefined) throw badRequest(`invalid token id ${bad}${field ? ` in "${field}"` : ""}: the vocabulary has ${size} tokens`);
}
