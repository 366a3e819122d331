// POST /v1/messages/count_tokens (Anthropic's; Claude Code asks it every turn to manage its
// context window; Ollama answers 404): the prompt the request would evaluate, rendered as
// /api/chat renders it (system, messages, tools) and tokenized by the runner as a prompt (its BOS
// included), so the count equals a message's usage.input_tokens (a remote model's upstream
// tokenizes without saying whether its engine adds a BOS: one less). A model whose engine
// templates or tokenizes nowhere we can reach (some remote engines) gets Ollama's own estimate
// for this API instead: a quarter of the request's characters.
import { ApiError } from "../../errors.js";
import type { Deps } from "../../deps.js";
import { tokenize } from "../../services/tokenize.js";
import type { Started } from "../openai/native.js";
import type { MessagesTranslation } from "./translate.js";

/** `render`: the native chat preparation, which answers a `_debug_render_only` body. */
export async function countTokens(deps: Deps, t: MessagesTranslation, render: (native: Record<string, unknown>) => Promise<Started>, signal: AbortSignal): Promise<number> {
  const unsupported = (err: unknown) => err instanceof ApiError && err.code === "unsupported";
  try {
    const started = await render({ ...t.native, stream: false, _debug_render_only: true });
    const prompt = started.kind === "debug" ? (started.debugInfo as { rendered_template?: unknown }).rendered_template : undefined;
    if (typeof prompt !== "string") return t.estimatedInputTokens;
    return (await tokenize(deps, { model: t.model, content: prompt }, signal, { prompt: true })).length;
  } catch (err) {
    if (unsupported(err)) return t.estimatedInputTokens;
    throw err;
  }
}
