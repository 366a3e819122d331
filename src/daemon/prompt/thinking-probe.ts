// Thinking tags a Jinja template builds rather than writes (Kimi K3's `open_tag('think')` →
// `<|open|>think<|sep|>`, Hunyuan's `'<think{}>'.format(…)` → `<think:opensource>`): not found
// in its text, so an answer with a made-up thought is rendered through it and the tags read off
// the render, right before and after the thought. Only a matching pair counts: `<X>`…`</X>`, or
// two token-word-token tags around the same word.
import type { ThinkingTags } from "../../template/thinking-tags.js";
import { renderPrompt, type PromptTemplate } from "./render.js";
import { SourceCache } from "./source-cache.js";

const PROBE_USER = "zq probe question";
const PROBE_THOUGHT = "zq_probe_thought";
const PROBE_ANSWER = "zq_probe_answer";
const PROBE_MAX = 16 << 10;
const NONE: ThinkingTags = { open: "", close: "" };

/** `<|open|>think<|sep|>`: a special token, a word, a special token. */
const WORD_TAG = String.raw`<\|[^<>|\s]{1,40}\|>([A-Za-z_]{1,40})<\|[^<>|\s]{1,40}\|>`;
const OPEN = new RegExp(String.raw`(?:${WORD_TAG}|<([A-Za-z_][\w:.-]{0,40})>)\s*$`);
const CLOSE = new RegExp(String.raw`^\s*(?:${WORD_TAG}|</([A-Za-z_][\w:.-]{0,40})>)`);

const learned = new SourceCache<ThinkingTags>();

export function probedThinkingTags(t: Extract<PromptTemplate, { kind: "jinja" }>): ThinkingTags {
  return learned.get(t.source, () => probe(t));
}

function probe(t: PromptTemplate): ThinkingTags {
  let text: string;
  try {
    const user = { role: "user", content: PROBE_USER };
    text = renderPrompt(t, { messages: [user, { role: "assistant", content: PROBE_ANSWER, thinking: PROBE_THOUGHT }], think: true, isThinkSet: true });
  } catch {
    return NONE;
  }
  const u = text.indexOf(PROBE_USER);
  const at = text.indexOf(PROBE_THOUGHT, u);
  const answer = text.indexOf(PROBE_ANSWER, at);
  if (u === -1 || at === -1 || answer === -1 || answer - u > PROBE_MAX) return NONE;
  const open = OPEN.exec(text.slice(u, at));
  const close = CLOSE.exec(text.slice(at + PROBE_THOUGHT.length, answer));
  if (!open || !close) return NONE;
  const word = (m: RegExpExecArray) => (m[1] !== undefined ? `w:${m[1]}` : `t:${m[2]}`);
  return word(open) === word(close) ? { open: open[0].trim(), close: close[0].trim() } : NONE;
}
