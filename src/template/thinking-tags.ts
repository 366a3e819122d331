// Thinking tags inferred from a Go template's tree (Ollama's thinking.InferTags): a template
// analysis that both the registry (capabilities) and the daemon (the streaming parser) need.
import type { ListNode, Node } from "./parser.js";

export interface ThinkingTags {
  open: string;
  close: string;
}

/**
 * thinking.InferTags: find a `.Thinking` field inside a range over `.Messages`, go up to the
 * nearest list and take its first and last text nodes (trimmed) as the opening and closing tags.
 * Every such reference is visited in template order; a later one overwrites a tag only where its
 * list starts (ends) with text, exactly as Ollama's heuristic does.
 */
export function inferThinkingTagsFromTree(root: ListNode): ThinkingTags {
  let open = "";
  let close = "";
  const ancestors: Node[] = [];

  const usesField = (n: Node | null, field: string): boolean => {
    let found = false;
    visit(n, (x) => {
      if (x.type === "field" && x.ident[0] === field) found = true;
      return true;
    });
    return found;
  };

  const enter = (n: Node): boolean => {
    if (n.type === "field" && n.ident[0] === "Thinking") {
      let range: Node | undefined;
      for (let i = ancestors.length - 1; i >= 0; i--) {
        if (ancestors[i]!.type === "range") {
          range = ancestors[i];
          break;
        }
      }
      if (!range || range.type !== "range" || !usesField(range.pipe, "Messages")) return true;
      for (let i = ancestors.length - 1; i >= 0; i--) {
        const l = ancestors[i]!;
        if (l.type !== "list") continue;
        const first = l.nodes[0];
        const last = l.nodes[l.nodes.length - 1];
        if (first?.type === "text") open = first.text.trim();
        if (last?.type === "text") close = last.text.trim();
        break;
      }
    }
    return true;
  };

  // templateVisit: pre-order with an ancestor stack (the node itself is on the stack while its
  // children are visited).
  const walk = (n: Node | null): void => {
    if (!n) return;
    ancestors.push(n);
    if (enter(n)) {
      for (const c of children(n)) walk(c);
    }
    ancestors.pop();
  };
  walk(root);
  return { open, close };
}

function children(n: Node): Array<Node | null> {
  switch (n.type) {
    case "list":
      return n.nodes;
    case "if":
    case "range":
    case "with":
      return [n.pipe, n.list, n.elseList];
    case "action":
      return [n.pipe];
    case "template":
      return [n.pipe];
    case "pipe":
      return n.cmds;
    case "command":
      return n.args;
    default:
      return [];
  }
}

function visit(n: Node | null, fn: (n: Node) => boolean): void {
  if (!n) return;
  if (!fn(n)) return;
  for (const c of children(n)) visit(c, fn);
}


/** The thinking tags of models whose GGUF Jinja template is used (no Go template to infer them
 *  from), the first pair whose both tags the template writes: DeepSeek/Qwen/GLM's `<think>`,
 *  Magistral's `[THINK]`, Seed-OSS's, Command A's, MiniMax's, Gemma 4's thought channel and Apriel's
 *  plain-text opening. */
const JINJA_THINKING_TAGS: readonly ThinkingTags[] = [
  { open: "<think>", close: "</think>" },
  { open: "[THINK]", close: "[/THINK]" },
  { open: "<seed:think>", close: "</seed:think>" },
  { open: "<|START_THINKING|>", close: "<|END_THINKING|>" },
  { open: "<mm:think>", close: "</mm:think>" },
  { open: "<|channel>thought", close: "<channel|>" },
  { open: "Here are my reasoning steps:", close: "[BEGIN FINAL RESPONSE]" },
];

/** A template that builds its thinking tags (Kimi K3's `open_tag('think')`, Hunyuan's
 *  `'<think{}>'.format(…)`): it thinks, with tags only a render shows (daemon/prompt/thinking-probe.ts). */
export function buildsThinkingTags(source: string): boolean {
  return /\(\s*['"]think['"]|['"]<\/?think\{\}>['"]/.test(source);
}

export function jinjaThinkingTags(source: string): ThinkingTags {
  return JINJA_THINKING_TAGS.find((t) => source.includes(t.open) && source.includes(t.close)) ?? { open: "", close: "" };
}
