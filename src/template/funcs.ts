// text/template builtins (funcs.go) and Ollama's template funcs (template/template.go).

import { sprint, sprintln } from "./fmt.js";
import { sprintf } from "./printf.js";
import {
  GoStruct,
  JsonError,
  kindOf,
  lengthOf,
  mapGet,
  marshalJSON,
  numberValue,
  typeName,
  unwrap,
  utf8Bytes,
  utf8Decode,
} from "./values.js";

/** How an argument is converted before the call (Go parameter types that matter). */
export type ParamKind = "value" /* reflect.Value */ | "any" /* interface{} */ | "string";

export interface FuncCtx {
  now: () => Date;
}

export interface FuncDef {
  params: ParamKind[];
  variadic?: ParamKind;
  fn: (args: unknown[], ctx: FuncCtx) => unknown;
}

/** An error returned by a function; the executor reports "error calling NAME: MESSAGE". */
export class FuncError extends Error {}

const isNilish = (v: unknown): boolean => v === undefined || v === null;

/** template.IsTrue on an already indirected value: [truth, ok]. */
export function isTrue(v: unknown): [boolean, boolean] {
  switch (kindOf(v)) {
    case "invalid":
    case "nil":
      return [false, true];
    case "bool":
      return [unwrap(v) === true, true];
    case "int":
    case "float":
      return [numberValue(v) !== 0, true];
    case "string":
    case "slice":
    case "bytes":
    case "map":
      return [lengthOf(v) > 0, true];
    case "struct":
    case "func":
      return [true, true];
  }
}

export const truth = (v: unknown): boolean => isTrue(v)[0];

// ---- comparison ----

type BasicKind = "invalid" | "bool" | "int" | "float" | "string";

function basicKind(v: unknown): BasicKind {
  const k = kindOf(v);
  return k === "bool" || k === "int" || k === "float" || k === "string" ? k : "invalid";
}

function basicValue(v: unknown): unknown {
  const u = unwrap(v);
  return typeof u === "bigint" || typeof u === "number" || (typeof u === "object" && u !== null) ? numberValue(u) : u;
}

function isComparable(v: unknown): boolean {
  const k = kindOf(v);
  if (k === "slice" || k === "map" || k === "bytes" || k === "func") return false;
  if (k === "struct") return (unwrap(v) as GoStruct).type.fields.every((f) => isComparable((unwrap(v) as GoStruct).field(f.name)));
  return true;
}

function deepEqual(a: unknown, b: unknown): boolean {
  a = unwrap(a);
  b = unwrap(b);
  if (a instanceof GoStruct && b instanceof GoStruct) {
    return a.type === b.type && a.type.fields.every((f) => deepEqual(a.field(f.name), b.field(f.name)));
  }
  if (basicKind(a) !== "invalid" || basicKind(b) !== "invalid") return basicKind(a) === basicKind(b) && basicValue(a) === basicValue(b);
  return a === b;
}

function eq(args: unknown[]): boolean {
  const [arg1, ...rest] = args;
  if (rest.length === 0) throw new FuncError("missing argument for comparison");
  const k1 = basicKind(arg1);
  for (const arg of rest) {
    const k2 = basicKind(arg);
    let t = false;
    if (k1 !== k2) {
      if (!isNilish(arg1) && !isNilish(arg)) {
        throw new FuncError(`incompatible types for comparison: ${typeName(arg1)} and ${typeName(arg)}`);
      }
    } else if (k1 !== "invalid") {
      t = basicValue(arg1) === basicValue(arg);
    } else {
      const n1 = isNilish(arg1);
      const n2 = isNilish(arg);
      if (!n1 && !n2 && kindOf(arg1) !== kindOf(arg)) {
        throw new FuncError(sprintf("non-comparable types %s: %v, %s: %v", [arg1, typeName(arg1), typeName(arg), arg]));
      }
      if (n1 || n2) t = n1 === n2;
      else {
        if (!isComparable(arg)) throw new FuncError(sprintf("non-comparable type %s: %v", [arg, typeName(arg)]));
        t = deepEqual(arg1, arg);
      }
    }
    if (t) return true;
  }
  return false;
}

function lt(a: unknown, b: unknown): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === "invalid" || k2 === "invalid") throw new FuncError("invalid type for comparison");
  if (k1 !== k2) throw new FuncError(`incompatible types for comparison: ${typeName(a)} and ${typeName(b)}`);
  if (k1 === "bool") throw new FuncError("invalid type for comparison");
  const x = basicValue(a) as number | string;
  const y = basicValue(b) as number | string;
  if (k1 === "string") return Buffer.compare(Buffer.from(x as string), Buffer.from(y as string)) < 0;
  return x < y;
}

const le = (a: unknown, b: unknown): boolean => lt(a, b) || eq([a, b]);

// ---- indexing ----

function indexArg(index: unknown, cap: number): number {
  const k = kindOf(index);
  if (k === "invalid" || k === "nil") throw new FuncError("cannot index slice/array with nil");
  if (k !== "int") throw new FuncError(`cannot index slice/array with type ${typeName(index)}`);
  const x = numberValue(index);
  if (x < 0 || x > cap) throw new FuncError(`index out of range: ${x}`);
  return x;
}

function index(args: unknown[]): unknown {
  let [item] = args;
  if (isNilish(item)) throw new FuncError("index of untyped nil");
  for (const idx of args.slice(1)) {
    switch (kindOf(item)) {
      case "slice":
      case "bytes":
      case "string": {
        const u = unwrap(item);
        const seq = typeof u === "string" ? utf8Bytes(u) : (u as ArrayLike<unknown>);
        const x = indexArg(idx, seq.length);
        if (x === seq.length) throw new FuncError(`reflect: ${typeof u === "string" ? "string" : "slice"} index out of range`);
        const e = seq[x];
        item = e === undefined ? null : e;
        break;
      }
      case "map": {
        let key = idx;
        if (isNilish(key)) key = "";
        if (kindOf(key) !== "string") throw new FuncError(`value has type ${typeName(key)}; should be string`);
        item = mapGet(item, unwrap(key) as string).value;
        break;
      }
      case "nil":
        throw new FuncError("index of nil pointer");
      default:
        throw new FuncError(`can't index item of type ${typeName(item)}`);
    }
  }
  return item;
}

function slice(args: unknown[]): unknown {
  const [item, ...idx] = args;
  if (isNilish(item)) throw new FuncError("slice of untyped nil");
  if (idx.length > 3) throw new FuncError(`too many slice indexes: ${idx.length}`);
  const k = kindOf(item);
  const u = unwrap(item);
  let len: number;
  if (k === "string") {
    if (idx.length === 3) throw new FuncError("cannot 3-index slice a string");
    len = utf8Bytes(u as string).length;
  } else if (k === "slice" || k === "bytes") len = (u as ArrayLike<unknown>).length;
  else throw new FuncError(`can't slice item of type ${typeName(item)}`);
  const ix = [0, len, len];
  idx.forEach((v, i) => (ix[i] = indexArg(v, len)));
  if (ix[0]! > ix[1]!) throw new FuncError(`invalid slice index: ${ix[0]} > ${ix[1]}`);
  if (idx.length === 3 && ix[1]! > ix[2]!) throw new FuncError(`invalid slice index: ${ix[1]} > ${ix[2]}`);
  if (k === "string") return utf8Decode(utf8Bytes(u as string).slice(ix[0], ix[1]));
  return (u as unknown[] | Uint8Array).slice(ix[0], ix[1]);
}

function length(args: unknown[]): number {
  const [item] = args;
  if (item === null) throw new FuncError("len of nil pointer");
  if (item === undefined) throw new FuncError("reflect: call of reflect.Value.Type on zero Value");
  const k = kindOf(item);
  if (k === "string" || k === "slice" || k === "bytes" || k === "map") return lengthOf(item);
  throw new FuncError(`len of type ${typeName(item)}`);
}

// ---- escaping ----

/** evalArgs: fmt.Sprint with nil operands shown as "<no value>". */
function evalArgs(args: unknown[]): string {
  if (args.length === 1 && typeof args[0] === "string") return args[0];
  return sprint(args.map((a) => (isNilish(a) ? "<no value>" : a)));
}

export function htmlEscape(s: string): string {
  return s.replace(/[\0"'&<>]/g, (c) => ({ "\0": "\uFFFD", '"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]!);
}

export function jsEscape(s: string): string {
  let out = "";
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    switch (ch) {
      case "\\": out += "\\\\"; continue;
      case "'": out += "\\'"; continue;
      case '"': out += '\\"'; continue;
      case "<": out += "\\u003C"; continue;
      case ">": out += "\\u003E"; continue;
      case "&": out += "\\u0026"; continue;
      case "=": out += "\\u003D"; continue;
    }
    if (c < 0x20) out += "\\u00" + c.toString(16).toUpperCase().padStart(2, "0");
    else if (c < 0x80 || /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(ch)) out += ch;
    else out += "\\u" + c.toString(16).toUpperCase().padStart(4, "0");
  }
  return out;
}

export function urlQueryEscape(s: string): string {
  let out = "";
  for (const b of utf8Bytes(s)) {
    const ch = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(ch)) out += ch;
    else if (ch === " ") out += "+";
    else out += "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

// ---- Ollama ----

function localDate(d: Date): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, "0");
  return `${p(d.getFullYear(), 4)}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

const TS_TYPES: Record<string, string> = {
  string: "string",
  number: "number",
  integer: "number",
  boolean: "boolean",
  array: "any[]",
  object: "Record<string, any>",
  null: "null",
};

/** api.ToolProperty.ToTypeScriptType for values built as GoStruct type "api.ToolProperty". */
export function toTypeScriptType(v: unknown): string {
  const u = unwrap(v);
  if (!(u instanceof GoStruct) || u.type.name !== "api.ToolProperty") return "any";
  const anyOf = unwrap(u.field("AnyOf"));
  if (Array.isArray(anyOf) && anyOf.length > 0) return anyOf.map(toTypeScriptType).join(" | ");
  const t = unwrap(u.field("Type"));
  const types = Array.isArray(t) ? (t as string[]) : [];
  if (types.length === 0) return "any";
  return types.map((x) => (Object.hasOwn(TS_TYPES, x) ? TS_TYPES[x] : "any")).join(" | ");
}

const V: ParamKind = "value";
const A: ParamKind = "any";

export const BUILTINS: Record<string, FuncDef> = {
  and: { params: [V], variadic: V, fn: () => undefined }, // short-circuit, done by the executor
  or: { params: [V], variadic: V, fn: () => undefined },
  call: { params: [V], variadic: V, fn: () => undefined }, // done by the executor
  not: { params: [V], fn: ([a]) => !truth(a) },
  eq: { params: [V], variadic: V, fn: (a) => eq(a) },
  ne: { params: [V, V], fn: ([a, b]) => !eq([a, b]) },
  lt: { params: [V, V], fn: ([a, b]) => lt(a, b) },
  le: { params: [V, V], fn: ([a, b]) => le(a, b) },
  gt: { params: [V, V], fn: ([a, b]) => !le(a, b) },
  ge: { params: [V, V], fn: ([a, b]) => !lt(a, b) },
  len: { params: [V], fn: length },
  index: { params: [V], variadic: V, fn: index },
  slice: { params: [V], variadic: V, fn: slice },
  print: { params: [], variadic: A, fn: (a) => sprint(a) },
  println: { params: [], variadic: A, fn: (a) => sprintln(a) },
  printf: { params: ["string"], variadic: A, fn: ([f, ...a]) => sprintf(f as string, a) },
  html: { params: [], variadic: A, fn: (a) => htmlEscape(evalArgs(a)) },
  js: { params: [], variadic: A, fn: (a) => jsEscape(evalArgs(a)) },
  urlquery: { params: [], variadic: A, fn: (a) => urlQueryEscape(evalArgs(a)) },
};

export const OLLAMA_FUNCS: Record<string, FuncDef> = {
  json: {
    params: [A],
    fn: ([v]) => {
      try {
        return marshalJSON(v);
      } catch (e) {
        if (e instanceof JsonError) return ""; // Ollama ignores the error: string(nil)
        throw e;
      }
    },
  },
  currentDate: { params: [], variadic: "string", fn: (_a, ctx) => localDate(ctx.now()) },
  yesterdayDate: {
    params: [],
    variadic: "string",
    fn: (_a, ctx) => {
      const d = ctx.now();
      return localDate(new Date(d.getFullYear(), d.getMonth(), d.getDate() - 1));
    },
  },
  toTypeScriptType: { params: [A], fn: ([v]) => toTypeScriptType(v) },
};
