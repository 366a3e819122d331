// Tool calls written as markup rather than JSON (the dialects of tool-dialect.ts): the text before
// the call section is content, streamed as it comes (trailing whitespace held back, as Ollama's
// qwen3-coder parser does, so the space before a call is not sent); each call is read once its
// markup closes, its values typed by the tool's parameter schema as Ollama types them.
import { parseJson } from "../bounded-json.js";
import { braceScan, isObject, parsePythonCalls, parsePythonLiteral, resumeBrace, setArgument, type BraceScan } from "./tool-call-syntax.js";
import { pairsClose, pythonEnd, sectionEnd, type ToolDialect } from "./tool-dialect.js";
import { ToolCallParser, toolCallId, type ToolStep } from "./tools.js";

export interface ToolStreamParser {
  add(text: string): ToolStep;
  flush(): ToolStep;
  readonly count: number;
}

export interface ToolSpec {
  function?: { name?: string; parameters?: unknown };
}

interface ParsedCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** The next whole call (or list of calls) in a call section, and where it ends; undefined while
 *  none is whole (with `final`, what is there is read as it stands). A closing tag can only start
 *  at or after `from` (the text before was searched already). `recent` is the end of `s` from
 *  `recent.base` on, built apart: a scan that goes on from there reads it instead of `s`, which
 *  is appended to piece by piece and would be copied whole by the read. */
type Reader = (s: string, final: boolean, from: number, recent: Recent) => { calls: ParsedCall[]; end: number } | undefined;
interface Recent {
  text: string;
  base: number;
}

/** The text a scan at `at` goes on over: `recent` when it reaches back that far, else all of `s`. */
function scanText(s: string, at: number, recent: Recent): Recent {
  return at >= recent.base ? recent : { text: s, base: 0 };
}

/** The reader of a model's tool calls, for the syntax its template shows. */
export function toolCallParser(dialect: ToolDialect, tools: readonly ToolSpec[]): ToolStreamParser {
  const schema = new ToolSchemas(tools, "exact" in dialect && dialect.exact === true);
  switch (dialect.kind) {
    case "json":
      return new ToolCallParser(dialect.tag, tools);
    case "xml-function":
      return new MarkupCallParser([dialect.start, "<function="], readXmlFunction(schema), "</function>", sectionEnd(dialect));
    case "arg-pairs":
      return new MarkupCallParser([dialect.start, dialect.unit], readArgPairs(dialect.unit, dialect.suffix, schema), pairsClose(dialect.unit), sectionEnd(dialect));
    case "invoke":
      return new MarkupCallParser([dialect.start, `<${dialect.ns}${dialect.call} name="`], readInvoke(dialect, schema), `</${dialect.ns}${dialect.call}>`, sectionEnd(dialect));
    case "gemma4":
      // only its own tag starts a call section, as in Ollama's gemma4 parser: "call:" is also prose
      return new MarkupCallParser([dialect.start], readGemma4(), "}", sectionEnd(dialect));
    case "python":
      return pythonEnd(dialect.start) === ""
        ? new MarkupCallParser([dialect.start], readPython(schema.names), "]", "")
        : new MarkupCallParser([dialect.start], readPythonSection(dialect.start, pythonEnd(dialect.start), schema.names), pythonEnd(dialect.start), "");
    case "named-json":
      return new MarkupCallParser([dialect.start], readNamedJson(schema.names), "}");
    case "elements":
      return new MarkupCallParser([dialect.start, `${dialect.ns}<invoke name="`], readElements(dialect.ns, schema), `${dialect.ns}</invoke>`, sectionEnd(dialect));
    case "xtml":
      return new MarkupCallParser([dialect.start, `${dialect.open}call tool="`], readXtml(dialect, schema), `${dialect.close}call${dialect.sep}`, sectionEnd(dialect));
    case "recipient":
      return new RecipientParser(dialect.marker, dialect.text, schema.names);
  }
}

/** Longest end of `s` that begins `tag`. */
function partialAtEnd(s: string, tag: string): number {
  for (let k = Math.min(tag.length - 1, s.length); k > 0; k--) if (s.endsWith(tag.slice(0, k))) return k;
  return 0;
}

/**
 * functionary v3.2: messages addressed by a line each, the first right after the generation
 * prompt's marker: `all\nprose>>>get_weather\n{"city": "Rome"}>>>…`. Prose to the text recipient
 * is content (its line dropped, also without tools); a known tool's line starts a call whose JSON
 * arguments are read when their braces close. Output that does not start with such a line is
 * content as it stands.
 */
class RecipientParser implements ToolStreamParser {
  private mode: "recipient" | "text" | "call" | "after" = "recipient";
  private buf = "";
  private n = 0;
  private call: { name: string; line: string; start: number; scan: BraceScan | undefined } | undefined;
  /** The text the last add appended, and its index in the buffer. */
  private fresh: Recent = { text: "", base: Infinity };

  constructor(
    private readonly marker: string,
    private readonly text: string,
    private readonly names: ReadonlySet<string>,
  ) {}

  get count(): number {
    return this.n;
  }

  add(text: string): ToolStep {
    const out: ToolStep = { calls: [], content: "" };
    this.buf += text;
    this.fresh = { text, base: this.buf.length - text.length };
    this.step(out, false);
    return out;
  }

  /** The buffer replaced: the fresh text no longer sits at its old index. */
  private setBuf(v: string): void {
    this.buf = v;
    this.fresh = { text: "", base: Infinity };
  }

  flush(): ToolStep {
    const out: ToolStep = { calls: [], content: "" };
    this.step(out, true);
    if (this.mode === "call" && this.call) out.content += this.call.line + this.buf; // cut off: as written
    else if (this.mode === "recipient" && this.buf.trim() !== this.text) out.content += this.buf;
    else if (this.mode !== "recipient") out.content += this.buf;
    this.buf = "";
    this.call = undefined;
    this.mode = "text";
    return out;
  }

  private step(out: ToolStep, final: boolean): void {
    for (;;) {
      if (this.mode === "recipient") {
        const nl = this.buf.indexOf("\n");
        if (nl === -1) {
          // no line yet: a recipient is a short word; anything else is prose
          if (this.buf.length > 64 || /[^\w.-]/.test(this.buf)) this.mode = "text";
          else return;
          continue;
        }
        const name = this.buf.slice(0, nl);
        if (name === this.text) {
          this.setBuf(this.buf.slice(nl + 1));
          this.mode = "text";
        } else if (this.names.has(name)) {
          this.call = { name, line: this.buf.slice(0, nl + 1), start: 0, scan: undefined };
          this.setBuf(this.buf.slice(nl + 1));
          this.mode = "call";
        } else this.mode = "text";
        continue;
      }
      if (this.mode === "text" || this.mode === "after") {
        const at = this.buf.indexOf(this.marker);
        if (at !== -1) {
          out.content += this.mode === "after" ? this.buf.slice(0, at).trimStart() : this.buf.slice(0, at);
          this.setBuf(this.buf.slice(at + this.marker.length));
          this.mode = "recipient";
          continue;
        }
        const keep = final ? 0 : partialAtEnd(this.buf, this.marker);
        const sent = this.buf.slice(0, this.buf.length - keep);
        out.content += this.mode === "after" ? sent.trimStart() : sent;
        if (this.mode === "after" && sent.trim() !== "") this.mode = "text";
        this.setBuf(this.buf.slice(this.buf.length - keep));
        return;
      }
      // a call: its arguments' braces
      const c = this.call!;
      if (!c.scan) {
        const open = this.buf.search(/\S/);
        if (open === -1) return;
        if (this.buf[open] !== "{") {
          // no arguments follow: the line was prose after all
          this.setBuf(c.line + this.buf);
          this.call = undefined;
          this.mode = "text";
          continue;
        }
        c.start = open;
        c.scan = braceScan(open);
      }
      // only the new text is scanned: reading the whole buffer would copy it on every piece
      const t = c.scan.at >= this.fresh.base ? this.fresh : { text: this.buf, base: 0 };
      const close = resumeBrace(t.text, c.scan, "{", "}", '"', t.base);
      if (close === -1) return;
      let args: unknown;
      try {
        args = parseJson(this.buf.slice(c.start, close + 1));
      } catch {
        args = undefined;
      }
      if (isObject(args)) out.calls.push({ id: toolCallId(), function: { index: this.n++, name: c.name, arguments: args } });
      else out.content += c.line + this.buf.slice(0, close + 1);
      this.setBuf(this.buf.slice(close + 1));
      this.call = undefined;
      this.mode = "after";
    }
  }
}

class MarkupCallParser implements ToolStreamParser {
  private mode: "looking" | "calls" | "done" = "looking";
  private buf = "";
  /** Section text already read (given back as content if no call is ever found). */
  private raw = "";
  private n = 0;
  /** How much of `buf` was searched for a closing tag without finding one. */
  private searched = 0;
  /** The last characters seen, that may begin the closing tag. */
  private tail = "";
  /** The text added since the buffer was last read, and the few characters before it. */
  private unread = "";
  private carry = "";

  constructor(
    private readonly starts: readonly string[],
    private readonly read: Reader,
    /** A unit can only close on a piece holding this character, or ends with this tag: others are
     *  not read again. */
    private readonly closer: string,
    /** The tag that closes the call section ("" for none): text after the calls, past it, is
     *  content (Gemma 4's template writes the answer's text after its calls). Undefined: text
     *  after the calls is not told apart from the section's own tokens, and goes. */
    private readonly sectionClose?: string,
  ) {}

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
    const entered = this.mode === "looking";
    if (entered && !this.look(out)) return out;
    if (this.mode !== "calls") return out;
    this.unread = entered ? "" : this.unread + text;
    if (entered) this.carry = "";
    if (this.mayClose(entered ? this.buf : text)) this.take(out, false);
    return out;
  }

  flush(): ToolStep {
    const out: ToolStep = { calls: [], content: "" };
    if (this.mode === "calls") {
      this.take(out, true);
      if (this.n === 0) out.content = this.raw + this.buf;
      else if (this.sectionClose !== undefined) out.content = textAfterCalls(this.buf, this.sectionClose);
    } else if (this.mode === "looking") out.content = this.buf;
    this.raw = this.buf = "";
    this.mode = "done";
    return out;
  }

  /**
   * Whether a unit may have closed with `text`: it holds the closing character, or the closing
   * tag, also across the previous piece. Only then is the buffer read: reading it flattens the
   * string it was appended to, a copy of all of it, so a long call read on every piece (MiniMax-M3's
   * separator ends in `>`) took the square of its length: 27 s for 280 KB in 3-character pieces.
   */
  private mayClose(text: string): boolean {
    if (this.closer.length === 1) return text.includes(this.closer);
    const window = this.tail + text;
    this.tail = window.slice(-(this.closer.length - 1));
    return window.includes(this.closer);
  }

  /** Finds the section's start; until then the text is content, less what might begin a start tag. */
  private look(out: ToolStep): boolean {
    let at = -1;
    for (const s of this.starts) {
      const i = this.buf.indexOf(s);
      if (i !== -1 && (at === -1 || i < at)) at = i;
    }
    if (at !== -1) {
      out.content += this.buf.slice(0, at).trimEnd();
      this.buf = this.buf.slice(at);
      this.mode = "calls";
      return true;
    }
    let partial = 0;
    for (const s of this.starts) {
      for (let k = Math.min(s.length - 1, this.buf.length); k > partial; k--) {
        if (this.buf.endsWith(s.slice(0, k))) {
          partial = k;
          break;
        }
      }
    }
    const before = this.buf.slice(0, this.buf.length - partial);
    const keep = partial + before.length - before.trimEnd().length;
    out.content += this.buf.slice(0, this.buf.length - keep);
    this.buf = this.buf.slice(this.buf.length - keep);
    return false;
  }

  private take(out: ToolStep, final: boolean): void {
    const text = this.carry + this.unread;
    let recent: Recent = { text, base: this.buf.length - text.length };
    // a scan may wait a few characters back (a `<|"|>` cut off at the end)
    this.carry = text.slice(-8);
    this.unread = "";
    for (;;) {
      // a closing tag may have begun in the text searched before (none is longer than 32)
      const r = this.read(this.buf, final, Math.max(0, this.searched - 32), recent);
      if (!r) {
        this.searched = this.buf.length;
        return;
      }
      this.searched = 0;
      for (const c of r.calls) out.calls.push({ id: toolCallId(), function: { index: this.n++, name: c.name, arguments: c.arguments } });
      this.raw += this.buf.slice(0, r.end);
      this.buf = this.buf.slice(r.end);
      this.carry = this.buf.slice(-8);
      recent = { text: "", base: this.buf.length };
      if (r.end === 0) return;
    }
  }
}

/** What no call took at the end of a call section: its closing tag and the space around it are
 *  the section's; the rest is text the model wrote after its calls. */
function textAfterCalls(rest: string, close: string): string {
  let t = rest.trimStart();
  while (close !== "" && t.startsWith(close)) t = t.slice(close.length).trimStart();
  return t;
}

// ---------- values ----------

/** The tools' parameter types, by tool and parameter name. */
class ToolSchemas {
  readonly names: ReadonlySet<string>;
  private readonly props = new Map<string, Record<string, unknown>>();

  /** `exact`: the template writes values right between their tags (GLM's `<arg_value>v</arg_value>`),
   *  so a newline at either end is the value's own; else (Qwen3-Coder's `<parameter=k>\nv\n`) one
   *  newline each side is the template's padding. */
  constructor(
    tools: readonly ToolSpec[],
    private readonly exact = false,
  ) {
    const names = new Set<string>();
    for (const t of tools) {
      const name = t.function?.name;
      if (typeof name !== "string" || name === "") continue;
      names.add(name);
      const params = t.function?.parameters;
      const props = isObject(params) ? params.properties : undefined;
      if (isObject(props)) this.props.set(name, props);
    }
    this.names = names;
  }

  /** A parameter's schema (undefined: not known). */
  param(tool: string, param: string): unknown {
    return this.props.get(tool)?.[param];
  }

  /** A value written as text, typed as Ollama's qwen3-coder and GLM parsers type it: null first,
   *  then boolean, integer, number, array, object, else the text itself. A list or dict may be
   *  JSON or, where a template printed it with `{{ value }}` (Seed-OSS, MiniCPM), a Python literal;
   *  nothing at all is an empty one (MiniMax-M3 writes a list as its items). */
  value(tool: string, param: string, raw: string): unknown {
    return this.typed(this.param(tool, param), raw);
  }

  /** `raw` typed by `schema` (any schema: a nested element's, an array's items). */
  typed(schema: unknown, raw: string): unknown {
    let text = this.exact ? raw : raw.replace(/^\n/, "").replace(/\n$/, "");
    // MiniCPM's template wraps a value with <, & or a line break in CDATA
    const cdata = /^\s*<!\[CDATA\[([\s\S]*)\]\]>\s*$/.exec(text);
    if (cdata) text = cdata[1]!;
    // a typed value's spaces are layout; a string's are its own
    const t = text.trim();
    if (t.toLowerCase() === "null") return null;
    const types = typesOf(schema);
    if (types.length === 0) return text;
    const only = types.length === 1;
    if (types.includes("boolean")) {
      const l = t.toLowerCase();
      if (l === "true" || l === "false") return l === "true";
      if (only) return false;
    }
    if (types.includes("integer") && /^[+-]?\d+$/.test(t)) return Number(t);
    if (types.includes("number") && t !== "" && Number.isFinite(Number(t))) return Number(t);
    for (const [type, test] of [
      ["array", Array.isArray],
      ["object", isObject],
    ] as const) {
      if (!types.includes(type)) continue;
      if (only && t === "") return type === "array" ? [] : {};
      try {
        const v: unknown = parseJson(t);
        if (test(v)) return v;
      } catch {
        const v = parsePythonLiteral(t);
        if (test(v)) return v;
      }
    }
    return text;
  }
}

/** The JSON types a schema takes (its `type`, or its anyOf members' types). */
function typesOf(p: unknown): string[] {
  if (!isObject(p)) return [];
  const of = (v: unknown): string[] => (typeof v === "string" ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  if (Array.isArray(p.anyOf)) return p.anyOf.flatMap((m) => (isObject(m) ? of(m.type) : []));
  return of(p.type);
}

// ---------- readers ----------

/** The text from `open` to `close` (both included) at or after `from`; to the end when final. */
function unit(s: string, open: string, close: string, final: boolean, from: number): { start: number; body: string; end: number } | undefined {
  const start = s.indexOf(open);
  if (start === -1) return undefined;
  const c = s.indexOf(close, Math.max(start + open.length, from));
  if (c === -1) return final ? { start, body: s.slice(start + open.length), end: s.length } : undefined;
  return { start, body: s.slice(start + open.length, c), end: c + close.length };
}

/** Qwen3-Coder: `<function=NAME>\n<parameter=KEY>\nvalue\n</parameter>\n</function>`. */
function readXmlFunction(schema: ToolSchemas): Reader {
  return (s, final, from) => {
    const u = unit(s, "<function=", "</function>", final, from);
    if (!u) return undefined;
    const gt = u.body.indexOf(">");
    if (gt === -1) return { calls: [], end: u.end };
    const name = u.body.slice(0, gt).trim();
    const args: Record<string, unknown> = {};
    for (const m of u.body.slice(gt + 1).matchAll(/<parameter=([^>\n]*)>([\s\S]*?)(?:<\/parameter>|(?=<parameter=)|$)/g)) {
      const key = m[1]!.trim();
      setArgument(args, key, schema.value(name, key, m[2]!));
    }
    return { calls: name ? [{ name, arguments: args }] : [], end: u.end };
  };
}

/** GLM: `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>value</arg_value></tool_call>` (the
 *  tags with `suffix` before their `>`: Hunyuan's `<arg_key:opensource>`). */
function readArgPairs(open: string, suffix: string, schema: ToolSchemas): Reader {
  const close = pairsClose(open);
  const sfx = escapeRegExp(suffix);
  const pair = new RegExp(`<arg_key${sfx}>([\\s\\S]*?)</arg_key${sfx}>\\s*<arg_value${sfx}>([\\s\\S]*?)(?:</arg_value${sfx}>|$)`, "g");
  const firstKey = `<arg_key${suffix}>`;
  return (s, final, from) => {
    const u = unit(s, open, close, final, from);
    if (!u) return undefined;
    const k = u.body.indexOf(firstKey);
    // the name, less any separator token after it (Hunyuan's <tool_sep:opensource>)
    const name = (k === -1 ? u.body : u.body.slice(0, k)).replace(/<[^<>]*>/g, "").trim();
    const args: Record<string, unknown> = {};
    for (const m of u.body.matchAll(pair)) {
      const key = m[1]!.trim();
      setArgument(args, key, schema.value(name, key, m[2]!));
    }
    return { calls: name ? [{ name, arguments: args }] : [], end: u.end };
  };
}

/** MiniMax-M2 and DeepSeek's DSML: `<NSinvoke name="NAME"><NSparameter name="KEY" string="true">value</NSparameter></NSinvoke>`
 *  (MiniCPM's `<function name=…><param name=…>`); `string="false"` marks a JSON value. */
function readInvoke(d: { ns: string; call: string; param: string }, schema: ToolSchemas): Reader {
  const ns = escapeRegExp(d.ns);
  const param = new RegExp(`<${ns}${d.param} name="([^"]*)"([^>]*)>([\\s\\S]*?)(?:</${ns}${d.param}>|$)`, "g");
  return (s, final, from) => {
    const u = unit(s, `<${d.ns}${d.call} name="`, `</${d.ns}${d.call}>`, final, from);
    if (!u) return undefined;
    const q = u.body.indexOf('"');
    if (q === -1) return { calls: [], end: u.end };
    const name = u.body.slice(0, q);
    const args: Record<string, unknown> = {};
    for (const m of u.body.slice(q).matchAll(param)) {
      const key = m[1]!;
      let v: unknown = schema.value(name, key, m[3]!);
      if (/\bstring="false"/.test(m[2]!)) {
        try {
          v = parseJson(m[3]!.trim());
        } catch {
          // as text, typed by the schema
        }
      }
      setArgument(args, key, v);
    }
    return { calls: name ? [{ name, arguments: args }] : [], end: u.end };
  };
}

/** MiniMax-M3: `NS<invoke name="NAME">NS<KEY>value NS</KEY>…NS</invoke>`, the separator token
 *  `ns` before every tag; a value with elements in it is an object (a list when they are all
 *  `<item>`s); each value is typed by its schema (a nested one's too), else a leaf is a number,
 *  a boolean or text. */
function readElements(ns: string, schema: ToolSchemas): Reader {
  return (s, final, from) => {
    const u = unit(s, `${ns}<invoke name="`, `${ns}</invoke>`, final, from);
    if (!u) return undefined;
    const q = u.body.indexOf('">');
    if (q === -1) return { calls: [], end: u.end };
    const name = u.body.slice(0, q).replaceAll(ns, "");
    const rest = u.body.slice(q + 2);
    // The template writes `ns` before every tag and never inside a value, so a value may hold
    // `<key>` text of its own (code, markup): tags are read only after `ns`; a model that left
    // the token out somewhere is read by the tags alone.
    const tagged = elements(rest, ns);
    const [found, prefix] = tagged.length > 0 ? [tagged, ns] : [elements(rest.replaceAll(ns, ""), ""), ""];
    const args: Record<string, unknown> = {};
    for (const [key, inner] of found) setArgument(args, key, elementValue(inner, schema.param(name, key), schema, 0, prefix));
    return { calls: name ? [{ name, arguments: args }] : [], end: u.end };
  };
}

/** The elements `PREFIX<tag>…PREFIX</tag>` one after another at the top of `s` (none: `s` is text). */
function elements(s: string, prefix: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const p = escapeRegExp(prefix);
  const open = new RegExp(`^${p}<([A-Za-z_][\\w.:-]{0,128})>`);
  let i = 0;
  for (;;) {
    while (i < s.length && /\s/.test(s[i]!)) i++;
    if (i >= s.length) return out;
    const m = open.exec(s.slice(i, i + prefix.length + 140));
    if (!m) return [];
    const tag = m[1]!;
    const innerStart = i + m[0].length;
    // the matching close, nested elements of the same name counted, in one pass over the text
    const marks = new RegExp(`${p}<(/?)${escapeRegExp(tag)}>`, "g");
    marks.lastIndex = innerStart;
    let depth = 1;
    let mark: RegExpExecArray | null;
    while ((mark = marks.exec(s)) && (mark[1] === "" ? ++depth : --depth) > 0);
    if (!mark) return [];
    out.push([tag, s.slice(innerStart, mark.index)]);
    i = mark.index + mark[0].length;
  }
}

/** Nesting deeper than this stays text (a model's output cannot recurse the reader to a stack overflow). */
const MAX_ELEMENT_DEPTH = 64;

/** An element's inner text as the value `schema` (undefined: not known) describes. */
function elementValue(inner: string, schema: unknown, schemas: ToolSchemas, depth: number, prefix: string): unknown {
  const c = depth < MAX_ELEMENT_DEPTH ? elements(inner, prefix) : [];
  if (c.length === 0) {
    if (schema !== undefined) return schemas.typed(schema, inner);
    const t = inner.trim();
    if (t === "true" || t === "false") return t === "true";
    return /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(t) ? Number(t) : inner;
  }
  const s = isObject(schema) ? schema : {};
  if (c.every(([tag]) => tag === "item")) return c.map(([, v]) => elementValue(v, s.items, schemas, depth + 1, prefix));
  const props = isObject(s.properties) ? s.properties : {};
  const o: Record<string, unknown> = {};
  for (const [tag, v] of c) setArgument(o, tag, elementValue(v, Object.hasOwn(props, tag) ? props[tag] : undefined, schemas, depth + 1, prefix));
  return o;
}

/** Kimi K3's XTML: `<|open|>call tool="NAME" index="1"<|sep|>` then `<|open|>argument key="KEY"
 *  type="string"<|sep|>value<|close|>argument<|sep|>` each (a `type` other than string marks
 *  JSON), or one `<|open|>json …<|sep|>{…}<|close|>json<|sep|>` with them all, then
 *  `<|close|>call<|sep|>`; attribute values escape `&` and `"` as entities. */
function readXtml(d: { open: string; close: string; sep: string }, schema: ToolSchemas): Reader {
  const [open, close, sep] = [escapeRegExp(d.open), escapeRegExp(d.close), escapeRegExp(d.sep)];
  const arg = new RegExp(`${open}argument key="([^"]*)"([^<]*?)${sep}([\\s\\S]*?)(?:${close}argument${sep}|$)`, "g");
  const json = new RegExp(`${open}json[^<]*?${sep}([\\s\\S]*?)(?:${close}json${sep}|$)`);
  return (s, final, from) => {
    const u = unit(s, `${d.open}call tool="`, `${d.close}call${d.sep}`, final, from);
    if (!u) return undefined;
    const q = u.body.indexOf('"');
    if (q === -1) return { calls: [], end: u.end };
    const name = unescapeAttr(u.body.slice(0, q));
    let args: Record<string, unknown> = {};
    const whole = json.exec(u.body);
    if (whole) {
      try {
        const v: unknown = parseJson(whole[1]!);
        if (isObject(v)) args = v;
      } catch {
        // not JSON: no arguments
      }
    }
    for (const m of u.body.matchAll(arg)) {
      const key = unescapeAttr(m[1]!);
      const type = /\btype="([^"]*)"/.exec(m[2]!)?.[1];
      let v: unknown = type === "string" ? m[3]! : schema.value(name, key, m[3]!);
      if (type !== undefined && type !== "string") {
        try {
          v = parseJson(m[3]!);
        } catch {
          // as text, typed by the schema
        }
      }
      setArgument(args, key, v);
    }
    return { calls: name ? [{ name, arguments: args }] : [], end: u.end };
  };
}

function unescapeAttr(v: string): string {
  return v.replaceAll("&quot;", '"').replaceAll("&amp;", "&");
}

/** Mistral, DeepSeek, Kimi, functionary: a tool's name, then its arguments as a JSON object. */
function readNamedJson(names: ReadonlySet<string>): Reader {
  const byLength = [...names].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const name = byLength.length > 0 ? new RegExp(`(?<![\\w-])(?:${byLength.join("|")})(?![\\w-])`) : undefined;
  // The arguments being read: their scan resumes where it stopped, so long arguments streamed
  // token by token (a file written through a tool) are scanned once.
  let open: { name: string; start: number; scan: BraceScan } | undefined;
  return (s, final, _from, recent) => {
    if (!open) {
      const m = name?.exec(s);
      if (!m) return undefined;
      const after = m.index + m[0].length;
      const brace = s.indexOf("{", after);
      // The arguments follow the name closely (`[ARGS]`, "<｜tool▁sep｜>", "\n```json\n").
      if (brace === -1 || brace - after > 100) return brace === -1 && !final ? undefined : { calls: [], end: after };
      open = { name: m[0], start: brace, scan: braceScan(brace) };
    }
    const start = open.start;
    const t = scanText(s, open.scan.at, recent);
    const close = resumeBrace(t.text, open.scan, "{", "}", '"', t.base);
    if (close === -1) {
      if (!final) return undefined;
      open = undefined;
      return { calls: [], end: s.length };
    }
    const called = open.name;
    open = undefined;
    let args: unknown;
    try {
      args = parseJson(s.slice(start, close + 1));
    } catch {
      args = undefined;
    }
    return { calls: isObject(args) ? [{ name: called, arguments: args }] : [], end: close + 1 };
  };
}

/** LFM2: `<|tool_call_start|>[NAME(key='value'), …]<|tool_call_end|>`: the list is what the tags
 *  hold, its strings raw between their quotes as the template writes them (`'it's'`), so the
 *  end is the closing tag, not a bracket a quote in a string would hide. */
function readPythonSection(start: string, end: string, names: ReadonlySet<string>): Reader {
  return (s, final, from) => {
    const u = unit(s, start, end, final, from);
    if (!u) return undefined;
    return { calls: parsePythonCalls(u.body, names, true) ?? [], end: u.end };
  };
}

/** A python-style list after a call tag with no closing tag of its own: `[NAME(key="value"), …]`. */
function readPython(names: ReadonlySet<string>): Reader {
  let open: { start: number; scan: BraceScan } | undefined;
  return (s, final, _from, recent) => {
    if (!open) {
      const bracket = s.indexOf("[", 1);
      if (bracket === -1) return undefined;
      open = { start: bracket, scan: braceScan(bracket) };
    }
    const start = open.start;
    const t = scanText(s, open.scan.at, recent);
    const close = resumeBrace(t.text, open.scan, "[", "]", "\"'", t.base);
    if (close === -1) {
      if (!final) return undefined;
      open = undefined;
      return { calls: [], end: s.length };
    }
    open = undefined;
    return { calls: parsePythonCalls(s.slice(start, close + 1), names) ?? [], end: close + 1 };
  };
}

const GEMMA_QUOTE = '<|"|>';

/** Gemma 4: `call:NAME{key:<|"|>text<|"|>,n:1,list:[…]}`: bare keys, strings between `<|"|>`. */
function readGemma4(): Reader {
  let open: { name: string; start: number; scan: GemmaScan } | undefined;
  return (s, final, _from, recent) => {
    if (!open) {
      const m = /call:([^{\s]{1,128})\{/.exec(s);
      if (!m) return undefined;
      const start = m.index + m[0].length - 1;
      open = { name: m[1]!, start, scan: { at: start, depth: 0, quote: "", escaped: false } };
    }
    const { name, start } = open;
    const t = scanText(s, open.scan.at, recent);
    const close = resumeGemma(t.text, open.scan, t.base);
    if (close === -1) {
      if (!final) return undefined;
      open = undefined;
      return { calls: [], end: s.length };
    }
    open = undefined;
    const json = gemmaArgsToJson(s, start);
    let args: unknown;
    try {
      args = json ? parseJson(json.text) : undefined;
    } catch {
      args = undefined;
    }
    return { calls: isObject(args) ? [{ name, arguments: args }] : [], end: close + 1 };
  };
}

interface GemmaScan {
  at: number;
  depth: number;
  /** Inside a `<|"|>` string ("g") or a JSON one ('"'). */
  quote: "" | "g" | '"';
  escaped: boolean;
}

/** Goes on with `scan` over `s`: the index of the bracket closing the object it started at, or -1
 *  with `scan` left where it must look again (before a `<|"|>` cut off at the end). `s` may be the
 *  end of the text from index `base` on, as for resumeBrace. */
function resumeGemma(s: string, scan: GemmaScan, base = 0): number {
  scan.at -= base;
  const i = resumeGemmaRelative(s, scan);
  scan.at += base;
  return i === -1 ? -1 : base + i;
}

function resumeGemmaRelative(s: string, scan: GemmaScan): number {
  let i = scan.at;
  while (i < s.length) {
    if (scan.quote === "g") {
      const q = s.indexOf(GEMMA_QUOTE, i);
      if (q === -1) {
        scan.at = Math.max(i, s.length - GEMMA_QUOTE.length + 1);
        return -1;
      }
      i = q + GEMMA_QUOTE.length;
      scan.quote = "";
      continue;
    }
    const c = s[i]!;
    if (scan.quote === '"') {
      if (scan.escaped) scan.escaped = false;
      else if (c === "\\") scan.escaped = true;
      else if (c === '"') scan.quote = "";
      i++;
      continue;
    }
    if (c === "<" && s.length - i < GEMMA_QUOTE.length && GEMMA_QUOTE.startsWith(s.slice(i))) break; // maybe a quote: wait
    if (s.startsWith(GEMMA_QUOTE, i)) {
      scan.quote = "g";
      i += GEMMA_QUOTE.length;
      continue;
    }
    if (c === '"') scan.quote = '"';
    else if (c === "{" || c === "[") scan.depth++;
    else if (c === "}" || c === "]") {
      scan.depth--;
      if (scan.depth === 0) {
        scan.at = i + 1;
        return i;
      }
    }
    i++;
  }
  scan.at = i;
  return -1;
}

/** The object at `open` in JSON: `<|"|>` strings become JSON strings, bare keys get quotes. */
function gemmaArgsToJson(s: string, open: number): { text: string; end: number } | undefined {
  let out = "";
  const stack: string[] = [];
  let keyNext = false;
  for (let i = open; i < s.length; ) {
    if (s.startsWith(GEMMA_QUOTE, i)) {
      const close = s.indexOf(GEMMA_QUOTE, i + GEMMA_QUOTE.length);
      if (close === -1) return undefined;
      out += JSON.stringify(s.slice(i + GEMMA_QUOTE.length, close));
      i = close + GEMMA_QUOTE.length;
      keyNext = false;
      continue;
    }
    const c = s[i]!;
    if (c === '"') {
      const end = stringEnd(s, i);
      if (end === -1) return undefined;
      out += s.slice(i, end + 1);
      i = end + 1;
      keyNext = false;
      continue;
    }
    if (keyNext && /[A-Za-z_$]/.test(c)) {
      const key = /^[A-Za-z_$][\w$.-]*/.exec(s.slice(i, i + 256))![0];
      out += JSON.stringify(key);
      i += key.length;
      keyNext = false;
      continue;
    }
    out += c;
    i++;
    if (c === "{" || c === "[") stack.push(c);
    else if (c === "}" || c === "]") {
      stack.pop();
      if (stack.length === 0) return { text: out, end: i };
    }
    if (c === "{" || c === ",") keyNext = stack.at(-1) === "{";
    else if (!/\s/.test(c)) keyNext = false;
  }
  return undefined;
}

/** Index of the quote closing the JSON string that starts at `start`, or -1. */
function stringEnd(s: string, start: number): number {
  for (let i = start + 1; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === '"') return i;
  }
  return -1;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
