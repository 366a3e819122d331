// Jinja2's builtin filters (`value | name(args)`) as Python's Jinja2 applies them, in place of the
// engine's where they differ and beside them where it has none.
import { Environment } from "@huggingface/jinja";
import {
  escapeHtml, is, isDict, isList, isMarkup, isMissing, isNum, isStr, keyValue, markup, NamespaceClass, pyEquals, pyJson, pyRepr, pyStr, pyType, V, type RValue,
} from "./jinja-values.js";
import {
  type Node, type Interp, type Kwargs, proto, undef, str, tuple, pre, arg, iterate, attribute, compare, order, numeric, dictItems, nonNull,
} from "./jinja-runtime.js";
import { DICT_METHODS, strip } from "./jinja-methods.js";
import { percentFormat, pyRound } from "./jinja-format.js";
import { center, filesizeformat, striptags, titleFilter, truncate, urlQuote, wordwrap } from "./jinja-text.js";
import { renderLimits, TemplateSizeError } from "./render-budget.js";

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
    // Jinja2's map yields nothing for a falsy value (none, undefined, empty), as select does
    if (!v.__bool__().value) return new V.Array([]);
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
      t.builtins.set("grouper", t.value[0]);
      t.builtins.set("list", t.value[1]);
      return t;
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
    // a plain string: transformers renders without autoescape, where Jinja2 marks nothing safe
    return str(autospace && out ? " " + out : out);
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
  const result = filter(operand, { self: this, env, args, kw });
  // markupsafe's str methods give Markup back: upper, lower, capitalize, strip, center of a safe string stay safe
  return isMarkup(operand) && MARKUP_KEEPING.has(name) && isStr(result) ? markup(result.value) : result;
};
const MARKUP_KEEPING = new Set(["upper", "lower", "capitalize", "trim", "center"]);
