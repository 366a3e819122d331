// Tool calls in model output (Ollama's tools/template.go and tools/tools.go, reference §7.2):
// the tag that starts a call is inferred from the template's `{{ if .ToolCalls }}` block, the
// output after it is scanned for JSON calls, and Llama 3.x's python-style `[f(a=1)]` list is
// understood as well. Calls come back with object arguments, `function.index` and an id.
import { randomInt } from "node:crypto";
import type { ToolCall } from "../../api/types.js";
import { parseJson } from "../bounded-json.js";
import type { BranchNode, ListNode, Node } from "../../template/parser.js";
import type { PromptTemplate } from "./render.js";
import { braceScan, callsInJson, parsePythonCalls, parsePythonLiteral, resumeBrace, type BraceScan, type Json } from "./tool-call-syntax.js";

// JSON/python call syntax and request validation live in their own modules; re-exported here so
// that existing imports of tools.js keep working.
export { callsInJson, matchingBrace, parsePythonCalls } from "./tool-call-syntax.js";
export { ToolValidationError, validateTools } from "./tool-validation.js";

// ---------- tag inference ----------

function isToolCallsIf(n: Node): boolean {
  if (n.type !== "if") return false;
  return n.pipe.cmds.some((c) => c.args.some((a) => a.type === "field" && a.ident.includes("ToolCalls")));
}

/** findToolCallNode: the first `if` whose pipeline names .ToolCalls, searched depth first. */
function findToolCallNode(nodes: readonly Node[]): BranchNode | null {
  for (const n of nodes) {
    switch (n.type) {
      case "if": {
        if (isToolCallsIf(n)) return n;
        const r = findToolCallNode(n.list.nodes) ?? (n.elseList ? findToolCallNode(n.elseList.nodes) : null);
        if (r) return r;
        break;
      }
      case "list": {
        const r = findToolCallNode(n.nodes);
        if (r) return r;
        break;
      }
      case "range":
      case "with": {
        const r = findToolCallNode(n.list.nodes) ?? (n.elseList ? findToolCallNode(n.elseList.nodes) : null);
        if (r) return r;
        break;
      }
      default:
        break;
    }
  }
  return null;
}

/** findTextNode: the first non-blank text, stopping at actions and after the first branch. */
function findTextNode(nodes: readonly Node[]): string | null {
  for (const n of nodes) {
    switch (n.type) {
      case "text":
        if (n.text.trim() === "") continue;
        return n.text;
      case "if":
      case "range":
      case "with":
        return findTextNode(n.list.nodes) ?? (n.elseList ? findTextNode(n.elseList.nodes) : null);
      case "list": {
        const t = findTextNode(n.nodes);
        if (t !== null) return t;
        break;
      }
      case "action":
        return null;
      default:
        break;
    }
  }
  return null;
}

/** tools.parseTag: e.g. `<tool_call>`, `[TOOL_CALLS] [`; `{` when the template shows none. */
export function toolCallTagFromTree(root: ListNode): string {
  const tc = findToolCallNode(root.nodes);
  if (!tc) return "{";
  const text = findTextNode(tc.list.nodes);
  if (text === null) return "{";
  let tag = text.replaceAll("\r\n", "\n");
  const brace = tag.indexOf("{");
  if (brace !== -1) tag = tag.slice(0, brace);
  tag = tag.trim();
  return tag === "" ? "{" : tag;
}

// ---------- ids ----------

const ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789";

/** Ollama's toolCallId: `call_` + 8 characters of [a-z0-9]. */
export function toolCallId(): string {
  let s = "call_";
  for (let i = 0; i < 8; i++) s += ID_CHARS[randomInt(ID_CHARS.length)];
  return s;
}

// ---------- streaming parser ----------

export interface ToolDefinition {
  function?: { name?: string };
}

export interface ToolStep {
  calls: ToolCall[];
  content: string;
}

type Mode = "looking" | "json" | "python" | "done";

/**
 * Ollama's tools.Parser with the same rules: with a real tag (`<tool_call>`, `[TOOL_CALLS]`) text
 * before the tag is content and everything after it is scanned for calls; with the default tag
 * `{` calls are parsed only when the output starts with JSON, otherwise all of it is content.
 * Additions: a leading `[` starts a JSON array of calls or a Llama 3.x python-style list; a
 * multi-word tag (`[TOOL_CALLS] [`) matches on its first word; output that held no call at all
 * is given back as content at the end instead of being dropped.
 */
export class ToolCallParser {
  private mode: Mode = "looking";
  private buf = "";
  /** Raw text consumed since the call section began (given back if no call is ever found). */
  private raw = "";
  private n = 0;
  /** The scan of an unclosed call or list at the start of `buf`, resumed as text comes. */
  private open: BraceScan | undefined;
  /** Text added while a call is open, joined to `buf` once it closes: appending to `buf` and
   *  reading it again made V8 copy the whole string on every token. */
  private pieces: string[] = [];
  private readonly braceTag: boolean;
  /** A pythonic template's answer opened with prose: its call list may still come, after a blank line. */
  private afterProse = false;
  private bracketAhead = false;
  private readonly match: string;
  private readonly names: ReadonlySet<string>;

  constructor(
    readonly tag: string,
    tools: readonly ToolDefinition[],
  ) {
    this.braceTag = tag === "{" || tag === "[";
    this.match = this.braceTag ? tag : (tag.split(/\s+/)[0] ?? tag);
    this.names = new Set(tools.map((t) => t.function?.name).filter((n): n is string => typeof n === "string" && n !== ""));
  }

  /** Number of calls parsed so far. */
  get count(): number {
    return this.n;
  }

  add(text: string): ToolStep {
    const out: ToolStep = { calls: [], content: "" };
    if (this.mode === "done") {
      out.content = text;
      return out;
    }
    if (this.open) {
      const before = { ...this.open };
      this.pieces.push(text);
      if (resumeBrace(text, Object.assign(this.open, { at: 0 }), ...this.delimiters()) === -1) return out;
      // Closed in this piece: scan() goes over it again, from where the scan stood before it.
      this.buf += this.pieces.join("");
      this.pieces = [];
      this.open = { ...before, at: this.buf.length - text.length };
    } else this.buf += text;
    if (this.mode === "looking") {
      if (!this.look(out)) return out;
    }
    this.scan(out, false);
    return out;
  }

  flush(): ToolStep {
    const out: ToolStep = { calls: [], content: "" };
    if (this.mode === "looking" || this.mode === "done") {
      out.content = this.buf;
      this.buf = "";
      this.mode = "done";
      return out;
    }
    this.buf += this.pieces.join("");
    this.pieces = [];
    this.open = undefined; // scanned again whole, once
    this.scan(out, true);
    if (this.n === 0) out.content += this.raw + this.buf;
    this.raw = "";
    this.buf = "";
    this.mode = "done";
    return out;
  }

  /** Looks for the start of a call section; false while undecided or when the output is content. */
  private look(out: ToolStep): boolean {
    if (this.afterProse) return this.lookAfterProse(out);
    if (this.braceTag) {
      const lead = this.buf.replace(/^\s+/, "");
      if (lead === "") {
        out.content += this.buf;
        this.buf = "";
        return false;
      }
      out.content += this.buf.slice(0, this.buf.length - lead.length);
      this.buf = lead;
      const c = lead[0];
      let verdict: "json" | "python" | "no" | "wait";
      if (c === "{") verdict = "json";
      else if (c === "[") verdict = this.classifyBracket(lead);
      else verdict = "no";
      if (verdict === "wait") return false;
      if (verdict === "no" && this.tag === "[") {
        // pythonic templates (vLLM's Llama 4 and Gemma 3) let the model explain first and put the
        // calls at the end, after a blank line
        this.afterProse = true;
        return this.lookAfterProse(out);
      }
      if (verdict === "no") {
        out.content += this.buf;
        this.buf = "";
        this.mode = "done";
        return false;
      }
      this.mode = verdict;
      return true;
    }
    const i = this.buf.indexOf(this.match);
    if (i === -1) {
      this.emitShortOf(out, this.match);
      return false;
    }
    out.content += this.buf.slice(0, i);
    this.raw = this.match;
    this.buf = this.buf.slice(i + this.match.length);
    this.mode = "json";
    return true;
  }

  /** Gives the buffer to content but for a tail that may be the start of `marker`. */
  private emitShortOf(out: ToolStep, marker: string): void {
    let keep = 0;
    for (let k = Math.min(marker.length - 1, this.buf.length); k > 0; k--) {
      if (this.buf.endsWith(marker.slice(0, k))) {
        keep = k;
        break;
      }
    }
    out.content += this.buf.slice(0, this.buf.length - keep);
    this.buf = this.buf.slice(this.buf.length - keep);
  }

  /** Prose, then `\n\n[NAME(` with NAME a tool: the call list; any other `[` is prose. */
  private lookAfterProse(out: ToolStep): boolean {
    const marker = "\n\n[";
    for (;;) {
      // a `[` seen after a blank line and still undecided waits at the start of the buffer
      if (!this.bracketAhead) {
        const i = this.buf.indexOf(marker);
        if (i === -1) {
          this.emitShortOf(out, marker);
          return false;
        }
        out.content += this.buf.slice(0, i + 2);
        this.buf = this.buf.slice(i + 2);
      }
      const verdict = this.classifyBracket(this.buf);
      this.bracketAhead = verdict === "wait";
      if (verdict === "wait") return false;
      if (verdict === "python") {
        this.afterProse = false;
        this.mode = "python";
        return true;
      }
      out.content += "[";
      this.buf = this.buf.slice(1);
    }
  }

  /** `[` followed by `{` is a JSON list; by a tool name and `(` a python-style list. */
  private classifyBracket(lead: string): "json" | "python" | "no" | "wait" {
    const rest = lead.slice(1).replace(/^\s+/, "");
    if (rest === "") return "wait";
    if (rest[0] === "{") return "json";
    const m = /^[A-Za-z_][A-Za-z0-9_.-]*/.exec(rest);
    if (!m) return "no";
    const name = m[0];
    const after = rest.slice(name.length).replace(/^\s+/, "");
    if (after === "") {
      for (const n of this.names) if (n.startsWith(name)) return "wait";
      return "no";
    }
    return after[0] === "(" && this.names.has(name) ? "python" : "no";
  }

  /** What the open scan counts: a python-style list's brackets or a JSON object's braces. */
  private delimiters(): [string, string, string] {
    return this.mode === "python" ? ["[", "]", "\"'"] : ["{", "}", '"'];
  }

  private emit(out: ToolStep, calls: Array<{ name: string; arguments: Record<string, unknown> }>): void {
    for (const c of calls) {
      out.calls.push({ id: toolCallId(), function: { index: this.n++, name: c.name, arguments: c.arguments } });
    }
  }

  private scan(out: ToolStep, final: boolean): void {
    if (this.mode === "python") {
      this.open ??= braceScan(0);
      const end = resumeBrace(this.buf, this.open, ...this.delimiters());
      if (end === -1 && !final) return;
      this.open = undefined;
      const text = end === -1 ? this.buf : this.buf.slice(0, end + 1);
      const calls = parsePythonCalls(text, this.names);
      if (!calls) {
        if (end === -1) return; // final: flush() gives the text back
        out.content += this.raw + this.buf;
        this.raw = this.buf = "";
        this.mode = "done";
        return;
      }
      this.emit(out, calls);
      this.raw += text;
      this.buf = this.buf.slice(text.length);
      this.mode = "json"; // anything after the list: further calls or swallowed
      return;
    }
    if (this.mode !== "json") return;
    for (;;) {
      const start = this.open ? 0 : this.buf.indexOf("{");
      if (start === -1) {
        // Text between calls (closing tags, commas, brackets) is not content.
        this.raw += this.buf;
        this.buf = "";
        return;
      }
      const scan = (this.open ??= braceScan(start));
      const end = resumeBrace(this.buf, scan);
      if (end === -1) {
        this.raw += this.buf.slice(0, start);
        this.buf = this.buf.slice(start);
        scan.at -= start;
        return;
      }
      this.open = undefined;
      const text = this.buf.slice(start, end + 1);
      let calls: Array<{ name: string; arguments: Record<string, unknown> }> = [];
      let parsed: Json | undefined;
      try {
        parsed = parseJson(text) as Json;
      } catch {
        // a call whose arguments a template printed as a Python dict (`{'city': 'Paris', 'x': True}`),
        // as models trained on such templates write them
        parsed = parsePythonLiteral(text);
      }
      calls = parsed === undefined ? [] : callsInJson(parsed, this.names);
      if (calls.length === 0 && this.braceTag && this.n === 0) {
        // The output starts with JSON that is not a call: it is content, and so is the rest.
        out.content += this.raw + this.buf;
        this.raw = this.buf = "";
        this.mode = "done";
        return;
      }
      this.emit(out, calls);
      this.raw += this.buf.slice(0, end + 1);
      this.buf = this.buf.slice(end + 1);
    }
  }
}
