// Python Jinja2 semantics for the Jinja engine (@huggingface/jinja), installed once at import the way
// jinja-bounds.ts installs its limits: by wrapping engine methods, never forking it. Chat templates
// are written for transformers' apply_chat_template (Python Jinja2), and a model was trained on what
// that prints, so where the engine differs (str() of a dict, True, dict literals with int keys, filters
// and str/list/dict methods it lacks, loops over undefined) Python's behaviour is what we want.
// Where Python itself raises and llama.cpp's engine renders (a string plus undefined, list.append
// under the immutable sandbox), the render follows llama.cpp: a real engine would not fail there.
import { Environment, Interpreter } from "@huggingface/jinja";
import {
  escapeHtml, is, isDict, isList, isMarkup, isMissing, isNum, isStr, keyValue, markup, NamespaceClass, pyEquals, pyJson, pyRepr, pyStr,
  rv, TupleClass, V, type RValue,
} from "./jinja-values.js";
import { boundedRange } from "./jinja-bounds.js";
import { renderLimits, TemplateSizeError, tooLong } from "./render-budget.js";
import { pyStrftime } from "./strftime.js";

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

const strip = (s: string, chars: RValue | undefined, side: "both" | "left" | "right"): string => {
  if (isMissing(chars) || is(chars, V.Null)) return side === "both" ? s.trim() : side === "left" ? s.trimStart() : s.trimEnd();
  const set = new Set([...(chars!.value as string)]);
  const cs = [...s];
  let a = 0, b = cs.length;
  if (side !== "right") while (a < b && set.has(cs[a]!)) a++;
  if (side !== "left") while (b > a && set.has(cs[b - 1]!)) b--;
  return cs.slice(a, b).join("");
};

/** str.format: {} / {0} / {name}, with !r / !s and {{ }} escapes; a format spec is refused rather than guessed. */
function pyFormat(template: string, args: RValue[], kw: Kwargs): string {
  let auto = 0;
  return template.replace(/\{\{|\}\}|\{([^{}!:]*)(?:!([rsa]))?(?::([^{}]*))?\}/g, (m, field: string | undefined, conv?: string, spec?: string) => {
    if (m === "{{") return "{";
    if (m === "}}") return "}";
    if (spec) throw new Error(`str.format() format specs are not supported: ${m}`);
    const v = field === "" || field === undefined ? args[auto++] : /^\d+$/.test(field) ? args[Number(field)] : kw.get(field);
    if (v === undefined) throw new Error(`str.format(): no value for ${m}`);
    return conv === "r" || conv === "a" ? pyRepr(v) : pyStr(v);
  });
}

// ----- methods: what `value.name(...)` finds -----

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
    islower: fn(() => new V.Boolean(s !== s.toUpperCase() && s === s.toLowerCase())),
    isupper: fn(() => new V.Boolean(s !== s.toLowerCase() && s === s.toUpperCase())),
    splitlines: fn(() => new V.Array(s.split(/\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/).filter((x, i, all) => i < all.length - 1 || x !== "").map(str))),
    removeprefix: fn((a) => str(s.startsWith(pyStr(a[0])) ? s.slice(pyStr(a[0]).length) : s)),
    removesuffix: fn((a) => str(pyStr(a[0]) && s.endsWith(pyStr(a[0])) ? s.slice(0, -pyStr(a[0]).length) : s)),
    rsplit: fn((a) => {
      const [args, kw] = splitArgs(a);
      const sep = arg(args, kw, 0, "sep"), max = arg(args, kw, 1, "maxsplit")?.value ?? -1;
      const parts = isMissing(sep) || is(sep, V.Null) ? s.trim().split(/\s+/).filter(Boolean) : s.split(sep!.value);
      if (max < 0 || parts.length <= max + 1) return new V.Array(parts.map(str));
      const joiner = isMissing(sep) || is(sep, V.Null) ? " " : sep!.value;
      return new V.Array([parts.slice(0, parts.length - max).join(joiner), ...parts.slice(parts.length - max)].map(str));
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
    items: fn(() => dictItems(m)),
    keys: fn(() => new V.Array([...m.keys()].map(keyValue))),
    values: fn(() => new V.Array([...m.values()])),
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
for (const [name, op] of [["eq", "=="], ["equalto", "=="], ["ne", "!="], ["lt", "<"], ["le", "<="], ["gt", ">"], ["ge", ">="], ["in", "in"]] as const) {
  tests.set(name, (a, b) => {
    if (op === "==" || op === "!=") return pyEquals(a, b) === (op === "==");
    if (op === "in") return isStr(b) ? b.value.includes(pyStr(a)) : isDict(b) ? b.value.has(keyOf(a)) : iterate(b, "in").some((x) => pyEquals(a, x));
    const c = compare(a, b, true);
    return op === "<" ? c < 0 : op === "<=" ? c <= 0 : op === ">" ? c > 0 : c >= 0;
  });
}

// ----- filters -----

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
  last: (v) => (isDict(v) ? undef() : iterate(v, "last").at(-1) ?? undef()),
  min: (v, c) => aggregate(v, c, -1),
  max: (v, c) => aggregate(v, c, 1),
  sum: (v, c) => {
    const attr = arg(c.args, c.kw, 0, "attribute");
    const start = arg(c.args, c.kw, 1, "start") ?? new V.Integer(0);
    return iterate(v, "sum").reduce((acc: RValue, x) => {
      const y = attr ? attribute(x, pyStr(attr)) : x;
      return rv((acc.value as number) + (y.value as number));
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
    const f = 10 ** precision;
    const x = (v.value as number) * f;
    const r = method === "ceil" ? Math.ceil(x) : method === "floor" ? Math.floor(x) : Math.sign(x) * Math.round(Math.abs(x));
    return new V.Float(r / f);
  },
};
FILTERS.d = FILTERS.default!;
FILTERS.e = FILTERS.escape!;
FILTERS.count = FILTERS.length!;

const engineFilter = proto.applyFilter;
proto.applyFilter = function (this: Interp, operand: RValue, node: Node, env: Environment) {
  const name: string = node.type === "Identifier" ? node.value : node.callee?.type === "Identifier" ? node.callee.value : "";
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
const OWN_OPERATORS = new Set(["~", "+", "*", "==", "!=", "in", "not in"]);
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
      break;
    case "*": {
      // Python repeats a string (or list) times an int: `"=" * 20`; the render's size budget bounds it
      const [seq, n] = isStr(left) || isList(left) ? [left, right] : [right, left];
      if ((isStr(seq) || isList(seq)) && is(n, V.Integer)) {
        const times = Math.max(0, n.value as number);
        const size = times * seq.value.length;
        const limits = renderLimits();
        if (size > (isStr(seq) ? limits.chars : limits.items)) throw isStr(seq) ? tooLong(size) : new TemplateSizeError(`the template built a list of ${size} items, more than the ${limits.items} this prompt may use`);
        if (isStr(seq)) return str(seq.value.repeat(times));
        return new V.Array(Array.from({ length: times }, () => seq.value).flat());
      }
      break;
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

const engineFor = proto.renderFor;
proto.renderFor = function (this: Interp, node: Node, env: Environment) {
  const select = node.iterable.type === "SelectExpression";
  const expr = select ? node.iterable.lhs : node.iterable;
  let iterable: RValue = this.evaluate(expr, env);
  // Python iterates undefined as nothing and a string by characters.
  if (is(iterable, V.Undefined) || isStr(iterable)) iterable = new V.Array(iterate(iterable, "for"));
  const replaced = select ? { ...node.iterable, lhs: pre(iterable) } : pre(iterable);
  return engineFor.call(this, { ...node, iterable: replaced }, env);
};

const engineEvaluate = proto.evaluate;
proto.evaluate = function (this: Interp, node: Node, env: Environment) {
  if (node?.type === PRE) return node.value;
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
  for (const s of statements) {
    if (PRINTED.has(s?.type)) {
      const v: RValue = this.evaluate(s, env);
      if (!is(v, V.Undefined)) out += is(v, V.Null) ? "None" : v.toString();
    } else out += engineBlock.call(this, [s], env);
  }
  return out;
};

// ----- globals: what transformers gives a template -----

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
    const m = new Map<unknown, RValue>(args[0] && isDict(args[0]) ? args[0].value : []);
    for (const [k, v] of kw) m.set(k, v);
    return new V.Object(m);
  }) as never);
  env.set("range", boundedRange);
  for (const [k, v] of Object.entries(context)) if (v !== undefined) env.set(k, v);
  return (new Interpreter(env).run(parsed as never) as unknown as RValue).value;
}
