// Python's str, list and dict methods on the engine's values (`s.split(",")`, `l.append(x)`,
// `d.items()`): what `value.name(...)` finds, Python's where the engine has its own.
import { dictView, is, isDict, isList, isMissing, keyValue, pyEquals, pyRepr, pyStr, pyType, V, type RValue } from "./jinja-values.js";
import { type Kwargs, fn, undef, str, tuple, splitArgs, arg, iterate, attribute, dictItems, keyOf } from "./jinja-runtime.js";
import { formatSpec } from "./jinja-format.js";
import { center, expandTabs, isTitle, splitLines, title } from "./jinja-text.js";

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
export const strip = (s: string, chars: RValue | undefined, side: "both" | "left" | "right"): string => {
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
/** Methods by name, each made for one value only when a template asks for it (a string's whole table
 *  of closures, made on every `text.strip()`, was a tenth of a render). */
type Methods<T> = Record<string, (self: T) => RValue>;
const test = (s: string, re: RegExp) => fn(() => new V.Boolean(s.length > 0 && re.test(s)));
const stringMethods: Methods<string> = {
  strip: (s) => fn((a) => str(strip(s, a[0], "both"))),
  lstrip: (s) => fn((a) => str(strip(s, a[0], "left"))),
  rstrip: (s) => fn((a) => str(strip(s, a[0], "right"))),
  capitalize: (s) => fn(() => str(s.charAt(0).toUpperCase() + s.slice(1).toLowerCase())),
  format: (s) => fn((a) => str(pyFormat(s, ...splitArgs(a)))),
  join: (s) => fn((a) => str(iterate(a[0] ?? undef(), "join").map(pyStr).join(s))),
  find: (s) => fn((a) => new V.Integer(s.indexOf(pyStr(a[0])))),
  rfind: (s) => fn((a) => new V.Integer(s.lastIndexOf(pyStr(a[0])))),
  count: (s) => fn((a) => new V.Integer(pyStr(a[0]) === "" ? [...s].length + 1 : s.split(pyStr(a[0])).length - 1)),
  isdigit: (s) => test(s, /^\p{Nd}+$/u),
  isnumeric: (s) => test(s, /^\p{N}+$/u),
  isalpha: (s) => test(s, /^\p{L}+$/u),
  isalnum: (s) => test(s, /^[\p{L}\p{N}]+$/u),
  isspace: (s) => test(s, /^\s+$/),
  islower: (s) => fn(() => new V.Boolean(pyCase(s, "lower"))),
  isupper: (s) => fn(() => new V.Boolean(pyCase(s, "upper"))),
  splitlines: (s) => fn(() => new V.Array(splitLines(s).map(str))),
  removeprefix: (s) => fn((a) => str(s.startsWith(pyStr(a[0])) ? s.slice(pyStr(a[0]).length) : s)),
  removesuffix: (s) => fn((a) => str(pyStr(a[0]) && s.endsWith(pyStr(a[0])) ? s.slice(0, -pyStr(a[0]).length) : s)),
  split: (s) => fn((a) => splitMethod(s, a, false)),
  rsplit: (s) => fn((a) => splitMethod(s, a, true)),
  startswith: (s) => fn((a) => affix(s, a, (t, x) => t.startsWith(x))),
  endswith: (s) => fn((a) => affix(s, a, (t, x) => t.endsWith(x))),
  index: (s) => fn((a) => found(s.indexOf(pyStr(a[0])))),
  rindex: (s) => fn((a) => found(s.lastIndexOf(pyStr(a[0])))),
  zfill: (s) => fn((a) => {
    const width = Number(a[0]?.value ?? 0), sign = /^[+-]/.test(s) ? s[0]! : "";
    return str(sign + s.slice(sign.length).padStart(width - sign.length, "0"));
  }),
  ljust: (s) => fn((a) => str(s + pyStr(a[1] ?? str(" ")).repeat(Math.max(0, Number(a[0]?.value ?? 0) - [...s].length)))),
  rjust: (s) => fn((a) => str(pyStr(a[1] ?? str(" ")).repeat(Math.max(0, Number(a[0]?.value ?? 0) - [...s].length)) + s)),
  center: (s) => fn((a) => str(center(s, Number(a[0]?.value ?? 0), pyStr(a[1] ?? str(" "))))),
  casefold: (s) => fn(() => str(s.toUpperCase().toLowerCase())), // ß → SS → ss, as Python folds it
  swapcase: (s) => fn(() => str([...s].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join(""))),
  title: (s) => fn(() => str(title(s))),
  istitle: (s) => fn(() => new V.Boolean(isTitle(s))),
  isdecimal: (s) => test(s, /^\p{Nd}+$/u),
  expandtabs: (s) => fn((a) => str(expandTabs(s, Number(a[0]?.value ?? 8)))),
  rpartition: (s) => fn((a) => {
    const i = s.lastIndexOf(pyStr(a[0]));
    return tuple(i < 0 ? [str(""), str(""), str(s)] : [str(s.slice(0, i)), str(pyStr(a[0])), str(s.slice(i + pyStr(a[0]).length))]);
  }),
  partition: (s) => fn((a) => {
    const i = s.indexOf(pyStr(a[0]));
    return tuple(i < 0 ? [str(s), str(""), str("")] : [str(s.slice(0, i)), str(pyStr(a[0])), str(s.slice(i + pyStr(a[0]).length))]);
  }),
};

const indexIn = (items: RValue[], x: RValue) => items.findIndex((y) => pyEquals(x, y));
const listMethods: Methods<RValue[]> = {
  // Mutation: Python's immutable sandbox refuses it, llama.cpp's engine does it (Kimi K2's templates queue ids so).
  append: (items) => fn((a) => (items.push(a[0]), new V.Null())),
  extend: (items) => fn((a) => (items.push(...iterate(a[0], "extend")), new V.Null())),
  insert: (items) => fn((a) => (items.splice(a[0].value < 0 ? Math.max(0, items.length + a[0].value) : a[0].value, 0, a[1]), new V.Null())),
  pop: (items) => fn((a) => {
    if (items.length === 0) throw new Error("pop from empty list");
    const i = a[0] === undefined ? items.length - 1 : a[0].value < 0 ? items.length + a[0].value : a[0].value;
    if (i < 0 || i >= items.length) throw new Error("pop index out of range");
    return items.splice(i, 1)[0]!;
  }),
  remove: (items) => fn((a) => {
    const i = indexIn(items, a[0]);
    if (i < 0) throw new Error("list.remove(x): x not in list");
    items.splice(i, 1);
    return new V.Null();
  }),
  index: (items) => fn((a) => {
    const i = indexIn(items, a[0]);
    if (i < 0) throw new Error(`${pyRepr(a[0])} is not in list`);
    return new V.Integer(i);
  }),
  count: (items) => fn((a) => new V.Integer(items.filter((y) => pyEquals(a[0], y)).length)),
  copy: (items) => fn(() => new V.Array(items.slice())),
};

const dictMethods: Methods<Map<unknown, RValue>> = {
  get: (m) => fn((a) => m.get(keyOf(a[0])) ?? a[1] ?? new V.Null()),
  items: (m) => fn(() => dictView("dict_items", dictItems(m))),
  keys: (m) => fn(() => dictView("dict_keys", new V.Array([...m.keys()].map(keyValue)))),
  values: (m) => fn(() => dictView("dict_values", new V.Array([...m.values()]))),
  pop: (m) => fn((a) => {
    const k = keyOf(a[0]);
    const v = m.get(k) ?? a[1];
    if (v === undefined) throw new Error(`KeyError: ${pyRepr(a[0])}`);
    m.delete(k);
    return v;
  }),
  setdefault: (m) => fn((a) => {
    const k = keyOf(a[0]);
    if (!m.has(k)) m.set(k, a[1] ?? new V.Null());
    return m.get(k)!;
  }),
  update: (m) => fn((a) => {
    const [args, kw] = splitArgs(a);
    if (args[0] && isDict(args[0])) for (const [k, v] of args[0].value as Map<unknown, RValue>) m.set(k, v);
    for (const [k, v] of kw) m.set(k, v);
    return new V.Null();
  }),
  copy: (m) => fn(() => new V.Object(new Map(m))),
};

/** A value's `builtins` (the engine's lookup for `value.name`): ours by name, made on first use,
 *  then the engine's own, its table made only when a name is not ours. */
class Builtins<T> extends Map<string, RValue> {
  private engine?: Map<string, RValue>;
  constructor(private readonly self: RValue, private readonly ours: Methods<T>, private readonly engineTable: () => Map<string, RValue>) {
    super();
  }
  override get(name: string): RValue | undefined {
    const made = super.get(name);
    if (made !== undefined) return made;
    const make = Object.hasOwn(this.ours, name) ? this.ours[name] : undefined;
    const v = make ? make(this.self.value as T) : (this.engine ??= this.engineTable()).get(name);
    if (v !== undefined) super.set(name, v);
    return v;
  }
  override has(name: string): boolean {
    return this.get(name) !== undefined;
  }
}
function addMethods<T>(cls: { prototype: object }, ours: Methods<T>): void {
  const own = Object.getOwnPropertyDescriptor(cls.prototype, "builtins")!;
  const tables = new WeakMap<object, Builtins<T>>();
  Object.defineProperty(cls.prototype, "builtins", {
    configurable: true,
    get(this: RValue) {
      let table = tables.get(this);
      if (!table) tables.set(this, (table = new Builtins(this, ours, () => own.get!.call(this))));
      return table;
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

export function pyCase(s: string, want: "lower" | "upper"): boolean {
  const hasLower = s !== s.toUpperCase(), hasUpper = s !== s.toLowerCase();
  return want === "lower" ? hasLower && !hasUpper : hasUpper && !hasLower;
}

/** Python's dict methods: `d.items` is the method even where the dict has a key "items" (a tool
 *  parameter named items, keys or values), as Jinja2 looks up an attribute before a key. */
export const DICT_METHODS = new Set(["clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem", "setdefault", "update", "values"]);
