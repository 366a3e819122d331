// Helpers over the Jinja engine's runtime values shared by the modules that give it Python's
// semantics (jinja-methods, -tests, -filters, -operators, -statements): making values, reading a
// call's arguments, iterating, ordering and looking up attributes as Python does.
import { Environment, Interpreter } from "@huggingface/jinja";
import { is, isDict, isList, isMissing, isNum, isStr, keyValue, NamespaceClass, pyEquals, pyRepr, pyType, TupleClass, V, type RValue } from "./jinja-values.js";

/* eslint-disable @typescript-eslint/no-explicit-any */

export type Node = any;
export type Interp = Interpreter & Record<string, any>;
export type Kwargs = Map<string, RValue>;
export const proto = Interpreter.prototype as unknown as Record<string, any>;
/** Arguments as a template passed them; typed as present because a missing one fails the render either way. */
export type Args = [RValue, RValue, RValue, ...RValue[]];
export const fn = (f: (args: Args, env: Environment) => RValue): RValue => new V.Function(f as (args: RValue[], env: Environment) => RValue);
export const undef = (): RValue => new V.Undefined();
export const str = (s: string): RValue => new V.String(s);
/** A tuple, typed as a list so the engine's own loops unpack it (it checks `type === "ArrayValue"`). */
export const tuple = (items: RValue[]): RValue => Object.assign(new TupleClass(items), { type: "ArrayValue" });

// A node the evaluator returns as is: lets a wrapper evaluate operands once, then hand the engine
// a node whose operands are already values.
export const PRE = "PreEvaluated";
export const pre = (value: RValue): Node => ({ type: PRE, value });

/** Positional arguments and keyword arguments of a FunctionValue call. */
export function splitArgs(args: RValue[]): [RValue[], Kwargs] {
  const last = args.at(-1);
  return last && last.type === "KeywordArgumentsValue" ? [args.slice(0, -1), last.value] : [args, new Map()];
}
export const arg = (args: RValue[], kw: Kwargs, i: number, name: string): RValue | undefined => args[i] ?? kw.get(name);

/** Items of what Python would iterate: a list, a string's characters, a dict's keys; undefined is empty. */
export function iterate(v: RValue, what: string): RValue[] {
  if (isList(v)) return v.value;
  if (isStr(v)) return [...(v.value as string)].map(str);
  if (isDict(v)) return [...(v.value as Map<unknown, RValue>).keys()].map(keyValue);
  if (is(v, V.Undefined)) return [];
  throw new Error(`'${pyType(v)}' object is not iterable (${what})`);
}

/** Jinja2's attribute lookup for filters (`attribute="a.b"`, integer parts index lists). */
export function attribute(item: RValue, path: string): RValue {
  let v = item;
  for (const part of path.split(".")) {
    if (isDict(v) || is(v, NamespaceClass)) v = v.value.get(part) ?? v.value.get(Number(part)) ?? undef();
    else if (isList(v) && /^-?\d+$/.test(part)) v = v.value.at(Number(part)) ?? undef();
    else if (isList(v)) v = (v.builtins as Map<string, RValue>).get(part) ?? undef(); // a namedtuple's fields (groupby)
    else return undef();
  }
  return v;
}

/** Python's ordering for sort/min/max: numbers, or strings (case-folded unless asked). */
export function compare(a: RValue, b: RValue, caseSensitive: boolean): number {
  const key = (v: RValue): number | string => (isStr(v) ? (caseSensitive ? v.value : v.value.toLowerCase()) : is(v, V.Boolean) ? Number(v.value) : v.value);
  const x = key(a), y = key(b);
  if (typeof x !== typeof y) throw new Error(`'<' not supported between instances of '${pyType(a)}' and '${pyType(b)}'`);
  return x < y ? -1 : x > y ? 1 : 0;
}

export const dictItems = (m: Map<unknown, RValue>): RValue => new V.Array([...m].map(([k, v]) => tuple([keyValue(k), v])));
/** Dict keys are the JS strings the engine uses, or numbers for int keys of a literal. */
export const keyOf = (k: RValue): unknown => (isNum(k) ? k.value : is(k, V.Boolean) ? Number(k.value) : isStr(k) ? k.value : pyRepr(k));

export const nonNull = (v: RValue | undefined): RValue | undefined => (isMissing(v) || is(v, V.Null) ? undefined : v);

/** Python's ordering for `<` and friends: numbers (bools among them), strings by code point, sequences item by item. */
export function order(a: RValue, b: RValue, op: string): number {
  const num = (v: RValue) => isNum(v) || is(v, V.Boolean);
  if (num(a) && num(b)) return Number(a.value) - Number(b.value);
  if (isStr(a) && isStr(b)) return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
  if (isList(a) && isList(b)) {
    for (let i = 0; i < Math.min(a.value.length, b.value.length); i++) if (!pyEquals(a.value[i], b.value[i])) return order(a.value[i], b.value[i], op);
    return a.value.length - b.value.length;
  }
  throw new Error(`'${op}' not supported between instances of '${pyType(a)}' and '${pyType(b)}'`);
}
export const numeric = (v: RValue): boolean => isNum(v) || is(v, V.Boolean);
