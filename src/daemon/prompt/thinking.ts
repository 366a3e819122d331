// Thinking output (Ollama's thinking/template.go and thinking/parser.go, reference §7.2):
// the tags around a thinking trace are inferred from the model's template, and a streaming
// state machine moves the text between them into `thinking`.
import { inferThinkingTagsFromTree, jinjaThinkingTags, type ThinkingTags } from "../../template/thinking-tags.js";
import type { PromptTemplate } from "./render.js";
import { probedThinkingTags } from "./thinking-probe.js";

export { inferThinkingTagsFromTree, type ThinkingTags };

/** Tags for a selected template; none (empty strings) when the model does not think. */
export function thinkingTags(t: PromptTemplate): ThinkingTags {
  switch (t.kind) {
    case "go":
      return inferThinkingTagsFromTree(t.template.template.root);
    case "jinja": {
      const known = jinjaThinkingTags(t.source);
      return known.open !== "" ? known : probedThinkingTags(t);
    }
    case "default":
      return { open: "", close: "" };
  }
}

// ---------- streaming parser ----------

const enum State {
  LookingForOpening,
  ThinkingStartedEatingWhitespace,
  Thinking,
  ThinkingDoneEatingWhitespace,
  ThinkingDone,
}

const trimLeft = (s: string): string => s.replace(/^\s+/u, "");

/** Longest suffix of s that is a prefix of delim. */
function overlap(s: string, delim: string): number {
  for (let i = Math.min(delim.length, s.length); i > 0; i--) {
    if (s.endsWith(delim.slice(0, i))) return i;
  }
  return 0;
}

export interface ThinkingStep {
  thinking: string;
  content: string;
}

/**
 * thinking.Parser: text before the opening tag that is only whitespace is eaten; whitespace
 * right after each tag is eaten; a partial tag is held back until it is disambiguated.
 */
export class ThinkingParser {
  private state = State.LookingForOpening;
  private acc = "";

  constructor(readonly tags: ThinkingTags) {}

  /** True once the closing tag was seen, or the output turned out not to start with thinking. */
  get done(): boolean {
    return this.state === State.ThinkingDone || this.state === State.ThinkingDoneEatingWhitespace;
  }

  /** True while inside the thinking trace (the opening tag was seen, the closing one not yet). */
  get inThinking(): boolean {
    return this.state === State.Thinking || this.state === State.ThinkingStartedEatingWhitespace;
  }

  add(text: string): ThinkingStep {
    this.acc += text;
    let thinking = "";
    let content = "";
    for (;;) {
      const [t, c, more] = this.eat();
      thinking += t;
      content += c;
      if (!more) break;
    }
    return { thinking, content };
  }

  /** End of output: whatever was held back to disambiguate a tag is real text. */
  flush(): ThinkingStep {
    const rest = this.acc;
    this.acc = "";
    switch (this.state) {
      case State.LookingForOpening:
        this.state = State.ThinkingDone;
        return { thinking: "", content: trimLeft(rest) === "" ? "" : rest };
      case State.Thinking:
        return { thinking: rest, content: "" };
      case State.ThinkingDone:
        return { thinking: "", content: rest };
      default:
        return { thinking: "", content: "" };
    }
  }

  private eat(): [string, string, boolean] {
    const { open, close } = this.tags;
    switch (this.state) {
      case State.LookingForOpening: {
        const trimmed = trimLeft(this.acc);
        if (trimmed.startsWith(open)) {
          const after = trimLeft(trimmed.slice(open.length));
          this.acc = after;
          this.state = after === "" ? State.ThinkingStartedEatingWhitespace : State.Thinking;
          return ["", "", true];
        }
        if (open.startsWith(trimmed)) return ["", "", false]; // partial tag or whitespace only
        this.state = State.ThinkingDone;
        const untrimmed = this.acc;
        this.acc = "";
        return ["", untrimmed, false];
      }
      case State.ThinkingStartedEatingWhitespace: {
        const trimmed = trimLeft(this.acc);
        this.acc = "";
        if (trimmed === "") return ["", "", false];
        this.state = State.Thinking;
        this.acc = trimmed;
        return ["", "", true];
      }
      case State.Thinking: {
        const acc = this.acc;
        const i = acc.indexOf(close);
        if (i !== -1) {
          const thinking = acc.slice(0, i);
          const remaining = trimLeft(acc.slice(i + close.length));
          this.acc = "";
          this.state = remaining === "" ? State.ThinkingDoneEatingWhitespace : State.ThinkingDone;
          return [thinking, remaining, false];
        }
        const n = overlap(acc, close);
        if (n > 0) {
          this.acc = acc.slice(acc.length - n);
          return [acc.slice(0, acc.length - n), "", false];
        }
        this.acc = "";
        return [acc, "", false];
      }
      case State.ThinkingDoneEatingWhitespace: {
        const trimmed = trimLeft(this.acc);
        this.acc = "";
        if (trimmed !== "") this.state = State.ThinkingDone;
        return ["", trimmed, false];
      }
      case State.ThinkingDone: {
        const acc = this.acc;
        this.acc = "";
        return ["", acc, false];
      }
    }
  }
}

/**
 * Ollama's filterThinkTags (qwen3 family, deepseek-r1): `<think>…</think>` is removed from the
 * assistant messages before the last user message.
 */
export function stripHistoryThinking<M extends { role: string; content: string }>(messages: M[]): M[] {
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === "user") lastUser = i;
  });
  return messages.map((m, i) => {
    if (m.role !== "assistant" || i >= lastUser) return m;
    const p = new ThinkingParser({ open: "<think>", close: "</think>" });
    const { content } = p.add(m.content);
    return { ...m, content };
  });
}
