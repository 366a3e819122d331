// Tool calls in model output (Ollama's tools/template.go and tools/tools.go, reference §7.2):
// the tag that starts a call is inferred from the template's `{{ if .ToolCalls }}` block, the
// output after it is scanned for JSON calls, and Llama 3.x's python-style `[f(a=1)]` list is
// understood as well. Calls come back with object arguments, `function.index` and an id.
import { randomInt } from "node:crypto";
import type { ToolCall } from "../../api/types.js";
import type { BranchNode, ListNode, Node } from "./gotemplate/parser.js";
import type { PromptTemplate } from "./render.js";

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

export function toolCallTag(t: PromptTemplate): string {
  switch (t.kind) {
    case "go":
      return toolCallTagFromTree(t.template.template.root);
    case "jinja":
      if (t.source.includes("<tool_call>")) return "<tool_call>";
      if (t.source.includes("[TOOL_CALLS]")) return "[TOOL_CALLS]";
      return "{";
    case "default":
      return "{";
  }
}

// ---------- ids ----------

const ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789";

/** Ollama's toolCallId: `call_` + 8 characters of [a-z0-9]. */
export function toolCallId(): string {
  let s = "call_";
  for (let i = 0; i < 8; i++) s += ID_CHARS[randomInt(ID_CHARS.length)];
  return s;
}

// ---------- JSON scanning ----------

/** Index of the `}` closing the object that starts at `start` (string/escape aware), or -1. */
export function matchingBrace(s: string, start: number, open = "{", close = "}", quotes = '"'): number {
  let depth = 0;
  let quote = "";
  let escaped = false;
  for (let i = start; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === quote) quote = "";
      continue;
    }
    if (quotes.includes(c)) quote = c;
    else if (c === open) depth++;
    else if (c === close) {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const isObject = (v: unknown): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

function argumentsOf(v: Json | undefined): Record<string, unknown> | null {
  if (v === undefined || v === null) return {};
  if (isObject(v)) return v;
  if (typeof v === "string") {
    if (v.trim() === "") return {};
    try {
      const parsed: unknown = JSON.parse(v);
      return isObject(parsed) ? parsed : null;
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * The calls in one parsed JSON value: `{"name", "arguments"|"parameters"}` (arguments may be a
 * JSON string), `{"<tool name>": {...}}`, or such an object nested anywhere inside (OpenAI's
 * `{"type":"function","function":{...}}`, arrays of calls). Names must be among the tools.
 */
export function callsInJson(v: Json, names: ReadonlySet<string>): Array<{ name: string; arguments: Record<string, unknown> }> {
  if (Array.isArray(v)) return v.flatMap((x) => callsInJson(x, names));
  if (!isObject(v)) return [];
  if ("name" in v) {
    const name = v.name;
    if (typeof name !== "string" || !names.has(name)) return [];
    const args = argumentsOf(v.arguments ?? v.parameters);
    return args ? [{ name, arguments: args }] : [];
  }
  const keys = Object.keys(v);
  if (keys.length === 1 && names.has(keys[0]!) && isObject(v[keys[0]!])) {
    return [{ name: keys[0]!, arguments: v[keys[0]!] as Record<string, unknown> }];
  }
  for (const child of Object.values(v)) {
    if (typeof child === "object" && child !== null) {
      const found = callsInJson(child, names);
      if (found.length > 0) return found;
    }
  }
  return [];
}

// ---------- python-style calls (Llama 3.x: [get_weather(city="Paris"), f(x=1)]) ----------

class PyReader {
  i = 0;
  constructor(readonly s: string) {}
  ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }
  peek(): string {
    this.ws();
    return this.s[this.i] ?? "";
  }
  expect(c: string): void {
    if (this.peek() !== c) throw new Error(`expected ${c}`);
    this.i++;
  }
  ident(): string {
    this.ws();
    const m = /^[A-Za-z_][A-Za-z0-9_.-]*/.exec(this.s.slice(this.i));
    if (!m) throw new Error("expected a name");
    this.i += m[0].length;
    return m[0];
  }
  value(): Json {
    const c = this.peek();
    if (c === '"' || c === "'") return this.string();
    if (c === "[" || c === "(") {
      const close = c === "[" ? "]" : ")";
      this.i++;
      const out: Json[] = [];
      while (this.peek() !== close) {
        out.push(this.value());
        if (this.peek() === ",") this.i++;
        else if (this.peek() !== close) throw new Error("expected , or " + close);
      }
      this.i++;
      return out;
    }
    if (c === "{") {
      this.i++;
      const out: Record<string, Json> = {};
      while (this.peek() !== "}") {
        const k = this.value();
        this.expect(":");
        out[String(k)] = this.value();
        if (this.peek() === ",") this.i++;
        else if (this.peek() !== "}") throw new Error("expected , or }");
      }
      this.i++;
      return out;
    }
    const m = /^-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)/.exec(this.s.slice(this.i));
    if (m) {
      this.i += m[0].length;
      return Number(m[0]);
    }
    const word = this.ident();
    if (word === "True" || word === "true") return true;
    if (word === "False" || word === "false") return false;
    if (word === "None" || word === "null") return null;
    return word; // a bare name: keep its text
  }
  string(): string {
    const q = this.s[this.i]!;
    let out = "";
    this.i++;
    while (this.i < this.s.length) {
      const c = this.s[this.i++]!;
      if (c === q) return out;
      if (c !== "\\") {
        out += c;
        continue;
      }
      const e = this.s[this.i++] ?? "";
      const map: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0" };
      if (e === "u") {
        out += String.fromCharCode(parseInt(this.s.slice(this.i, this.i + 4), 16));
        this.i += 4;
      } else out += map[e] ?? e;
    }
    throw new Error("unterminated string");
  }
}

/** Parses `[f(a=1, b="x"), g()]`; null when it is not such a list of known tools. */
export function parsePythonCalls(text: string, names: ReadonlySet<string>): Array<{ name: string; arguments: Record<string, unknown> }> | null {
  try {
    const r = new PyReader(text.trim());
    r.expect("[");
    const calls: Array<{ name: string; arguments: Record<string, unknown> }> = [];
    while (r.peek() !== "]") {
      const name = r.ident();
      if (!names.has(name)) return null;
      r.expect("(");
      const args: Record<string, unknown> = {};
      while (r.peek() !== ")") {
        const key = r.ident();
        r.expect("=");
        args[key] = r.value();
        if (r.peek() === ",") r.i++;
        else if (r.peek() !== ")") return null;
      }
      r.i++;
      calls.push({ name, arguments: args });
      if (r.peek() === ",") r.i++;
      else if (r.peek() !== "]") return null;
    }
    r.i++;
    r.ws();
    if (r.i !== r.s.length) return null;
    return calls.length > 0 ? calls : null;
  } catch {
    return null;
  }
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
  private readonly braceTag: boolean;
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
    this.buf += text;
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
    this.scan(out, true);
    if (this.n === 0) out.content += this.raw + this.buf;
    this.raw = "";
    this.buf = "";
    this.mode = "done";
    return out;
  }

  /** Looks for the start of a call section; false while undecided or when the output is content. */
  private look(out: ToolStep): boolean {
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
      let keep = 0;
      for (let k = Math.min(this.match.length - 1, this.buf.length); k > 0; k--) {
        if (this.buf.endsWith(this.match.slice(0, k))) {
          keep = k;
          break;
        }
      }
      out.content += this.buf.slice(0, this.buf.length - keep);
      this.buf = this.buf.slice(this.buf.length - keep);
      return false;
    }
    out.content += this.buf.slice(0, i);
    this.raw = this.match;
    this.buf = this.buf.slice(i + this.match.length);
    this.mode = "json";
    return true;
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

  private emit(out: ToolStep, calls: Array<{ name: string; arguments: Record<string, unknown> }>): void {
    for (const c of calls) {
      out.calls.push({ id: toolCallId(), function: { index: this.n++, name: c.name, arguments: c.arguments } });
    }
  }

  private scan(out: ToolStep, final: boolean): void {
    if (this.mode === "python") {
      const end = matchingBrace(this.buf, 0, "[", "]", "\"'");
      if (end === -1 && !final) return;
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
      const start = this.buf.indexOf("{");
      if (start === -1) {
        // Text between calls (closing tags, commas, brackets) is not content.
        this.raw += this.buf;
        this.buf = "";
        return;
      }
      const end = matchingBrace(this.buf, start);
      if (end === -1) {
        this.raw += this.buf.slice(0, start);
        this.buf = this.buf.slice(start);
        return;
      }
      const text = this.buf.slice(start, end + 1);
      let calls: Array<{ name: string; arguments: Record<string, unknown> }> = [];
      try {
        calls = callsInJson(JSON.parse(text) as Json, this.names);
      } catch {
        calls = [];
      }
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

// ---------- request validation ----------

/** Go's name for a JSON value's kind, as encoding/json words its errors. */
function goKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "boolean") return "bool";
  return typeof v; // string, number, object
}

function unmarshalError(v: unknown, field: string, type: string): Error {
  return new ToolValidationError(`json: cannot unmarshal ${goKind(v)} into Go struct field ${field} of type ${type}`);
}

export class ToolValidationError extends Error {}

/**
 * `tools` of /api/chat, checked as Ollama's JSON decoder checks api.Tool (same messages): a tool
 * that is not an object, a `function` that is not an object, a name that is not a string …
 * Null entries are skipped, as Go decodes them to an empty tool.
 */
export function validateTools(raw: unknown): Array<Record<string, unknown>> {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw unmarshalError(raw, "ChatRequest.tools", "api.Tools");
  const out: Array<Record<string, unknown>> = [];
  for (const t of raw) {
    if (t === null) continue;
    if (!isObject(t)) throw unmarshalError(t, "ChatRequest.tools", "api.Tool");
    if (t.type !== undefined && t.type !== null && typeof t.type !== "string") throw unmarshalError(t.type, "Tool.tools.type", "string");
    const f = t.function;
    if (f !== undefined && f !== null) {
      if (!isObject(f)) throw unmarshalError(f, "Tool.tools.function", "api.ToolFunction");
      if (f.name !== undefined && f.name !== null && typeof f.name !== "string") throw unmarshalError(f.name, "ToolFunction.tools.function.name", "string");
      if (f.description !== undefined && f.description !== null && typeof f.description !== "string") {
        throw unmarshalError(f.description, "ToolFunction.tools.function.description", "string");
      }
      const p = f.parameters;
      if (p !== undefined && p !== null) {
        if (!isObject(p)) throw unmarshalError(p, "ToolFunction.tools.function.parameters", "api.ToolFunctionParameters");
        if (p.type !== undefined && p.type !== null && typeof p.type !== "string") {
          throw unmarshalError(p.type, "ToolFunctionParameters.tools.function.parameters.type", "string");
        }
        if (p.required !== undefined && p.required !== null && (!Array.isArray(p.required) || !p.required.every((r) => typeof r === "string"))) {
          throw unmarshalError(p.required, "ToolFunctionParameters.tools.function.parameters.required", "[]string");
        }
        if (p.properties !== undefined && p.properties !== null) {
          if (!isObject(p.properties)) throw unmarshalError(p.properties, "ToolFunctionParameters.tools.function.parameters.properties", "api.ToolPropertiesMap");
          for (const v of Object.values(p.properties)) {
            if (!isObject(v)) throw unmarshalError(v, "ToolFunctionParameters.tools.function.parameters.properties", "api.ToolProperty");
          }
        }
      }
    }
    const fn = isObject(f) ? f : {};
    out.push({ ...t, function: { ...fn, name: typeof fn.name === "string" ? fn.name : "" } });
  }
  return out;
}
