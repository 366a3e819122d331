// Steps shared by the inference routes: model lookup, keep_alive and think validation.
import { parseKeepAliveRequest } from "../../config.js";
import { InvalidModelNameError, type ModelSpec } from "../../registry/model-spec.js";
import type { Deps } from "../deps.js";
import { badRequest, modelNotFound } from "../errors.js";
import { selectTemplate, type PromptTemplate } from "../prompt/render.js";

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

/** `think: false` is accepted everywhere; a truthy think needs the thinking capability. */
export function checkThink(spec: ModelSpec, model: string, think: boolean | string | undefined): void {
  if (typeof think === "string" && !THINK_LEVELS.has(think) && think !== "true" && think !== "false") {
    throw badRequest(`invalid think value: "${think}" (must be "high", "medium", "low", true, or false)`);
  }
  const on = think === true || (typeof think === "string" && think !== "false");
  if (on && !spec.capabilities.includes("thinking")) throw badRequest(`"${model}" does not support thinking`);
}

function tokenText(spec: ModelSpec, idKey: string): string {
  const id = spec.gguf.metadata[idKey];
  const tokens = spec.gguf.metadata["tokenizer.ggml.tokens"];
  if (typeof id !== "number" || !Array.isArray(tokens)) return "";
  const t = tokens[id];
  return typeof t === "string" ? t : "";
}

export function templateFor(spec: ModelSpec, override?: string): PromptTemplate {
  return selectTemplate(
    override ?? spec.template,
    spec.facts.chatTemplate,
    tokenText(spec, "tokenizer.ggml.bos_token_id"),
    tokenText(spec, "tokenizer.ggml.eos_token_id"),
  );
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
