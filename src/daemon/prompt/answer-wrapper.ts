// Some models wrap their answer in tokens of its own: Command R7B's
// `<|START_RESPONSE|>…<|END_RESPONSE|>`, Command A's `<|START_TEXT|>…<|END_TEXT|>`, Solar's
// `<|content|>`, Kimi K3's `<|open|>response<|sep|>`. They are markup, not the answer (Ollama's cohere parser drops them); a GGUF's
// Jinja template is asked, once, whether it writes an answer so, by rendering one.
import { SourceCache } from "./source-cache.js";
import { thinkingTags } from "./thinking.js";
import { renderPrompt, type PromptTemplate } from "./render.js";
import { afterPrompt } from "./tool-dialect.js";

/** Ollama's parsers that read such wrappers, and the tokens they drop. */
const PARSER_WRAPPERS: Readonly<Record<string, readonly string[]>> = {
  cohere: ["<|START_TEXT|>", "<|END_TEXT|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"],
};

const PROBE_USER = "zq probe question";
const PROBE_ANSWER = "zq_probe_answer";
/** One special token (`<|START_TEXT|>`, `<|content|>`, `<answer>`), or a word between two
 *  (Kimi K3's `<|open|>response<|sep|>`). */
const TOKEN = /^(?:<\|[^<>|\s]{1,40}\|>[A-Za-z_]{1,40}<\|[^<>|\s]{1,40}\|>|<\|[^<>|\s]{1,40}\|>|<[A-Za-z_][\w:-]{0,40}>)/;

const learned = new SourceCache<readonly string[]>();

/** The tokens around the model's answers that are not part of them (none for most models). */
export function answerWrapper(t: PromptTemplate, parser?: string): readonly string[] {
  if (parser && Object.hasOwn(PARSER_WRAPPERS, parser)) return PARSER_WRAPPERS[parser]!;
  if (t.kind !== "jinja") return [];
  return learned.get(t.source, () => learn(t));
}

function learn(t: Extract<PromptTemplate, { kind: "jinja" }>): readonly string[] {
  const user = { role: "user", content: PROBE_USER };
  let asked: string;
  let answered: string;
  try {
    asked = renderPrompt(t, { messages: [user] });
    answered = renderPrompt(t, { messages: [user, { role: "assistant", content: PROBE_ANSWER }] });
  } catch {
    return [];
  }
  const ua = asked.indexOf(PROBE_USER);
  const ub = answered.indexOf(PROBE_USER);
  if (ua === -1 || ub === -1 || answered.length - ub > 4096) return [];
  const section = afterPrompt(asked.slice(ua + PROBE_USER.length), answered.slice(ub + PROBE_USER.length));
  const at = section.indexOf(PROBE_ANSWER);
  if (at === -1) return [];
  // An empty thinking block before the answer is the thinking parser's, not a wrapper.
  const tags = thinkingTags(t);
  let before = section.slice(0, at).trim();
  if (tags.open && before.startsWith(tags.open) && before.includes(tags.close)) before = before.slice(before.indexOf(tags.close) + tags.close.length).trim();
  else if (tags.close && before.startsWith(tags.close)) before = before.slice(tags.close.length).trim();
  const open = TOKEN.exec(before)?.[0];
  if (!open || open !== before || open === tags.open || open === tags.close) return [];
  const close = TOKEN.exec(section.slice(at + PROBE_ANSWER.length))?.[0];
  // a word between tokens wraps only when the closing tag names the same word (Kimi K3's
  // response); gpt-oss's `<|channel|>final<|message|>` is a channel, read by its harmony parser
  const word = WORD.exec(open)?.[1];
  if (word !== undefined) return close !== undefined && WORD.exec(close)?.[1] === word ? [open, close] : [];
  return close && close !== open ? [open, close] : [open];
}

const WORD = /^<\|[^<>|\s]{1,40}\|>([A-Za-z_]{1,40})<\|/;

/** Drops the wrapper's tokens from streamed content, holding back what may begin one. */
export class WrapperFilter {
  private held = "";

  constructor(private readonly tokens: readonly string[]) {}

  add(text: string): string {
    let s = this.held + text;
    for (const t of this.tokens) if (s.includes(t)) s = s.replaceAll(t, "");
    let keep = 0;
    for (const t of this.tokens) {
      for (let k = Math.min(t.length - 1, s.length); k > keep; k--) {
        if (s.endsWith(t.slice(0, k))) {
          keep = k;
          break;
        }
      }
    }
    this.held = s.slice(s.length - keep);
    return s.slice(0, s.length - keep);
  }

  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }
}
