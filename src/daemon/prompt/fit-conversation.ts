// Ollama's `truncate`: the oldest messages that are neither system messages nor the last one are
// dropped until the prompt fits the context. Dropping one at a time, as Ollama does, renders and
// tokenizes once per dropped message: a 1,000-message conversation in a 4k context took hundreds
// of renders (minutes with Gemma 4's template). The prompt shrinks as more are dropped, so the
// fewest drops that fit are found by bisection: the same prompt in a logarithmic number of renders.
import type { RenderMessage } from "./render.js";

/** `messages` less its `k` oldest droppable ones. */
export function dropOldest(messages: readonly RenderMessage[], k: number): RenderMessage[] {
  let left = k;
  const last = messages.length - 1;
  return messages.filter((m, i) => {
    if (left === 0 || m.role === "system" || i === last) return true;
    left--;
    return false;
  });
}

/** Counts tried from one the template refuses, for the next it renders. */
const REFUSED_STEPS = 4;

/**
 * The prompt of `messages` with the fewest oldest droppable messages left out that `fits`; with all
 * of them left out when nothing fits (the runner then cuts the prompt itself). A count the template
 * refuses (Gemma's and Mistral's raise on a conversation that opens with the model's reply) does
 * not fit: the next counts are tried, so truncating drops one more message rather than fail.
 */
export async function fitConversation(messages: readonly RenderMessage[], render: (messages: RenderMessage[]) => string | Promise<string>, fits: (prompt: string) => Promise<boolean>): Promise<string> {
  const first = await render([...messages]);
  if (await fits(first)) return first;
  const droppable = messages.filter((m, i) => m.role !== "system" && i < messages.length - 1).length;
  if (droppable === 0) return first;
  let refusal: unknown;
  const attempt = async (k: number): Promise<string | undefined> => {
    try {
      return await render(dropOldest(messages, k));
    } catch (err) {
      refusal ??= err;
      return undefined;
    }
  };
  let lo = 1;
  let hi = droppable;
  let best: string | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    let k = mid;
    let text: string | undefined;
    for (; k <= Math.min(hi, mid + REFUSED_STEPS - 1) && text === undefined; k++) text = await attempt(k);
    k--;
    if (text === undefined) hi = mid - 1;
    else if (await fits(text)) {
      best = text;
      hi = mid - 1;
    } else lo = k + 1;
  }
  if (best !== undefined) return best;
  const all = await attempt(droppable);
  if (all === undefined) throw refusal;
  return all;
}
