// The syntax of tool calls in model output (part of Ollama's tools/tools.go, reference §7.2):
// JSON objects scanned out of free text, and Llama 3.x's python-style `[f(a=1)]` list. Used by
// the streaming ToolCallParser in tools.ts.

import { parseJson } from "../bounded-json.js";

// ---------- JSON scanning ----------

/** Where a scan for a closing brace stopped: resumed when more text comes, so text streamed one
 *  token at a time is scanned once, not once per token (a long call's arguments, such as a file
 *  written through a tool, took time in the square of their length). */
export interface BraceScan {
  /** The next index to look at. */
  at: number;
  depth: number;
  quote: string;
  escaped: boolean;
}

export const braceScan = (start: number): BraceScan => ({ at: start, depth: 0, quote: "", escaped: false });

/** Goes on with `scan` over `s`: the index of the brace that closes the one it started at, or -1
 *  with `scan` left at the end of `s`. `s` may be the end of the text only, from index `base` on
 *  (at or before `scan.at`), so that a long text is not read again; indices stay the whole text's. */
export function resumeBrace(s: string, scan: BraceScan, open = "{", close = "}", quotes = '"', base = 0): number {
  let { depth, quote, escaped } = scan;
  let i = scan.at - base;
  let found = -1;
  for (; i < s.length; i++) {
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
      if (depth === 0) {
        found = i;
        break;
      }
    }
  }
  Object.assign(scan, { at: base + i, depth, quote, escaped });
  return found === -1 ? -1 : base + found;
}

/** Index of the `}` closing the object that starts at `start` (string/escape aware), or -1. */
export function matchingBrace(s: string, start: number, open = "{", close = "}", quotes = '"'): number {
  return resumeBrace(s, braceScan(start), open, close, quotes);
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Sets an argument the model named: as an own property even when the name is "__proto__"
 *  (a plain assignment would set the object's prototype and lose the argument). */
export function setArgument(args: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(args, key, { value, enumerable: true, writable: true, configurable: true });
}
export const isObject = (v: unknown): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

function argumentsOf(v: Json | undefined): Record<string, unknown> | null {
  if (v === undefined || v === null) return {};
  if (isObject(v)) return v;
  if (typeof v === "string") {
    if (v.trim() === "") return {};
    try {
      const parsed: unknown = parseJson(v);
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
  if ("name" in v || "tool_name" in v) {
    // Command R's calls name the tool as "tool_name"
    const name = "name" in v ? v.name : v.tool_name;
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

/** What may follow an argument's closing quote: the next argument, or the call's end. A raw
 *  string (LFM2's template writes `'` + value + `'`) closes only at a quote so followed. */
const AFTER_ARGUMENT_SOURCE = String.raw`\s*(?:\)|,\s*[A-Za-z_][\w.-]*\s*=)`;
const AFTER_ARGUMENT = new RegExp(`^${AFTER_ARGUMENT_SOURCE}`);
/** Where a raw string ends as this reader finds it: tool_choice's grammar keeps a raw value free
 *  of these (tool-call-shape.ts), so that what it lets a model write reads back whole. */
export const RAW_STRING_ENDS: readonly string[] = [`'${AFTER_ARGUMENT_SOURCE}`];

class PyReader {
  i = 0;
  constructor(
    readonly s: string,
    /** Strings are written as they are between their quotes, no escapes (LFM2's template). */
    private readonly raw = false,
  ) {}
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
  /** `arg`: an argument's own value, where a raw reader's single-quoted strings are raw (a list's
   *  or dict's are printed by Python or JSON, escapes and all, as is a JSON string). */
  value(arg = false): Json {
    const c = this.peek();
    if (c === '"' || c === "'") return this.string(arg && this.raw && c === "'");
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
  string(raw = false): string {
    const q = this.s[this.i]!;
    let out = "";
    this.i++;
    if (raw) {
      for (let j = this.s.indexOf(q, this.i); j !== -1; j = this.s.indexOf(q, j + 1)) {
        if (!AFTER_ARGUMENT.test(this.s.slice(j + 1, j + 65))) continue;
        out = this.s.slice(this.i, j);
        this.i = j + 1;
        return out;
      }
      throw new Error("unterminated string");
    }
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

/** A Python literal as a template's `{{ value }}` prints a list or dict (`['a', True]`,
 *  `{'k': None}`), read as JSON values; undefined when `text` is not one whole literal. */
export function parsePythonLiteral(text: string): Json | undefined {
  try {
    const r = new PyReader(text.trim());
    const v = r.value();
    r.ws();
    return r.i === r.s.length ? v : undefined;
  } catch {
    return undefined; // not a literal (or nested past the stack)
  }
}

/** Parses `[f(a=1, b="x"), g()]`; null when it is not such a list of known tools. `raw`: its
 *  strings are written as they are (see PyReader). */
export function parsePythonCalls(text: string, names: ReadonlySet<string>, raw = false): Array<{ name: string; arguments: Record<string, unknown> }> | null {
  try {
    // a list `[f(a=1), g()]`, or calls one a line (OLMo 3), perhaps in a ```python fence (MiniCPM3)
    const body = text.trim().replace(/^```(?:python|py)?\s*\n([\s\S]*?)\n?```$/, "$1").trim();
    const listed = body.startsWith("[");
    const r = new PyReader(listed ? body : `[${body}]`, raw);
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
        setArgument(args, key, r.value(true));
        if (r.peek() === ",") r.i++;
        else if (r.peek() !== ")") return null;
      }
      r.i++;
      calls.push({ name, arguments: args });
      const after = r.i;
      const next = r.peek();
      if (next === ",") r.i++;
      else if (next !== "]" && (listed || !r.s.slice(after, r.i).includes("\n"))) return null;
    }
    r.i++;
    r.ws();
    if (r.i !== r.s.length) return null;
    return calls.length > 0 ? calls : null;
  } catch {
    return null;
  }
}
