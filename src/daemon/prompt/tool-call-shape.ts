// tool_choice on a model whose calls are markup (tool-dialect.ts: Qwen3-Coder's XML, GLM's pairs,
// MiniMax's invoke, Gemma 4's calls, LFM2's python): the shape of one call of an offered tool in
// that syntax, for the backend to enforce as a grammar (backends/llamacpp/markup-grammar.ts). It
// follows what the templates write: the tool's name, then its parameters in the schema's order
// (required ones always, optional ones free), with the line breaks the templates differ on left
// optional. A value is written as the reader (tool-markup.ts) types it: a string raw up to its
// closing tag (in Gemma 4's quotes; a literal in python), a boolean as either spelling, anything
// else as compact JSON that fits the parameter's schema.
import type { MarkupPiece } from "../../backends/backend.js";
import { isObject, RAW_STRING_ENDS } from "./tool-call-syntax.js";
import { pairsClose, pythonEnd, sectionEnd, type ToolDialect } from "./tool-dialect.js";
import { elementsStyle, GEMMA4_STYLE, PYTHON_STYLE, sortedByKey, styledValue, type ValueStyle } from "./tool-value-style.js";

type Markup = Exclude<ToolDialect, { kind: "json" | "named-json" | "recipient" }>;
type Recipient = Extract<ToolDialect, { kind: "recipient" }>;

export interface ShapeTool {
  function?: { name?: unknown; parameters?: unknown };
}

const text = (t: string): MarkupPiece => ({ text: t });
const optional = (...pieces: MarkupPiece[]): MarkupPiece => ({ choice: [pieces, []] });
const NL = optional(text("\n"));

/** The shape of one call of one of `tools` (at least one, each named) in `dialect`. */
export function markupCallShape(dialect: Markup | Recipient, tools: readonly ShapeTool[]): MarkupPiece[] {
  // functionary: the recipient's line (the generation prompt wrote the marker), then the arguments
  if (dialect.kind === "recipient") return [{ choice: tools.map((t) => [text(`${t.function!.name as string}\n`), { json: paramsOf(t), root: paramsOf(t) }]) }];
  const calls: MarkupPiece = { choice: tools.map((t) => callOf(dialect, t)) };
  const start = dialect.start;
  const end = sectionEnd(dialect);
  switch (dialect.kind) {
    case "xml-function":
    case "arg-pairs":
    case "invoke":
      // a section tag of its own (`<tool_call>` around Qwen3-Coder's `<function=…>`) goes around
      // the call; a start that is the call's own opening (MiniCPM's `<function name="`) is written by the call
      return end === "" ? [calls] : [text(start), NL, calls, NL, text(end)];
    case "gemma4":
      return [text(start), calls, text(end)];
    case "python":
      // LFM2: <|tool_call_start|>[name(key=value, …)]<|tool_call_end|>
      return [text(start), text("["), calls, text("]"), text(end)];
    case "xtml":
      return [text(start), calls, text(end)];
    case "elements":
      // MiniMax-M3: NS<tool_call>\nNS<invoke …>…NS</invoke>\nNS</tool_call>
      return end === "" ? [calls] : [text(start), NL, calls, NL, text(end)];
  }
}

function callOf(d: Markup, tool: ShapeTool): MarkupPiece[] {
  const name = tool.function!.name as string;
  const params = tool.function!.parameters;
  // Gemma 4's template writes the arguments `| dictsort`ed: by key, case aside
  const order = d.kind === "gemma4" ? (ps: Parameter[]) => sortedByKey(ps.map((p) => [p.key, p] as [string, Parameter])).map(([, p]) => p) : (ps: Parameter[]) => ps;
  const members = (piece: (key: string, value: MarkupPiece[]) => MarkupPiece[], separator = "") => ({
    members: order(parameters(params)).map(({ key, schema, required }) => ({ pieces: piece(key, valuePieces(d, schema, params)), required })),
    separator,
  });
  switch (d.kind) {
    case "xml-function":
      return [
        text(`<function=${name}>`),
        NL,
        // where the template writes a value right between its tags (Seed-OSS), a newline there is
        // the value's own to the reader: no padding, or an enum's word would read back as "\nword"
        members((k, v) => (d.exact ? [text(`<parameter=${k}>`), ...v, text("</parameter>"), NL] : [text(`<parameter=${k}>`), NL, ...v, NL, text("</parameter>"), NL])),
        text("</function>"),
      ];
    case "arg-pairs": {
      const s = d.suffix;
      const close = pairsClose(d.unit);
      return [
        text(`${d.unit}${name}`),
        ...(s === "" ? [] : [optional(text(`<tool_sep${s}>`))]),
        NL,
        members((k, v) => [text(`<arg_key${s}>${k}</arg_key${s}>`), NL, text(`<arg_value${s}>`), ...v, text(`</arg_value${s}>`), NL]),
        text(close),
      ];
    }
    case "invoke": {
      const param = `${d.ns}${d.param}`;
      return [
        text(`<${d.ns}${d.call} name="${name}">`),
        NL,
        members((k, v) => [text(`<${param} name="${k}"`), ...v, text(`</${param}>`), NL]),
        text(`</${d.ns}${d.call}>`),
      ];
    }
    case "gemma4":
      return [text(`call:${name}{`), members((k, v) => [text(`${k}:`), ...v], ","), text("}")];
    case "python":
      return [text(`${name}(`), members((k, v) => [text(`${k}=`), ...v], ", "), text(")")];
    case "elements": {
      const ns = d.ns;
      return [text(`${ns}<invoke name="${name}">`), members((k, v) => [text(`${ns}<${k}>`), ...v, text(`${ns}</${k}>`)]), text(`${ns}</invoke>`)];
    }
    case "xtml": {
      const { open, close, sep } = d;
      return [
        text(`${open}call tool="${escapeAttr(name)}" index="1"${sep}`),
        members((k, v) => [text(`${open}argument key="${escapeAttr(k)}"`), ...v, text(`${close}argument${sep}`)]),
        text(`${close}call${sep}`),
      ];
    }
  }
}

/** Kimi K3's attribute escaping. */
function escapeAttr(v: string): string {
  return v.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
}

function paramsOf(tool: ShapeTool): Record<string, unknown> {
  const p = tool.function!.parameters;
  return isObject(p) && Object.keys(p).length > 0 ? p : { type: "object" };
}

interface Parameter {
  key: string;
  schema: unknown;
  required: boolean;
}

function parameters(params: unknown): Parameter[] {
  if (!isObject(params) || !isObject(params.properties)) return [];
  const required = new Set(Array.isArray(params.required) ? params.required.filter((r): r is string => typeof r === "string") : []);
  return Object.entries(params.properties).map(([key, schema]) => ({ key, schema, required: required.has(key) }));
}

/** A value as the dialect writes it, closing tag included where the value is raw text. */
function valuePieces(d: Markup, schema: unknown, root: unknown): MarkupPiece[] {
  const s = isObject(schema) ? schema : {};
  const type = s.type;
  const json: MarkupPiece = { json: schema, root };
  const bool: MarkupPiece = { choice: ["true", "false", "True", "False"].map((b) => [text(b)]) };
  const words = stringWords(s);
  // an object or list in the template's own syntax, or as compact JSON
  const nested = (style: ValueStyle): MarkupPiece => {
    const styled = type === "object" || type === "array" ? styledValue(schema, style, root) : undefined;
    return styled ? { choice: [[json], styled] } : json;
  };
  if (d.kind === "python") {
    if (type === "boolean") return [bool];
    if (type !== "string") return [nested(PYTHON_STYLE)];
    // a string literal in either quotes; escapes only in double ones. LFM2 writes single ones raw
    // (tool-call-syntax.ts reads them to a quote that ends the argument), so a raw one holds no
    // quote that the reader would take as its end, nor the list's closing tag
    const end = pythonEnd(d.start);
    const raw = end === "" ? { free: ["'", "\\", "\n"] } : { free: [end], patterns: RAW_STRING_ENDS };
    // an enum's word goes between the quotes only where the raw text itself could
    const fits = (w: string) => !raw.free.some((a) => w.includes(a)) && !(raw.patterns ?? []).some((p) => new RegExp(p).test(w));
    const single = words ? words.filter(fits).map((w) => [text(`'${w}'`)]) : [[text("'"), raw, text("'")]];
    return [{ choice: [[json], ...single] }];
  }
  const raw = type === undefined || type === "string" || (Array.isArray(type) && type.includes("string")) || Array.isArray(s.anyOf) || Array.isArray(s.oneOf);
  // The value written raw: one of its words, or any text short of the tags that would end it.
  const rawValue = (avoid: string[]): MarkupPiece => (words ? { choice: words.map((w) => [text(w)]) } : { free: avoid });
  switch (d.kind) {
    case "gemma4":
      return raw ? [text('<|"|>'), rawValue(['<|"|>']), text('<|"|>')] : [nested(GEMMA4_STYLE)];
    case "invoke": {
      // DeepSeek's DSML marks each value as text or JSON; the others write no mark
      const mark = (v: string) => optional(text(` string="${v}"`));
      const avoid = [`</${d.ns}${d.param}>`, `</${d.ns}${d.call}>`];
      return raw ? [mark("true"), text(">"), rawValue(avoid)] : [mark("false"), text(">"), type === "boolean" ? bool : nested(PYTHON_STYLE)];
    }
    case "xml-function":
      return [raw ? rawValue(["</parameter>", "<parameter=", "</function>"]) : type === "boolean" ? bool : nested(PYTHON_STYLE)];
    case "arg-pairs": {
      const close = pairsClose(d.unit);
      return [raw ? rawValue([`</arg_value${d.suffix}>`, close]) : type === "boolean" ? bool : nested(PYTHON_STYLE)];
    }
    case "elements": {
      // a raw value ends at the separator before its closing tag; nested values as elements
      if (raw) return [rawValue([d.ns])];
      return [type === "boolean" ? { choice: [[text("true")], [text("false")]] } : nested(elementsStyle(d.ns))];
    }
    case "xtml": {
      // the type attribute says how the value reads: raw text, or JSON (the template's xtml_type)
      if (raw) return [text(` type="string"${d.sep}`), rawValue([`${d.close}argument${d.sep}`, `${d.close}call${d.sep}`])];
      const first: unknown = Array.isArray(type) ? type.find((t) => t !== "null") : type;
      const named = first === "integer" ? "number" : typeof first === "string" ? first : "object";
      return [text(` type="${named}"${d.sep}`), json];
    }
  }
}

/** A string parameter's possible values when it lists them (enum, const). */
function stringWords(s: Record<string, unknown>): string[] | undefined {
  const list = Array.isArray(s.enum) ? s.enum : Object.hasOwn(s, "const") ? [s.const] : undefined;
  if (!list || list.length === 0 || !list.every((v): v is string => typeof v === "string")) return undefined;
  return list;
}
