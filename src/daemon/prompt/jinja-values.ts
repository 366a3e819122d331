// The Jinja engine's runtime value classes (@huggingface/jinja exports none of them, so they are
// taken from values it makes) and Python's text forms of those values: str(), repr() and
// json.dumps as transformers' `tojson` calls it, which chat templates print and models were trained on.
import { Environment, Interpreter, parse, tokenize } from "@huggingface/jinja";

/** A runtime value as the engine shapes it: a type name and a JavaScript value. */
export interface RValue {
  type: string;
  value: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  builtins: Map<string, RValue>;
  __bool__(): { value: boolean };
  toString(): string;
}
type RClass = new (value?: unknown) => RValue;

const probe = new Environment();
const classOf = (v: unknown): RClass => (probe.set(`v${Math.random()}`, v) as unknown as RValue).constructor as RClass;
function evaluated(source: string): RValue[] {
  // Runs `{{ f(...) }}` with f capturing its runtime arguments: how tuples and keyword arguments are made.
  let got: RValue[] = [];
  const env = new Environment();
  env.setVariable("f", new V.Function((args: RValue[]) => ((got = args), new V.Null())) as never);
  new Interpreter(env).run(parse(tokenize(source, {})));
  return got;
}

export const V = {
  String: classOf(""),
  Integer: classOf(1),
  Float: classOf(1.5),
  Boolean: classOf(true),
  Null: classOf(null),
  Undefined: classOf(undefined),
  Array: classOf([]),
  Object: classOf({}),
  Function: classOf(() => 0) as new (fn: (args: RValue[], env: Environment) => RValue) => RValue,
} as const;
export const TupleClass = evaluated("{{ f((1, 2)) }}")[0]!.constructor as RClass;
export const KwargsClass = evaluated("{{ f(a=1) }}")[0]!.constructor as RClass;
export const NamespaceClass = (probe.lookupVariable("namespace") as unknown as RValue).value([]).constructor as RClass;

/** `v instanceof cls`, as a plain boolean: the classes share one instance type, so TypeScript's narrowing would mislead. */
export const is = (v: RValue | undefined, cls: RClass): boolean => v instanceof cls;
export const isStr = (v: RValue): boolean => is(v, V.String);
export const isNum = (v: RValue): boolean => is(v, V.Integer) || is(v, V.Float);
export const isList = (v: RValue): boolean => is(v, V.Array); // tuples too
export const isDict = (v: RValue): boolean => is(v, V.Object) && !(is(v, KwargsClass));
export const isMissing = (v: RValue | undefined): boolean => v === undefined || is(v, V.Undefined);

/** A Python value from JavaScript (dict keys of a literal may be numbers, as Python allows). */
export function rv(x: unknown): RValue {
  if (x !== null && typeof x === "object" && "type" in x && "value" in x) return x as RValue;
  if (typeof x === "number") return Number.isInteger(x) ? new V.Integer(x) : new V.Float(x);
  if (typeof x === "string") return new V.String(x);
  if (typeof x === "boolean") return new V.Boolean(x);
  if (x === null) return new V.Null(null);
  if (x === undefined) return new V.Undefined();
  if (Array.isArray(x)) return new V.Array(x.map(rv));
  return new V.Object(new Map(Object.entries(x as object).map(([k, v]) => [k, rv(v)])));
}
/** A dict key as a runtime value: string keys stay strings, numeric keys stay numbers. */
export const keyValue = (k: unknown): RValue => (typeof k === "number" ? rv(k) : new V.String(String(k)));

// d.items(), d.keys(), d.values(): lists that print as Python's views do ("dict_items([...])").
const VIEW = Symbol("dict view");
export const dictView = (name: string, list: RValue): RValue => Object.assign(list, { [VIEW]: name });
const viewName = (v: RValue): string | undefined => (v as { [VIEW]?: string })[VIEW];

// Strings marked safe (`|safe`): Python's markupsafe.Markup. Jinja2 escapes a plain string added to one.
const SAFE = Symbol("markup");
export const markup = (s: string): RValue => Object.assign(new V.String(s), { [SAFE]: true });
export const isMarkup = (v: RValue): boolean => (v as { [SAFE]?: boolean })[SAFE] === true;
const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", '"': "&#34;" };
export const escapeHtml = (s: string): string => s.replace(/[&<>'"]/g, (c) => ESCAPES[c]!);

/** Python's float.__repr__: shortest round-trip digits, scientific below 1e-4 and from 1e16. */
export function pyFloat(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (Object.is(x, -0)) return "-0.0";
  const [mant = "", expStr] = x.toExponential().split("e");
  const exp = Number(expStr);
  if (exp < -4 || exp >= 16) return `${mant}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  // In this range JavaScript prints the same shortest digits without an exponent.
  const fixed = String(x);
  return fixed.includes(".") ? fixed : `${fixed}.0`;
}

// Python's str.isprintable(): what repr() leaves unescaped.
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
/** Python's repr() of a str. */
export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === "\\" || ch === quote) out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch !== " " && NON_PRINTABLE.test(ch)) {
      const cp = ch.codePointAt(0)!;
      out += cp < 0x100 ? `\\x${cp.toString(16).padStart(2, "0")}` : cp < 0x10000 ? `\\u${cp.toString(16).padStart(4, "0")}` : `\\U${cp.toString(16).padStart(8, "0")}`;
    } else out += ch;
  }
  return out + quote;
}

/** Python's type(v).__name__, for the messages of the errors Python would raise. */
export const pyType = (v: RValue): string =>
  isStr(v) ? "str" : is(v, V.Integer) ? "int" : is(v, V.Float) ? "float" : is(v, V.Boolean) ? "bool" : is(v, V.Null) ? "NoneType"
    : is(v, TupleClass) ? "tuple" : isList(v) ? "list" : isDict(v) ? "dict" : v.type;

/** Python's repr(): how a value inside a printed list or dict looks. */
export function pyRepr(v: RValue): string {
  // Jinja2's Undefined prints as nothing alone, and as its class name inside a list or dict
  if (isMarkup(v)) return `Markup(${pyStrRepr(v.value)})`;
  return isStr(v) ? pyStrRepr(v.value) : is(v, V.Undefined) ? "Undefined" : pyStr(v);
}

/** Python's str(): what `{{ value }}`, `~` and `|string` make of a value. */
export function pyStr(v: RValue): string {
  if (isStr(v)) return v.value;
  if (is(v, V.Integer)) return String(v.value);
  if (is(v, V.Float)) return pyFloat(v.value);
  if (is(v, V.Boolean)) return v.value ? "True" : "False";
  if (is(v, V.Null)) return "None";
  if (is(v, V.Undefined)) return "";
  if (is(v, TupleClass)) return v.value.length === 1 ? `(${pyRepr(v.value[0])},)` : `(${v.value.map(pyRepr).join(", ")})`;
  if (isList(v)) return viewName(v) ? `${viewName(v)}([${v.value.map(pyRepr).join(", ")}])` : `[${v.value.map(pyRepr).join(", ")}]`;
  if (is(v, NamespaceClass)) return `<Namespace ${dictRepr(v.value)}>`;
  if (is(v, V.Object)) return dictRepr(v.value);
  return String(v.value);
}
const dictRepr = (m: Map<unknown, RValue>): string => `{${[...m].map(([k, x]) => `${pyRepr(keyValue(k))}: ${pyRepr(x)}`).join(", ")}}`;

export interface JsonOptions {
  indent?: number | string | null;
  ensureAscii?: boolean;
  separators?: [string, string] | null;
  sortKeys?: boolean;
}
const byCodePoint = (a: string, b: string): number => {
  const x = [...a], y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
  return x.length - y.length;
};

/** Python's json.dumps, as transformers' `tojson` filter calls it (ensure_ascii off unless asked). */
export function pyJson(v: RValue, opts: JsonOptions = {}, depth = 0): string {
  const indent = typeof opts.indent === "number" ? " ".repeat(Math.max(0, opts.indent)) : opts.indent ?? null;
  const [itemSep, keySep] = opts.separators ?? (indent !== null ? [",", ": "] : [", ", ": "]);
  const str = (s: string): string => {
    const j = JSON.stringify(s);
    return opts.ensureAscii ? j.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) : j;
  };
  const wrap = (open: string, parts: string[], close: string): string => {
    if (indent === null || parts.length === 0) return open + parts.join(itemSep) + close;
    const inner = "\n" + indent.repeat(depth + 1);
    return open + inner + parts.join(itemSep + inner) + "\n" + indent.repeat(depth) + close;
  };
  if (isStr(v)) return str(v.value);
  if (is(v, V.Integer)) return String(v.value);
  if (is(v, V.Float)) return Number.isFinite(v.value) ? pyFloat(v.value) : Number.isNaN(v.value) ? "NaN" : v.value > 0 ? "Infinity" : "-Infinity";
  if (is(v, V.Boolean)) return v.value ? "true" : "false";
  if (is(v, V.Null) || is(v, V.Undefined)) return "null";
  if (isList(v)) return wrap("[", v.value.map((x: RValue) => pyJson(x, opts, depth + 1)), "]");
  if (is(v, V.Object) || is(v, NamespaceClass)) {
    let entries = [...(v.value as Map<unknown, RValue>)].map(([k, x]) => [jsonKey(k), x] as const);
    if (opts.sortKeys) entries = entries.sort(([a], [b]) => byCodePoint(a, b));
    return wrap("{", entries.map(([k, x]) => str(k) + keySep + pyJson(x, opts, depth + 1)), "}");
  }
  throw new Error(`Object of type ${v.type.replace(/Value$/, "")} is not JSON serializable`);
}
const jsonKey = (k: unknown): string => (typeof k === "number" ? (Number.isInteger(k) ? String(k) : pyFloat(k)) : String(k));

/** Python's ==: by value for lists and dicts, 1 == 1.0 == True. */
export function pyEquals(a: RValue, b: RValue): boolean {
  const prim = (x: RValue): unknown => (is(x, V.Boolean) ? Number(x.value) : x.value);
  if (isList(a) && isList(b)) return is(a, TupleClass) === is(b, TupleClass) && a.value.length === b.value.length && a.value.every((x: RValue, i: number) => pyEquals(x, b.value[i]));
  if (isDict(a) && isDict(b)) {
    if (a.value.size !== b.value.size) return false;
    for (const [k, x] of a.value as Map<unknown, RValue>) if (!b.value.has(k) || !pyEquals(x, b.value.get(k))) return false;
    return true;
  }
  if (is(a, V.Undefined) || is(b, V.Undefined)) return is(a, V.Undefined) && is(b, V.Undefined);
  if ((isNum(a) || is(a, V.Boolean)) && (isNum(b) || is(b, V.Boolean))) return prim(a) === prim(b);
  return a.type === b.type && a.value === b.value;
}
