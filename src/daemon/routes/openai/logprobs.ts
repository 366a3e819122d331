// Log probabilities in OpenAI's shapes. Chat: `logprobs.content`, Ollama's entries with
// `top_logprobs` always present (OpenAI's schema requires it). Legacy completions: OpenAI's
// parallel lists (tokens, token_logprobs, top_logprobs as token → logprob maps, text_offset)
// plus Ollama's `content` list, so clients of either shape read it.
import type { Logprob, TokenLogprob } from "../../../backends/backend.js";

export function chatLogprobs(logprobs: Logprob[] | undefined): { content: Array<Logprob & { top_logprobs: TokenLogprob[] }> } | null {
  if (!logprobs || logprobs.length === 0) return null;
  return { content: logprobs.map((l) => ({ ...l, top_logprobs: l.top_logprobs ?? [] })) };
}

/** The legacy completions shape; `offset` is where this chunk's text starts in the whole text. */
export function completionLogprobs(logprobs: Logprob[] | undefined, offset: number): object | null {
  if (!logprobs || logprobs.length === 0) return null;
  const textOffset: number[] = [];
  let at = offset;
  for (const l of logprobs) {
    textOffset.push(at);
    at += l.token.length;
  }
  return {
    tokens: logprobs.map((l) => l.token),
    token_logprobs: logprobs.map((l) => l.logprob),
    top_logprobs: logprobs.map((l) => Object.fromEntries((l.top_logprobs ?? []).map((t) => [t.token, t.logprob]))),
    text_offset: textOffset,
    content: logprobs,
  };
}
