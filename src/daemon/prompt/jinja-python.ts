// Python Jinja2 semantics for the Jinja engine (@huggingface/jinja), installed once at import the way
// jinja-bounds.ts installs its limits: by wrapping engine methods, never forking it. Chat templates
// are written for transformers' apply_chat_template (Python Jinja2), and a model was trained on what
// that prints, so where the engine differs (str() of a dict, True, dict literals with int keys, filters
// and str/list/dict methods it lacks, loops over undefined) Python's behaviour is what we want.
// Where Python itself raises and llama.cpp's engine renders (a string plus undefined, list.append
// under the immutable sandbox), the render follows llama.cpp: a real engine would not fail there.
import { Environment, Interpreter } from "@huggingface/jinja";
import {
  dictView, escapeHtml, is, isDict, KwargsClass, isList, isMarkup, isMissing, isNum, isStr, keyValue, markup, NamespaceClass, pyEquals, pyJson, pyRepr, pyStr,
  rv, TupleClass, V, type RValue,
} from "./jinja-values.js";
import { boundedRange } from "./jinja-bounds.js";
import { renderLimits, TemplateSizeError, tooLong } from "./render-budget.js";
import { pyStrftime } from "./strftime.js";
import { compileJinja, SCOPED_BLOCK, TUPLE_FN } from "./jinja-syntax.js";
import { formatSpec, percentFormat, pyRound } from "./jinja-format.js";
import { center, expandTabs, filesizeformat, isTitle, striptags, title, titleFilter, truncate, urlQuote, wordwrap } from "./jinja-text.js";

/** What a template raised with raise_exception(): its own words, for the 400 it becomes. */
export class TemplateRaised extends Error {}

/* eslint-disable @typescript-eslint/no-explicit-any */
type Node = any;
type Interp = Interpreter & Record<string, any>;
type Kwargs = Map<string, RValue>;
const proto = Interpreter.prototype as unknown as Record<string, any>;
/** Arguments as a template passed them; typed as present because a missing one fails the render either way. */
type Args = [RValue, RValue, RValue, ...RValue[]];
const fn = (f: (args: Args, env: Environment) => RValue): RValue => new V.Function(f as (args: RValue[], env: Environment) => RValue);
const undef = (): RValue => new V.Undefined();
const str = (s: string): RValue => new V.String(s);
/** A tuple, typed as a list so the engine's own loops unpack it (it checks `type === "ArrayValue"`). */
const tuple = (items: RValue[]): RValue => Object.assign(new TupleClass(items), { type: "ArrayValue" });

// A node the evaluator returns as is: lets a wrapper evaluate operands once, then hand the engine
// a node whose operands are already values.
const PRE = "PreEvaluated";
const pre = (value: RValue): Node => ({ type: PRE, value });

/** Positional arguments and keyword arguments of a FunctionValue call. */
function splitArgs(args: RValue[]): [RValue[], Kwargs] {
  const last = args.at(-1);
  return last && last.type === "KeywordArgumentsValue" ? [args.slice(0, -1), last.value] : [args, new Map()];
}
const arg = (args: RValue[], kw: Kwargs, i: number, name: string): RValue | undefined => args[i] ?? kw.get(name);

/** Items of what Python would iterate: a list, a string's characters, a dict's keys; undefined is empty. */
function iterate(v: RValue, what: string): RValue[] {
  if (isList(v)) return v.value;
  if (isStr(v)) return [...(v.value as string)].map(str);
  if (isDict(v)) return [...(v.value as Map<unknown, RValue>).keys()].map(keyValue);
  if (is(v, V.Undefined)) return [];
  throw new Error(`'${pyType(v)}' object is not iterable (${what})`);
}
const pyType = (v: RValue): string =>
  isStr(v) ? "str" : is(v, V.Integer) ? "int" : is(v, V.Float) ? "float" : is(v, V.Boolean) ? "bool" : is(v, V.Null) ? "NoneType" : isList(v) ? "list" : isDict(v) ? "dict" : v.type;

/** Jinja2's attribute lookup for filters (`attribute="a.b"`, integer parts index lists). */
function attribute(item: RValue, path: string): RValue {
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
function compare(a: RValue, b: RValue, caseSensitive: boolean): number {
  const key = (v: RValue): number | string => (isStr(v) ? (caseSensitive ? v.value : v.value.toLowerCase()) : is(v, V.Boolean) ? Number(v.value) : v.value);
  const x = key(a), y = key(b);
  if (typeof x !== typeof y) throw new Error(`'<' not supported between instances of '${pyType(a)}' and '${pyType(b)}'`);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** What Python's str.isspace() calls whitespace (JavaScript's \s differs: it has U+FEFF, lacks U+001C–U+001F and U+0085). */
const PY_SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PY_SPACES = new RegExp(`[${PY_SPACE}]+`);
const pySpace = (c: string): boolean => new RegExp(`^[${PY_SPACE}]$`).test(c);
/** Python's str.split(sep, maxsplit): on runs of whitespace (no empty parts) when sep is None. */
function pySplit(s: string, sep: RValue | undefined, maxsplit: number, fromRight: boolean): string[] {
  const bySpace = isMissing(sep) || is(sep, V.Null);
  if (!bySpace && pyStr(sep!) === "") throw new Error("empty separator");
  const parts = bySpace ? strip(s, undefined, "both").split(PY_SPACES).filter(Boolean) : s.split(pyStr(sep!));
  if (maxsplit < 0 || parts.length <= maxsplit + 1) return parts;
  const joiner = bySpace ? " " : pyStr(sep!);
  if (!bySpace) return fromRight ? [parts.slice(0, parts.length - maxsplit).join(joiner), ...parts.slice(parts.length - maxsplit)] : [...parts.slice(0, maxsplit), parts.slice(maxsplit).join(joiner)];
  // by whitespace the rest keeps its own spacing: split off the words one at a time
  const out: string[] = [];
  let rest = strip(s, undefined, fromRight ? "right" : "left");
  for (let i = 0; i < maxsplit && rest !== ""; i++) {
    const m = fromRight ? new RegExp(`[${PY_SPACE}]+(?=[^${PY_SPACE}]*$)`).exec(rest) : PY_SPACES.exec(rest);
    if (!m) break;
    if (fromRight) (out.unshift(rest.slice(m.index + m[0].length)), (rest = rest.slice(0, m.index)));
    else (out.push(rest.slice(0, m.index)), (rest = rest.slice(m.index + m[0].length)));
  }
  if (rest !== "") fromRight ? out.unshift(rest) : out.push(rest);
  return out;
}
const strip = (s: string, chars: RValue | undefined, side: "both" | "left" | "right"): string => {
  const set = isMissing(chars) || is(chars, V.Null) ? undefined : new Set([...(chars!.value as string)]);
  const drop = (c: string) => (set ? set.has(c) : pySpace(c));
  const cs = [...s];
  let a = 0, b = cs.length;
  if (side !== "right") while (a < b && drop(cs[a]!)) a++;
  if (side !== "left") while (b > a && drop(cs[b - 1]!)) b--;
  return cs.slice(a, b).join("");
};

/** str.format: {} / {0} / {name}, with field lookups ({0[key]}, {x.attr}), !r / !s and a format spec. */
function pyFormat(template: string, args: RValue[], kw: Kwargs): string {
  let auto = 0;
  const value = (field: string): RValue => {
    const [, head = "", path = ""] = /^([^.[]*)(.*)$/s.exec(field)!;
    let v = head === "" ? args[auto++] : /^\d+$/.test(head) ? args[Number(head)] : kw.get(head);
    if (v === undefined) throw new Error(head === "" || /^\d+$/.test(head) ? "Replacement index out of range for positional args tuple" : `KeyError: '${head}'`);
    for (const [, attr, key] of path.matchAll(/\.([^.[]+)|\[([^\]]+)\]/g)) {
      const k = attr ?? key!;
      v = isList(v) && /^\d+$/.test(k) ? v.value[Number(k)] : isDict(v) ? v.value.get(k) : undefined;
      if (v === undefined) throw new Error(`KeyError: '${k}'`);
    }
    return v;
  };
  return template.replace(/\{\{|\}\}|\{([^{}!:]*)(?:!([rsa]))?(?::((?:[^{}]|\{[^{}]*\})*))?\}|[{}]/g, (m, field: string | undefined, conv?: string, spec?: string) => {
    if (m === "{{") return "{";
    if (m === "}}") return "}";
    if (m === "{" || m === "}") throw new Error(`Single '${m}' encountered in format string`);
    const v = value(field ?? "");
    // a nested field in the spec: "{:>{}}".format(text, width)
    if (spec) spec = spec.replace(/\{([^{}]*)\}/g, (_n, inner: string) => pyStr(value(inner)));
    const text = conv === "r" || conv === "a" ? str(pyRepr(v)) : conv === "s" ? str(pyStr(v)) : v;
    return spec ? formatSpec(text, spec) : pyStr(text);
  });
}

// ----- methods: what `value.name(...)` finds -----

const found = (i: number): RValue => {
  if (i < 0) throw new Error("substring not found");
  return new V.Integer(i);
};
function splitMethod(s: string, a: RValue[], fromRight: boolean): RValue {
  const [args, kw] = splitArgs(a);
  const max = arg(args, kw, 1, "maxsplit");
  if (max && !is(max, V.Integer)) throw new Error(`'${pyType(max)}' object cannot be interpreted as an integer`);
  return new V.Array(pySplit(s, arg(args, kw, 0, "sep"), max ? max.value : -1, fromRight).map(str));
}
/** str.startswith / endswith: a prefix or a tuple of them, within s[start:end] (by code point). */
function affix(s: string, a: RValue[], test: (text: string, x: string) => boolean): RValue {
  const cps = [...s];
  const start = a[1] && !is(a[1], V.Null) ? Number(a[1].value) : 0, end = a[2] && !is(a[2], V.Null) ? Number(a[2].value) : cps.length;
  const text = cps.slice(start < 0 ? Math.max(0, cps.length + start) : start, end < 0 ? cps.length + end : end).join("");
  const options = isList(a[0]!) ? (a[0]!.value as RValue[]).map(pyStr) : [pyStr(a[0]!)];
  return new V.Boolean(options.some((x) => test(text, x)));
}
const stringMethods = (self: RValue): Record<string, RValue> => {
  const s: string = self.value;
  const test = (re: RegExp) => fn(() => new V.Boolean(s.length > 0 && re.test(s)));
  return {
    strip: fn((a) => str(strip(s, a[0], "both"))),
    lstrip: fn((a) => str(strip(s, a[0], "left"))),
    rstrip: fn((a) => str(strip(s, a[0], "right"))),
    capitalize: fn(() => str(s.charAt(0).toUpperCase() + s.slice(1).toLowerCase())),
    format: fn((a) => str(pyFormat(s, ...splitArgs(a)))),
    join: fn((a) => str(iterate(a[0] ?? undef(), "join").map(pyStr).join(s))),
    find: fn((a) => new V.Integer(s.indexOf(pyStr(a[0])))),
    rfind: fn((a) => new V.Integer(s.lastIndexOf(pyStr(a[0])))),
    count: fn((a) => new V.Integer(pyStr(a[0]) === "" ? [...s].length + 1 : s.split(pyStr(a[0])).length - 1)),
    isdigit: test(/^\p{Nd}+$/u),
    isnumeric: test(/^\p{N}+$/u),
    isalpha: test(/^\p{L}+$/u),
    isalnum: test(/^[\p{L}\p{N}]+$/u),
    isspace: test(/^\s+$/),
    islower: fn(() => new V.Boolean(pyCase(s, "lower"))),
    isupper: fn(() => new V.Boolean(pyCase(s, "upper"))),
    splitlines: fn(() => new V.Array(s.split(/\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/).filter((x, i, all) => i < all.length - 1 || x !== "").map(str))),
    removeprefix: fn((a) => str(s.startsWith(pyStr(a[0])) ? s.slice(pyStr(a[0]).length) : s)),
    removesuffix: fn((a) => str(pyStr(a[0]) && s.endsWith(pyStr(a[0])) ? s.slice(0, -pyStr(a[0]).length) : s)),
    split: fn((a) => splitMethod(s, a, false)),
    rsplit: fn((a) => splitMethod(s, a, true)),
    startswith: fn((a) => affix(s, a, (t, x) => t.startsWith(x))),
    endswith: fn((a) => affix(s, a, (t, x) => t.endsWith(x))),
    index: fn((a) => found(s.indexOf(pyStr(a[0])))),
    rindex: fn((a) => found(s.lastIndexOf(pyStr(a[0])))),
    zfill: fn((a) => {
      const width = Number(a[0]?.value ?? 0), sign = /^[+-]/.test(s) ? s[0]! : "";
      return str(sign + s.slice(sign.length).padStart(width - sign.length, "0"));
    }),
    ljust: fn((a) => str(s + pyStr(a[1] ?? str(" ")).repeat(Math.max(0, Number(a[0]?.value ?? 0) - [...s].length)))),
    rjust: fn((a) => str(pyStr(a[1] ?? str(" ")).repeat(Math.max(0, Number(a[0]?.value ?? 0) - [...s].length)) + s)),
    center: fn((a) => str(center(s, Number(a[0]?.value ?? 0), pyStr(a[1] ?? str(" "))))),
    casefold: fn(() => str(s.toUpperCase().toLowerCase())), // ß → SS → ss, as Python folds it
    swapcase: fn(() => str([...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join(""))),
    title: fn(() => str(title(s))),
    istitle: fn(() => new V.Boolean(isTitle(s))),
    isdecimal: test(/^\p{Nd}+$/u),
    expandtabs: fn((a) => str(expandTabs(s, Number(a[0]?.value ?? 8)))),
    rpartition: fn((a) => {
      const i = s.lastIndexOf(pyStr(a[0]));
      return tuple(i < 0 ? [str(""), str(""), str(s)] : [str(s.slice(0, i)), str(pyStr(a[0])), str(s.slice(i + pyStr(a[0]).length))]);
    }),
    partition: fn((a) => {
      const i = s.indexOf(pyStr(a[0]));
      return tuple(i < 0 ? [str(s), str(""), str("")] : [str(s.slice(0, i)), str(pyStr(a[0])), str(s.slice(i + pyStr(a[0]).length))]);
    }),
  };
};

const listMethods = (self: RValue): Record<string, RValue> => {
  const items: RValue[] = self.value;
  const index = (x: RValue) => items.findIndex((y) => pyEquals(x, y));
  return {
    // Mutation: Python's immutable sandbox refuses it, llama.cpp's engine does it (Kimi K2's templates queue ids so).
    append: fn((a) => (items.push(a[0]), new V.Null())),
    extend: fn((a) => (items.push(...iterate(a[0], "extend")), new V.Null())),
    insert: fn((a) => (items.splice(a[0].value < 0 ? Math.max(0, items.length + a[0].value) : a[0].value, 0, a[1]), new V.Null())),
    pop: fn((a) => {
      if (items.length === 0) throw new Error("pop from empty list");
      const i = a[0] === undefined ? items.length - 1 : a[0].value < 0 ? items.length + a[0].value : a[0].value;
      if (i < 0 || i >= items.length) throw new Error("pop index out of range");
      return items.splice(i, 1)[0]!;
    }),
    remove: fn((a) => {
      const i = index(a[0]);
      if (i < 0) throw new Error("list.remove(x): x not in list");
      items.splice(i, 1);
      return new V.Null();
    }),
    index: fn((a) => {
      const i = index(a[0]);
      if (i < 0) throw new Error(`${pyRepr(a[0])} is not in list`);
      return new V.Integer(i);
    }),
    count: fn((a) => new V.Integer(items.filter((y) => pyEquals(a[0], y)).length)),
    copy: fn(() => new V.Array(items.slice())),
  };
};

const dictItems = (m: Map<unknown, RValue>): RValue => new V.Array([...m].map(([k, v]) => tuple([keyValue(k), v])));
/** Dict keys are the JS strings the engine uses, or numbers for int keys of a literal. */
const keyOf = (k: RValue): unknown => (isNum(k) ? k.value : is(k, V.Boolean) ? Number(k.value) : isStr(k) ? k.value : pyRepr(k));

const dictMethods = (self: RValue): Record<string, RValue> => {
  const m: Map<unknown, RValue> = self.value;
  return {
    get: fn((a) => m.get(keyOf(a[0])) ?? a[1] ?? new V.Null()),
    items: fn(() => dictView("dict_items", dictItems(m))),
    keys: fn(() => dictView("dict_keys", new V.Array([...m.keys()].map(keyValue)))),
    values: fn(() => dictView("dict_values", new V.Array([...m.values()]))),
    pop: fn((a) => {
      const k = keyOf(a[0]);
      const v = m.get(k) ?? a[1];
      if (v === undefined) throw new Error(`KeyError: ${pyRepr(a[0])}`);
      m.delete(k);
      return v;
    }),
    setdefault: fn((a) => {
      const k = keyOf(a[0]);
      if (!m.has(k)) m.set(k, a[1] ?? new V.Null());
      return m.get(k)!;
    }),
    update: fn((a) => {
      const [args, kw] = splitArgs(a);
      if (args[0] && isDict(args[0])) for (const [k, v] of args[0].value as Map<unknown, RValue>) m.set(k, v);
      for (const [k, v] of kw) m.set(k, v);
      return new V.Null();
    }),
    copy: fn(() => new V.Object(new Map(m))),
  };
};

/** Adds methods to a value class's `builtins` (the engine's lookup for `value.name`), ours replacing its own. */
function addMethods(cls: { prototype: object }, methods: (self: RValue) => Record<string, RValue>): void {
  const own = Object.getOwnPropertyDescriptor(cls.prototype, "builtins")!;
  const done = new WeakSet<Map<string, RValue>>();
  Object.defineProperty(cls.prototype, "builtins", {
    configurable: true,
    get(this: RValue) {
      const map: Map<string, RValue> = own.get!.call(this);
      if (!done.has(map)) {
        for (const [name, m] of Object.entries(methods(this))) map.set(name, m);
        done.add(map);
      }
      return map;
    },
  });
}
addMethods(V.String, stringMethods);
addMethods(V.Array, listMethods);
addMethods(V.Object, dictMethods);
// Loops and `for k in dict` go through these: int keys come back as ints, pairs as tuples.
Object.assign(V.Object.prototype, {
  keys(this: RValue) {
    return new V.Array([...(this.value as Map<unknown, RValue>).keys()].map(keyValue));
  },
  items(this: RValue) {
    return dictItems(this.value);
  },
});

// ----- printing: Python's str() where the engine printed JavaScript's -----

for (const cls of [V.Boolean, V.Float, V.Array, V.Object, NamespaceClass]) {
  (cls.prototype as RValue).toString = function (this: RValue) {
    return pyStr(this);
  };
}

// ----- tests: `value is name` -----

const tests = (Environment as unknown as { TESTS: Map<string, (...v: RValue[]) => boolean> }).TESTS;
tests.set("iterable", (v) => isList(v) || isStr(v) || isDict(v) || is(v, V.Undefined));
tests.set("float", (v) => is(v, V.Float));
tests.set("number", (v) => isNum(v) || is(v, V.Boolean));
tests.set("escaped", (v) => isMarkup(v));
const COMPARISON_TESTS = [
  ["eq", "=="], ["equalto", "=="], ["==", "=="], ["ne", "!="], ["!=", "!="], ["lt", "<"], ["lessthan", "<"], ["<", "<"], ["le", "<="], ["<=", "<="],
  ["gt", ">"], ["greaterthan", ">"], [">", ">"], ["ge", ">="], [">=", ">="], ["in", "in"],
] as const;
for (const [name, op] of COMPARISON_TESTS) {
  tests.set(name, (a, b) => {
    if (op === "==" || op === "!=") return pyEquals(a, b) === (op === "==");
    if (op === "in") return isStr(b) ? b.value.includes(pyStr(a)) : isDict(b) ? b.value.has(keyOf(a)) : iterate(b, "in").some((x) => pyEquals(a, x));
    const c = compare(a, b, true);
    return op === "<" ? c < 0 : op === "<=" ? c <= 0 : op === ">" ? c > 0 : c >= 0;
  });
}

// str(value).islower() / isupper(): at least one cased character, and none of the other case.
tests.set("lower", (v) => pyCase(pyStr(v), "lower"));
tests.set("upper", (v) => pyCase(pyStr(v), "upper"));
function pyCase(s: string, want: "lower" | "upper"): boolean {
  const hasLower = s !== s.toUpperCase(), hasUpper = s !== s.toLowerCase();
  return want === "lower" ? hasLower && !hasUpper : hasUpper && !hasLower;
}
// Python's `value % 2`: a bool is an int, a float may be even.
tests.set("odd", (v) => parity(v) === 1);
tests.set("even", (v) => parity(v) === 0);
function parity(v: RValue): number {
  // a string is formatted with 2 (`"%s" % 2`), which never equals 0 or 1
  if (isStr(v)) return (percentFormat(v.value, new V.Integer(2)), -1);
  if (!numeric(v)) throw new Error(`not all arguments converted during string formatting (${pyType(v)} % 2)`);
  const x = Number(v.value);
  return x - 2 * Math.floor(x / 2);
}
tests.set("divisibleby", (a, b) => {
  if (!numeric(a) || !b || !numeric(b)) throw new Error(`unsupported operand type(s) for %: '${pyType(a)}' and '${b ? pyType(b) : "NoneType"}'`);
  if (!b.value) throw new Error("integer modulo by zero");
  return (a.value as number) % (b.value as number) === 0;
});
// Identity: Python's `is`, which for the immutable values a template sees is equality of type and value.
tests.set("sameas", (a, b) => (isList(a) || isDict(a) ? a === b : a.type === b?.type && a.value === b?.value));
tests.set("callable", (v) => v instanceof V.Function || is(v, V.Undefined));
tests.set("test", (v) => isStr(v) && tests.has(v.value));
tests.set("filter", (v) => isStr(v) && JINJA2_FILTERS.has(v.value));

// `x is divisibleby(3)`: jinja-syntax.ts leaves the arguments on the node.
const engineTest = proto.evaluateTestExpression;
proto.evaluateTestExpression = function (this: Interp, node: Node, env: Environment) {
  if (!node.args) return engineTest.call(this, node, env);
  const operand: RValue = this.evaluate(node.operand, env);
  const test = env.tests.get(node.test.value);
  if (!test) throw new Error(`No test named '${node.test.value}'`);
  const [args, kw] = this.evaluateArguments(node.args, env) as [RValue[], Kwargs];
  const result = test(operand, ...args, ...(kw.size ? [new KwargsClass(kw)] : []));
  return new V.Boolean(node.negate ? !result : result);
};

// ----- filters -----

const JINJA2_FILTERS = new Set(("abs attr batch capitalize center count d default dictsort e escape filesizeformat first float forceescape format groupby indent int " +
  "items join last length list lower map max min pprint random reject rejectattr replace reverse round safe select selectattr slice sort string striptags " +
  "sum title tojson trim truncate unique upper urlencode urlize wordcount wordwrap xmlattr").split(" "));

const nonNull = (v: RValue | undefined): RValue | undefined => (isMissing(v) || is(v, V.Null) ? undefined : v);
/** Python's int(text, base): sign, optional prefix for the base, underscores between digits. */
function pyInt(text: string, base: number): number | undefined {
  let t = text.trim().replace(/(?<=[0-9a-z])_(?=[0-9a-z])/gi, "");
  const sign = t.startsWith("-") ? -1 : 1;
  t = t.replace(/^[+-]/, "");
  const prefixed = /^0([xob])/i.exec(t);
  if (prefixed && (base === 0 || base === { x: 16, o: 8, b: 2 }[prefixed[1]!.toLowerCase()])) {
    base = { x: 16, o: 8, b: 2 }[prefixed[1]!.toLowerCase() as "x" | "o" | "b"];
    t = t.slice(2);
  }
  if (base === 0) base = 10;
  const digits = "0123456789abcdefghijklmnopqrstuvwxyz".slice(0, base);
  if (t === "" || [...t.toLowerCase()].some((ch) => !digits.includes(ch))) return undefined;
  return sign * parseInt(t, base);
}
/** Python's float(text): decimal or scientific, inf and nan, surrounding space. */
function pyFloatOf(text: string): number | undefined {
  const t = text.trim().replace(/(?<=\d)_(?=\d)/g, "");
  if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t)) return Number(t);
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(t);
  if (!special) return undefined;
  return special[2]!.toLowerCase() === "nan" ? NaN : special[1] === "-" ? -Infinity : Infinity;
}

interface FilterCall {
  self: Interp;
  env: Environment;
  args: RValue[];
  kw: Kwargs;
}
type Filter = (v: RValue, c: FilterCall) => RValue;

/** Applies a filter by name (for `map("upper")`), through the same path a template's own filter takes. */
function applyNamed(c: FilterCall, v: RValue, name: string, args: RValue[]): RValue {
  const node = args.length ? { type: "CallExpression", callee: { type: "Identifier", value: name }, args: args.map(pre) } : { type: "Identifier", value: name };
  return c.self.applyFilter(v, node, c.env);
}
function selectItems(v: RValue, c: FilterCall, byAttribute: boolean, keep: boolean): RValue {
  // Jinja2's select_or_reject: a falsy sequence (none, undefined, empty) selects nothing.
  if (!v.__bool__().value) return new V.Array([]);
  const [first, testName, ...rest] = byAttribute ? c.args : [undefined, ...c.args];
  const test = testName ? c.env.tests.get(pyStr(testName)) : undefined;
  if (testName && !test) throw new Error(`No test named '${pyStr(testName)}'`);
  return new V.Array(iterate(v, "select").filter((item) => {
    const x = byAttribute ? attribute(item, pyStr(first!)) : item;
    return (test ? test(x, ...rest) : x.__bool__().value) === keep;
  }));
}
function aggregate(v: RValue, c: FilterCall, pick: 1 | -1): RValue {
  const items = iterate(v, pick > 0 ? "max" : "min");
  const attr = arg(c.args, c.kw, 1, "attribute");
  const cs = arg(c.args, c.kw, 0, "case_sensitive")?.__bool__().value ?? false;
  const key = (x: RValue) => (attr ? attribute(x, pyStr(attr)) : x);
  let best: RValue | undefined;
  for (const x of items) if (best === undefined || compare(key(x), key(best), cs) * pick > 0) best = x;
  return best ?? undef();
}

const FILTERS: Record<string, Filter> = {
  string: (v) => (isMarkup(v) ? v : str(pyStr(v))),
  safe: (v) => (isMarkup(v) ? v : markup(pyStr(v))),
  escape: (v) => (isMarkup(v) ? v : markup(escapeHtml(pyStr(v)))),
  tojson: (v, { args, kw }) => {
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    const indent = arg(args, kw, 1, "indent");
    const seps = arg(args, kw, 2, "separators");
    return str(pyJson(v, {
      ensureAscii: arg(args, kw, 0, "ensure_ascii")?.__bool__().value ?? false,
      indent: isMissing(indent) || is(indent, V.Null) ? null : indent!.value,
      separators: isMissing(seps) || is(seps, V.Null) ? null : [pyStr(seps!.value[0]), pyStr(seps!.value[1])],
      sortKeys: arg(args, kw, 3, "sort_keys")?.__bool__().value ?? false,
    }));
  },
  length: (v) => {
    if (is(v, V.Undefined)) return new V.Integer(0);
    if (isStr(v)) return new V.Integer([...(v.value as string)].length);
    if (isList(v)) return new V.Integer(v.value.length);
    if (isDict(v) || is(v, NamespaceClass)) return new V.Integer(v.value.size);
    throw new Error(`object of type '${pyType(v)}' has no len()`);
  },
  list: (v) => new V.Array(iterate(v, "list").slice()),
  first: (v) => iterate(v, "first")[0] ?? undef(),
  last: (v) => iterate(v, "last").at(-1) ?? undef(),
  min: (v, c) => aggregate(v, c, -1),
  max: (v, c) => aggregate(v, c, 1),
  sum: (v, c) => {
    const attr = arg(c.args, c.kw, 0, "attribute");
    const start = arg(c.args, c.kw, 1, "start") ?? new V.Integer(0);
    return iterate(v, "sum").reduce((acc: RValue, x) => {
      const y = attr ? attribute(x, pyStr(attr)) : x;
      if (isList(acc) && isList(y)) return new V.Array([...acc.value, ...y.value]);
      if (!(isNum(acc) || is(acc, V.Boolean)) || !(isNum(y) || is(y, V.Boolean))) throw new Error(`unsupported operand type(s) for +: '${pyType(acc)}' and '${pyType(y)}'`);
      return is(acc, V.Float) || is(y, V.Float) ? new V.Float(Number(acc.value) + Number(y.value)) : new V.Integer(Number(acc.value) + Number(y.value));
    }, start);
  },
  unique: (v, c) => {
    const cs = arg(c.args, c.kw, 0, "case_sensitive")?.__bool__().value ?? false;
    const attr = arg(c.args, c.kw, 1, "attribute");
    const seen: RValue[] = [];
    const out: RValue[] = [];
    for (const x of iterate(v, "unique")) {
      let k = attr ? attribute(x, pyStr(attr)) : x;
      if (!cs && isStr(k)) k = str(k.value.toLowerCase());
      if (!seen.some((s) => pyEquals(s, k))) (seen.push(k), out.push(x));
    }
    return new V.Array(out);
  },
  join: (v, c) => {
    const sep = arg(c.args, c.kw, 0, "d") ?? str("");
    const attr = arg(c.args, c.kw, 1, "attribute");
    return str(iterate(v, "join").map((x) => pyStr(attr ? attribute(x, pyStr(attr)) : x)).join(pyStr(sep)));
  },
  items: (v) => (is(v, V.Undefined) ? new V.Array([]) : isDict(v) ? dictItems(v.value) : (() => { throw new Error(`items filter needs a mapping, got '${pyType(v)}'`); })()),
  dictsort: (v, c) => {
    const cs = arg(c.args, c.kw, 0, "case_sensitive")?.__bool__().value ?? false;
    const by = pyStr(arg(c.args, c.kw, 1, "by") ?? str("key")) === "value" ? 1 : 0;
    const reverse = arg(c.args, c.kw, 2, "reverse")?.__bool__().value ?? false;
    const pairs = dictItems(v.value).value as RValue[];
    return new V.Array(pairs.sort((a, b) => compare(a.value[by], b.value[by], cs) * (reverse ? -1 : 1)));
  },
  selectattr: (v, c) => selectItems(v, c, true, true),
  rejectattr: (v, c) => selectItems(v, c, true, false),
  select: (v, c) => selectItems(v, c, false, true),
  reject: (v, c) => selectItems(v, c, false, false),
  map: (v, c) => {
    const attr = c.kw.get("attribute");
    if (attr) {
      const dflt = c.kw.get("default");
      return new V.Array(iterate(v, "map").map((x) => {
        const y = attribute(x, pyStr(attr));
        return is(y, V.Undefined) && dflt ? dflt : y;
      }));
    }
    const [name, ...rest] = c.args;
    if (!name) return new V.Array(iterate(v, "map"));
    return new V.Array(iterate(v, "map").map((x) => applyNamed(c, x, pyStr(name), rest)));
  },
  default: (v, c) => {
    const dflt = arg(c.args, c.kw, 0, "default_value") ?? str("");
    const boolean = arg(c.args, c.kw, 1, "boolean")?.__bool__().value ?? false;
    return is(v, V.Undefined) || (boolean && !v.__bool__().value) ? dflt : v;
  },
  trim: (v, c) => str(strip(pyStr(v), arg(c.args, c.kw, 0, "chars"), "both")),
  capitalize: (v) => str(pyStr(v).charAt(0).toUpperCase() + pyStr(v).slice(1).toLowerCase()),
  upper: (v) => str(pyStr(v).toUpperCase()),
  lower: (v) => str(pyStr(v).toLowerCase()),
  round: (v, c) => {
    const precision = arg(c.args, c.kw, 0, "precision")?.value ?? 0;
    const method = pyStr(arg(c.args, c.kw, 1, "method") ?? str("common"));
    if (!numeric(v)) throw new Error(`type ${pyType(v)} doesn't define __round__ method`);
    if (is(v, V.Boolean)) v = new V.Integer(Number(v.value));
    if (method === "common") {
      // Python's round(): half to even on the exact value; an int stays an int
      return is(v, V.Integer) ? new V.Integer(pyRound(v.value, precision)) : new V.Float(pyRound(v.value, precision));
    }
    if (method !== "ceil" && method !== "floor") throw new Error("method must be 'common', 'ceil' or 'floor'");
    const f = 10 ** precision;
    return new V.Float((method === "ceil" ? Math.ceil : Math.floor)((v.value as number) * f) / f);
  },

};
Object.assign(FILTERS, {
  format: (v, c) => {
    if (c.args.length && c.kw.size) throw new Error("can't handle positional and keyword arguments at the same time");
    return str(percentFormat(pyStr(v), c.kw.size ? new V.Object(new Map(c.kw)) : tuple(c.args)));
  },
  truncate: (v, c) => {
    const length = Number(arg(c.args, c.kw, 0, "length")?.value ?? 255), leeway = Number(nonNull(arg(c.args, c.kw, 3, "leeway"))?.value ?? 5);
    // Jinja2 measures what it is given: a short list comes back as it is
    if (!isStr(v) && (isList(v) || isDict(v)) && FILTERS.length!(v, c).value <= length + leeway) return v;
    return str(truncate(pyStr(v), Number(arg(c.args, c.kw, 0, "length")?.value ?? 255), arg(c.args, c.kw, 1, "killwords")?.__bool__().value ?? false,
      pyStr(arg(c.args, c.kw, 2, "end") ?? str("...")), leeway));
  },
  wordcount: (v) => new V.Integer(pyStr(v).match(/[\p{L}\p{N}_]+/gu)?.length ?? 0),
  wordwrap: (v, c) =>
    str(wordwrap(pyStr(v), Number(arg(c.args, c.kw, 0, "width")?.value ?? 79), arg(c.args, c.kw, 1, "break_long_words")?.__bool__().value ?? true,
      pyStr(nonNull(arg(c.args, c.kw, 2, "wrapstring")) ?? str("\n")), arg(c.args, c.kw, 3, "break_on_hyphens")?.__bool__().value ?? true)),
  center: (v, c) => str(center(pyStr(v), Number(arg(c.args, c.kw, 0, "width")?.value ?? 80))),
  striptags: (v) => str(striptags(pyStr(v))),
  filesizeformat: (v, c) => str(filesizeformat(Number(isStr(v) ? parseFloat(v.value) : v.value), arg(c.args, c.kw, 0, "binary")?.__bool__().value ?? false)),
  batch: (v, c) => {
    const size = Number(arg(c.args, c.kw, 0, "linecount")?.value);
    if (!(size >= 1)) throw new Error("batch size must be a positive integer");
    const fill = nonNull(arg(c.args, c.kw, 1, "fill_with"));
    const items = iterate(v, "batch"), out: RValue[] = [];
    for (let i = 0; i < items.length; i += size) {
      const part = items.slice(i, i + size);
      while (fill && part.length < size) part.push(fill);
      out.push(new V.Array(part));
    }
    return new V.Array(out);
  },
  slice: (v, c) => {
    const n = Number(arg(c.args, c.kw, 0, "slices")?.value);
    if (!(n >= 1)) throw new Error("slice count must be a positive integer");
    if (n > renderLimits().items) throw new TemplateSizeError(`the template built a list of ${n} items, more than the ${renderLimits().items} this prompt may use`);
    const fill = nonNull(arg(c.args, c.kw, 1, "fill_with"));
    const seq = iterate(v, "slice"), per = Math.floor(seq.length / n), extra = seq.length % n, out: RValue[] = [];
    let offset = 0;
    for (let i = 0; i < n; i++) {
      const start = offset + i * per;
      if (i < extra) offset++;
      const part = seq.slice(start, offset + (i + 1) * per);
      if (fill && i >= extra) part.push(fill);
      out.push(new V.Array(part));
    }
    return new V.Array(out);
  },
  groupby: (v, c) => {
    const attr = pyStr(arg(c.args, c.kw, 0, "attribute") ?? str(""));
    const dflt = nonNull(arg(c.args, c.kw, 1, "default"));
    const cs = arg(c.args, c.kw, 2, "case_sensitive")?.__bool__().value ?? false;
    const keyOfItem = (x: RValue) => {
      const k = attribute(x, attr);
      return is(k, V.Undefined) && dflt ? dflt : k;
    };
    const sortKey = (x: RValue) => {
      const k = keyOfItem(x);
      return !cs && isStr(k) ? str(k.value.toLowerCase()) : k;
    };
    const sorted = iterate(v, "groupby").slice().sort((a, b) => order(sortKey(a), sortKey(b), "<"));
    const groups: RValue[][] = [];
    for (const x of sorted) {
      const last = groups.at(-1);
      if (last && pyEquals(sortKey(last[0]!), sortKey(x))) last.push(x);
      else groups.push([x]);
    }
    return new V.Array(groups.map((g) => {
      // a namedtuple: unpacks as (grouper, list), and has .grouper and .list
      const t = tuple([keyOfItem(g[0]!), new V.Array(g)]);
      const members = new Map(t.builtins);
      members.set("grouper", t.value[0]);
      members.set("list", t.value[1]);
      return Object.defineProperty(t, "builtins", { value: members });
    }));
  },
  reverse: (v) => (isStr(v) ? str([...(v.value as string)].reverse().join("")) : new V.Array(iterate(v, "reverse").slice().reverse())),
  random: (v) => {
    const items = iterate(v, "random");
    if (items.length === 0) throw new Error("Cannot choose from an empty sequence");
    return items[Math.floor(Math.random() * items.length)]!;
  },
  urlencode: (v) => {
    if (isStr(v) || !(isList(v) || isDict(v))) return str(urlQuote(pyStr(v), "/"));
    const pairs = isDict(v) ? (dictItems(v.value).value as RValue[]) : iterate(v, "urlencode");
    const q = (x: RValue) => urlQuote(pyStr(x), "").replace(/%20/g, "+");
    return str(pairs.map((p) => `${q(p.value[0])}=${q(p.value[1])}`).join("&"));
  },
  xmlattr: (v, c) => {
    const autospace = arg(c.args, c.kw, 0, "autospace")?.__bool__().value ?? true;
    const parts: string[] = [];
    for (const [k, x] of v.value as Map<unknown, RValue>) {
      if (is(x, V.Null) || is(x, V.Undefined)) continue;
      if (/[\s/>=]/.test(String(k))) throw new Error(`Invalid character in attribute name: ${pyRepr(keyValue(k))}`);
      parts.push(`${escapeHtml(String(k))}="${escapeHtml(pyStr(x))}"`);
    }
    const out = parts.join(" ");
    return markup(autospace && out ? " " + out : out);
  },
  pprint: (v) => str(pyRepr(v)),
  title: (v) => str(titleFilter(pyStr(v))),
  abs: (v) => {
    if (!numeric(v)) throw new Error(`bad operand type for abs(): '${pyType(v)}'`);
    return is(v, V.Float) ? new V.Float(Math.abs(v.value)) : new V.Integer(Math.abs(Number(v.value)));
  },
  forceescape: (v) => markup(escapeHtml(pyStr(v))),
  sort: (v, c) => {
    const reverse = arg(c.args, c.kw, 0, "reverse")?.__bool__().value ?? false;
    const cs = arg(c.args, c.kw, 1, "case_sensitive")?.__bool__().value ?? false;
    const attr = nonNull(arg(c.args, c.kw, 2, "attribute"));
    const key = (x: RValue) => {
      const k = attr ? attribute(x, pyStr(attr)) : x;
      return !cs && isStr(k) ? str(k.value.toLowerCase()) : k;
    };
    // Python's sort is stable, and reverse=True keeps equal items in their order
    return new V.Array(iterate(v, "sort").slice().sort((a, b) => order(key(a), key(b), "<") * (reverse ? -1 : 1)));
  },
  attr: (v, c) => {
    const name = pyStr(c.args[0] ?? str(""));
    if (isDict(v) && !is(v, NamespaceClass)) return DICT_METHODS.has(name) ? (v.builtins as Map<string, RValue>).get(name) ?? undef() : undef();
    return (v.builtins as Map<string, RValue> | undefined)?.get(name) ?? undef();
  },
  int: (v, c) => {
    const dflt = arg(c.args, c.kw, 0, "default") ?? new V.Integer(0);
    const base = Number(arg(c.args, c.kw, 1, "base")?.value ?? 10);
    const n = isStr(v) ? pyInt(v.value, base) ?? Math.trunc(pyFloatOf(v.value) ?? NaN) : isNum(v) || is(v, V.Boolean) ? Math.trunc(Number(v.value)) : NaN;
    return Number.isFinite(n) ? new V.Integer(n) : dflt;
  },
  float: (v, c) => {
    const x = isStr(v) ? pyFloatOf(v.value) : isNum(v) || is(v, V.Boolean) ? Number(v.value) : undefined;
    return x === undefined ? arg(c.args, c.kw, 0, "default") ?? new V.Float(0) : new V.Float(x);
  },
} satisfies Record<string, Filter>);
FILTERS.d = FILTERS.default!;
FILTERS.e = FILTERS.escape!;
FILTERS.count = FILTERS.length!;

// Filters Jinja2 applies to str(value): a number or list given to them is printed first.
const TEXT_FILTERS = new Set(["title", "replace", "indent", "center", "wordcount", "wordwrap", "striptags", "capitalize", "upper", "lower", "trim"]);
const engineFilter = proto.applyFilter;
proto.applyFilter = function (this: Interp, operand: RValue, node: Node, env: Environment) {
  const name: string = node.type === "Identifier" ? node.value : node.callee?.type === "Identifier" ? node.callee.value : "";
  if (TEXT_FILTERS.has(name) && !isStr(operand)) operand = str(pyStr(operand));
  const filter = Object.hasOwn(FILTERS, name) ? FILTERS[name] : undefined;
  if (!filter) return engineFilter.call(this, operand, node, env);
  const [args, kw] = node.type === "CallExpression" ? this.evaluateArguments(node.args, env) : [[], new Map()];
  return filter(operand, { self: this, env, args, kw });
};

// ----- operators -----

function concat(left: RValue, right: RValue): RValue {
  // Python's str + Markup escapes the plain side (markupsafe); Jinja2 templates use `"..."|safe + x` so.
  if (isMarkup(left) || isMarkup(right)) {
    const side = (v: RValue) => (isMarkup(v) ? v.value : escapeHtml(pyStr(v)));
    return markup(side(left) + side(right));
  }
  return str(pyStr(left) + pyStr(right));
}
/** Python's ordering for `<` and friends: numbers (bools among them), strings by code point, sequences item by item. */
function order(a: RValue, b: RValue, op: string): number {
  const num = (v: RValue) => isNum(v) || is(v, V.Boolean);
  if (num(a) && num(b)) return Number(a.value) - Number(b.value);
  if (isStr(a) && isStr(b)) return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
  if (isList(a) && isList(b)) {
    for (let i = 0; i < Math.min(a.value.length, b.value.length); i++) if (!pyEquals(a.value[i], b.value[i])) return order(a.value[i], b.value[i], op);
    return a.value.length - b.value.length;
  }
  throw new Error(`'${op}' not supported between instances of '${pyType(a)}' and '${pyType(b)}'`);
}
const numeric = (v: RValue): boolean => isNum(v) || is(v, V.Boolean);
/** Python's arithmetic where JavaScript's differs: a remainder takes the divisor's sign, nothing divides by zero, a bool is an int. */
function arithmetic(op: string, a: RValue, b: RValue): RValue {
  const x = Number(a.value), y = Number(b.value);
  if (y === 0 && (op === "/" || op === "//" || op === "%")) throw new Error(op === "/" ? "division by zero" : op === "//" ? "integer division or modulo by zero" : "integer modulo by zero");
  const float = is(a, V.Float) || is(b, V.Float);
  if (op === "-" || op === "+" || op === "*") {
    const r = op === "-" ? x - y : op === "+" ? x + y : x * y;
    return float ? new V.Float(r) : new V.Integer(r);
  }
  if (op === "/") return new V.Float(x / y);
  const r = op === "%" ? x - y * Math.floor(x / y) : Math.floor(x / y);
  return float ? new V.Float(r) : new V.Integer(r);
}
const OWN_OPERATORS = new Set(["~", "+", "-", "*", "==", "!=", "in", "not in", "%", "/", "//", "<", ">", "<=", ">="]);
const engineBinary = proto.evaluateBinaryExpression;
proto.evaluateBinaryExpression = function (this: Interp, node: Node, env: Environment) {
  const op: string = node.operator.value;
  if (!OWN_OPERATORS.has(op)) return engineBinary.call(this, node, env);
  const left: RValue = this.evaluate(node.left, env);
  const right: RValue = this.evaluate(node.right, env);
  switch (op) {
    case "~":
      return str(pyStr(left) + pyStr(right));
    case "==":
    case "!=":
      return new V.Boolean(pyEquals(left, right) === (op === "=="));
    case "+":
      if (isStr(left) || isStr(right)) {
        const other = isStr(left) ? right : left;
        // A string plus a list or dict raises in Python as well; plus none/undefined is llama.cpp's empty string.
        if (isList(other) || isDict(other)) throw new Error(`can only concatenate str (not "${pyType(other)}") to str`);
        return concat(isMissing(left) || is(left, V.Null) ? str("") : left, isMissing(right) || is(right, V.Null) ? str("") : right);
      }
      if ((is(left, V.Boolean) || is(right, V.Boolean)) && numeric(left) && numeric(right)) return arithmetic(op, left, right);
      break;
    case "*": {
      // Python repeats a string (or list) times an int: `"=" * 20`; the render's size budget bounds it
      const [seq, n] = isStr(left) || isList(left) ? [left, right] : [right, left];
      if ((is(left, V.Boolean) || is(right, V.Boolean)) && numeric(left) && numeric(right)) return arithmetic(op, left, right);
      if ((isStr(seq) || isList(seq)) && (is(n, V.Integer) || is(n, V.Boolean))) {
        const times = Math.max(0, Number(n.value));
        const size = times * seq.value.length;
        const limits = renderLimits();
        if (size > (isStr(seq) ? limits.chars : limits.items)) throw isStr(seq) ? tooLong(size) : new TemplateSizeError(`the template built a list of ${size} items, more than the ${limits.items} this prompt may use`);
        if (isStr(seq)) return str(seq.value.repeat(times));
        return new V.Array(Array.from({ length: times }, () => seq.value).flat());
      }
      break;
    }
    case "%":
      // printf-style formatting: "%s: %d" % (name, n)
      if (isStr(left)) return str(percentFormat(left.value, right));
      if (numeric(left) && numeric(right)) return arithmetic(op, left, right);
      break;
    case "/":
    case "//":
    case "-":
      if (numeric(left) && numeric(right)) return arithmetic(op, left, right);
      break;
    case "<":
    case ">":
    case "<=":
    case ">=": {
      const c = order(left, right, op);
      return new V.Boolean(op === "<" ? c < 0 : op === ">" ? c > 0 : op === "<=" ? c <= 0 : c >= 0);
    }
    case "in":
    case "not in":
      if (isDict(right)) return new V.Boolean(right.value.has(keyOf(left)) === (op === "in"));
      if (isList(right)) return new V.Boolean(right.value.some((x: RValue) => pyEquals(left, x)) === (op === "in"));
      break;
  }
  return engineBinary.call(this, { ...node, left: pre(left), right: pre(right) }, env);
};

// ----- member access, dict literals, loops -----

/** Python's dict methods: `d.items` is the method even where the dict has a key "items" (a tool
 *  parameter named items, keys or values), as Jinja2 looks up an attribute before a key. */
const DICT_METHODS = new Set(["clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values"]);

const engineMember = proto.evaluateMemberExpression;
proto.evaluateMemberExpression = function (this: Interp, node: Node, env: Environment) {
  if (!node.computed && node.property.type === "Identifier" && DICT_METHODS.has(node.property.value)) {
    const object: RValue = this.evaluate(node.object, env);
    const method = isDict(object) && !is(object, NamespaceClass) ? (object.builtins as Map<string, RValue>).get(node.property.value) : undefined;
    return method ?? engineMember.call(this, { ...node, object: pre(object) }, env);
  }
  if (!node.computed || node.property.type === "SliceExpression") return engineMember.call(this, node, env);
  const object: RValue = this.evaluate(node.object, env);
  const property: RValue = this.evaluate(node.property, env);
  // d[512] on a dict literal with int keys
  if (isDict(object) && !isStr(property)) return object.value.get(keyOf(property)) ?? undef();
  // the common lookups without a copied node (a template that looks back from every message
  // makes them in a quadratic loop): messages[i], m['role']
  if (isList(object) && is(property, V.Integer)) return object.value.at(property.value) ?? undef();
  if (isDict(object)) {
    const v: RValue | undefined = object.value.get(property.value);
    if (v !== undefined) return v;
  }
  return engineMember.call(this, { ...node, object: pre(object), property: pre(property) }, env);
};

// loop.cycle(...), loop.changed(...), loop.depth: what Jinja2's loop has and the engine's lacks.
// changed() compares with the same loop's last call, so each running loop keeps its own record.
interface RunningLoop {
  last?: RValue[];
  node?: Node;
  env?: Environment;
  depth: number;
}
const runningLoops: RunningLoop[] = [];
const LoopClass = (() => {
  let loop: RValue | undefined;
  const env = new Environment();
  env.setVariable("f", new V.Function((args: RValue[]) => ((loop = args[0]), new V.Null())) as never);
  new Interpreter(env).run(compileJinja("{% for i in [1] %}{{ f(loop) }}{% endfor %}").parsed as never);
  return loop!.constructor as { prototype: Record<string, unknown> };
})();
const engineEntries = LoopClass.prototype.createEntries as (this: RValue) => Map<string, RValue>;
LoopClass.prototype.createEntries = function (this: RValue & { iteration: number }) {
  const entries = engineEntries.call(this);
  const state: RunningLoop = runningLoops.at(-1) ?? { depth: 1 };
  const i = this.iteration;
  entries.set("cycle", fn((a) => {
    if (a.length === 0) throw new Error("no items for cycling given");
    return a[i % a.length]!;
  }));
  entries.set("changed", fn((a) => {
    const same = state.last !== undefined && state.last.length === a.length && a.every((x, k) => pyEquals(x, state.last![k]!));
    state.last = a;
    return new V.Boolean(!same);
  }));
  entries.set("depth", new V.Integer(state.depth));
  entries.set("depth0", new V.Integer(state.depth - 1));
  return entries;
};

// A macro's varargs is a tuple in Python.
const engineBind = proto.bindMacroArguments;
proto.bindMacroArguments = function (this: Interp, ...args: [unknown, unknown, Set<string>, unknown, Environment]) {
  const result = engineBind.apply(this, args);
  const scope = args[4];
  if (args[2].has("varargs")) {
    const v = scope.lookupVariable("varargs") as unknown as RValue;
    scope.setVariable("varargs", tuple(v.value) as never);
  }
  return result;
};

const engineFor = proto.renderFor;
proto.renderFor = function (this: Interp, node: Node, env: Environment, depth = 1) {
  runningLoops.push({ node, env, depth });
  try {
    return renderForPython.call(this, node, env);
  } finally {
    runningLoops.pop();
  }
};

// `{% for x in tree recursive %}…{{ loop(x.children) }}`: the call renders the same loop over the
// children, one level deeper, in the scope the loop started in.
const engineCall = proto.evaluateCallExpression;
proto.evaluateCallExpression = function (this: Interp, node: Node, env: Environment) {
  if (node.callee.type !== "Identifier" || node.callee.value !== "loop") return engineCall.call(this, node, env);
  const running = runningLoops.at(-1);
  const callee: RValue = this.evaluate(node.callee, env);
  if (!(callee instanceof (LoopClass as unknown as new () => RValue)) || !running?.node?.recursive) return engineCall.call(this, { ...node, callee: pre(callee) }, env);
  const [args] = this.evaluateArguments(node.args, env) as [RValue[], Kwargs];
  const items = args[0] ?? undef();
  return str(proto.renderFor.call(this, { ...running.node, iterable: pre(items) }, running.env!, running.depth + 1));
};
const renderForPython = function (this: Interp, node: Node, env: Environment) {
  const select = node.iterable.type === "SelectExpression";
  const expr = select ? node.iterable.lhs : node.iterable;
  let iterable: RValue = this.evaluate(expr, env);
  // Python iterates undefined as nothing and a string by characters.
  if (is(iterable, V.Undefined) || isStr(iterable)) iterable = new V.Array(iterate(iterable, "for"));
  // `for a, b in` unpacks each item as Python iterates it: a dict's keys, a string's characters
  if (node.loopvar.type === "TupleLiteral" && isList(iterable)) {
    iterable = new V.Array((iterable.value as RValue[]).map((item) => (isDict(item) || isStr(item) ? new V.Array(iterate(item, "for")) : item)));
  }
  const replaced = select ? { ...node.iterable, lhs: pre(iterable) } : pre(iterable);
  const body = { type: LOOP_BODY, body: node.body, broken: false, completed: false };
  const out: string = engineFor.call(this, { ...node, iterable: replaced, body: [body], defaultBlock: [] }, env);
  // Jinja2's `else` runs unless some iteration ran to its end (one that breaks or continues does not)
  return body.completed || !node.defaultBlock?.length ? out : out + this.renderBlock(node.defaultBlock, new Environment(env));
};

// {% break %} and {% continue %}: the engine drops what an iteration printed before them; Python keeps it.
// Each block a control passes through adds what it printed (renderBlock below), and the loop body
// returns it; after a break the engine's loop runs on over bodies that print nothing.
const LOOP_BODY = "OllamatsLoopBody";
const [BreakClass, ContinueClass] = (["Break", "Continue"] as const).map((type) => {
  try {
    proto.evaluate.call(Object.create(proto), { type }, new Environment());
  } catch (err) {
    return (err as Error).constructor;
  }
  throw new Error(`the Jinja engine no longer throws on ${type}`);
}) as [new () => Error, new () => Error];
const isControl = (err: unknown): err is Error & { partial?: string } => err instanceof BreakClass || err instanceof ContinueClass;
function renderLoopBody(this: Interp, node: Node, env: Environment): RValue {
  if (node.broken) return str("");
  try {
    const out = str(this.renderBlock(node.body, env));
    node.completed = true;
    return out;
  } catch (err) {
    if (!isControl(err)) throw err;
    if (err instanceof BreakClass) node.broken = true;
    return str(err.partial ?? "");
  }
}

/** `{% set a, b = … %}` binding: a name, or names unpacked from a sequence. */
function bind(target: Node, v: RValue, scope: Environment): void {
  if (target.type === "Identifier") scope.setVariable(target.value, v as never);
  else (target.value as Node[]).forEach((t, i) => scope.setVariable(t.value, (v.value[i] ?? undef()) as never));
}

// `{% set v %}…{% endset %}`: the body renders in a scope of its own, as in Jinja2 (its sets stay inside).
const engineSet = proto.executeSet;
proto.executeSet = function (this: Interp, node: Node, env: Environment) {
  if (node.value || !node.body) return engineSet.call(this, node, env);
  return engineSet.call(this, { ...node, value: pre(str(this.renderBlock(node.body, new Environment(env)))), body: undefined }, env);
};

const engineEvaluate = proto.evaluate;
proto.evaluate = function (this: Interp, node: Node, env: Environment) {
  if (node?.type === PRE) return node.value;
  if (node?.type === LOOP_BODY) return renderLoopBody.call(this, node, env);
  if (node?.type === SCOPED_BLOCK) {
    // {% with a = x %}: values from the outer scope, bound in an inner one that the block's own sets stay in.
    const values = node.sets.map((s: Node) => this.evaluate(s.value, env) as RValue);
    const scope = new Environment(env);
    node.sets.forEach((s: Node, i: number) => bind(s.assignee, values[i], scope));
    return str(this.renderBlock(node.body, scope));
  }
  if (node?.type === "ObjectLiteral") {
    // Python allows any hashable key; ByteDance Seed-OSS's template keys a dict by ints.
    const map = new Map<unknown, RValue>();
    for (const [k, v] of node.value as Map<Node, Node>) map.set(keyOf(this.evaluate(k, env)), this.evaluate(v, env));
    return new V.Object(map);
  }
  const result = engineEvaluate.call(this, node, env);
  if (node?.type === "TupleLiteral") result.type = "ArrayValue";
  return result;
};

// `{{ none }}` and `{{ items.append(x) }}` print "None" in Python; the engine printed nothing.
// Only expressions print: a statement (`{% macro %}`, `{% call %}`) that evaluates to null does not.
const PRINTED = new Set(["Identifier", "MemberExpression", "CallExpression", "FilterExpression", "TestExpression", "Ternary", "SelectExpression", "BinaryExpression", "UnaryExpression"]);
const engineBlock = proto.renderBlock;
proto.renderBlock = function (this: Interp, statements: Node[], env: Environment): string {
  let out = "";
  try {
    for (const s of statements) {
      if (PRINTED.has(s?.type)) {
        const v: RValue = this.evaluate(s, env);
        if (!is(v, V.Undefined)) out += is(v, V.Null) ? "None" : v.toString();
      } else out += engineBlock.call(this, [s], env);
    }
  } catch (err) {
    if (isControl(err)) err.partial = out + (err.partial ?? "");
    throw err;
  }
  return out;
};

// ----- globals: what transformers gives a template -----

/** Jinja2's cycler(*items): next() steps through them, current is the one next() gives. */
function cycler(items: RValue[]): RValue {
  const self = new V.Object(new Map());
  let i = 0;
  const set = () => self.value.set("current", items[i] ?? undef());
  self.value.set("next", fn(() => {
    const v = items[i] ?? undef();
    i = (i + 1) % Math.max(1, items.length);
    set();
    return v;
  }));
  self.value.set("reset", fn(() => ((i = 0), set(), new V.Null())));
  set();
  return self;
}

/** Renders a parsed template with Jinja2's and transformers' globals, then the context. */
export function renderWithGlobals(parsed: unknown, context: Record<string, unknown>): string {
  const env = new Environment();
  for (const [k, v] of [["true", true], ["false", false], ["none", null], ["True", true], ["False", false], ["None", null]] as const) env.set(k, v);
  env.setVariable("raise_exception", fn((a) => {
    throw new TemplateRaised(pyStr(a[0] ?? str("")));
  }) as never);
  env.setVariable("strftime_now", fn((a) => str(pyStrftime(new Date(), pyStr(a[0] ?? str(""))))) as never);
  env.setVariable("dict", fn((a) => {
    const [args, kw] = splitArgs(a);
    const from = args[0];
    const m = new Map<unknown, RValue>(!from || isMissing(from) ? [] : isDict(from) ? from.value : iterate(from, "dict").map((p) => {
      const pair = iterate(p, "dict");
      if (pair.length !== 2) throw new Error(`dictionary update sequence element has length ${pair.length}; 2 is required`);
      return [keyOf(pair[0]!), pair[1]!];
    }));
    for (const [k, v] of kw) m.set(k, v);
    return new V.Object(m);
  }) as never);
  env.set("range", boundedRange);
  env.setVariable(TUPLE_FN, fn((a) => tuple(a)) as never);
  env.setVariable("cycler", fn((a) => cycler(a)) as never);
  env.setVariable("joiner", fn((a) => {
    let used = false;
    const sep = pyStr(a[0] ?? str(", "));
    return fn(() => str(used ? sep : ((used = true), "")));
  }) as never);
  for (const [k, v] of Object.entries(context)) if (v !== undefined) env.set(k, v);
  return (new Interpreter(env).run(parsed as never) as unknown as RValue).value;
}
