// POST /v1/messages/count_tokens (Anthropic's; Claude Code asks it every turn to manage its
// context window; Ollama answers 404): the prompt the request would evaluate, rendered as
// /api/chat renders it (system, messages, tools), counted with the model's own tokenizer, plus
// the BOS token the runner adds before it, so the count equals a message's usage.input_tokens
// (a remote model's upstream tokenizes without saying whether its engine adds a BOS: one less).
// A model whose engine templates or tokenizes nowhere we can reach (some remote engines) gets
// Ollama's own estimate for this API instead: a quarter of the request's characters.
import { ApiError } from "../../errors.js";
import type { Deps } from "../../deps.js";
import { resolveSpec } from "../../services/request.js";
import { tokenize } from "../../services/tokenize.js";
import { ggufSource } from "../../../registry/model-spec.js";
import type { Started } from "../openai/native.js";
import type { MessagesTranslation } from "./translate.js";

/** Whether the runner puts a BOS token before a prompt that does not start with one. */
function bosAdded(metadata: Record<string, unknown>): number | undefined {
  const family = metadata["tokenizer.ggml.model"];
  const flag = metadata["tokenizer.ggml.add_bos_token"];
  const adds = typeof flag === "boolean" ? flag : family === "llama";
  const id = metadata["tokenizer.ggml.bos_token_id"];
  return adds && (typeof id === "number" || typeof id === "bigint") ? Number(id) : undefined;
}

export async function countTokens(deps: Deps, t: MessagesTranslation, rendered: (native: Record<string, unknown>) => Promise<Started>, signal: AbortSignal): Promise<number> {
  let prompt: string;
  try {
    const started = await rendered({ ...t.native, stream: false, _debug_render_only: true });
    const info = started.kind === "debug" ? (started.debugInfo as { rendered_template?: unknown }) : undefined;
    if (typeof info?.rendered_template !== "string") return t.estimatedInputTokens;
    prompt = info.rendered_template;
  } catch (err) {
    if (err instanceof ApiError && err.code === "unsupported") return t.estimatedInputTokens;
    throw err;
  }
  let tokens: number[];
  try {
    tokens = await tokenize(deps, { model: t.model, content: prompt }, signal);
  } catch (err) {
    if (err instanceof ApiError && err.code === "unsupported") return t.estimatedInputTokens;
    throw err;
  }
  const spec = await resolveSpec(deps, t.model);
  const source = ggufSource(spec);
  const bos = source ? bosAdded(source.gguf.metadata) : undefined;
  return tokens.length + (bos !== undefined && tokens[0] !== bos ? 1 : 0);
}
