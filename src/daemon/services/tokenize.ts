// Token budgeting with the model's own tokenizer (not in Ollama): the model is loaded (or
// attached to) like any request, with the request's keep_alive and options; special tokens
// written in the text (e.g. `<|im_start|>`) are parsed as tokens, no BOS is added. A remote
// model tokenizes where its upstream can (vLLM, llama-server, ollamats).
import type { Runner } from "../../backends/backend.js";
import type { ModelSpec } from "../../registry/model-spec.js";
import type { Deps } from "../deps.js";
import { toApiError } from "../errors.js";
import { resolveOptions } from "../options.js";
import { checkTokenIds, featuresOf, keepAliveOf, requireFeature, resolveSpec } from "./request.js";

interface TokenRequest {
  model: string;
  keep_alive?: number | string;
  options?: Record<string, unknown> | null;
}

async function withRunner<T>(deps: Deps, spec: ModelSpec, body: TokenRequest, signal: AbortSignal, fn: (r: Runner) => Promise<T>): Promise<T> {
  requireFeature(featuresOf(deps, spec), "tokenize");
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options ?? undefined);
  const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs: keepAliveOf(body.keep_alive), signal });
  try {
    return await fn(lease.runner);
  } catch (err) {
    throw toApiError(err);
  } finally {
    lease.release();
  }
}

/** `prompt`: the tokens the runner evaluates for the text as a prompt (its BOS included). */
export async function tokenize(deps: Deps, body: TokenRequest & { content: string }, signal: AbortSignal, opts: { prompt?: boolean } = {}): Promise<number[]> {
  const spec = await resolveSpec(deps, body.model);
  return body.content === "" ? [] : withRunner(deps, spec, body, signal, (r) => r.tokenize(body.content, signal, opts));
}

export async function detokenize(deps: Deps, body: TokenRequest & { tokens: number[] }, signal: AbortSignal): Promise<string> {
  const spec = await resolveSpec(deps, body.model);
  checkTokenIds(spec, body.tokens);
  return body.tokens.length === 0 ? "" : withRunner(deps, spec, body, signal, (r) => r.detokenize(body.tokens, signal));
}
