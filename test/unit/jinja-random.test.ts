// Random Jinja expressions and statement nests (seeded), rendered by the daemon and by Python's Jinja2
// (test/helpers/jinja2_render.py): wherever Python renders, the text must be the same. Where Python
// raises, or prints an object's address (a generator), the daemon may do otherwise. Found: break and
// continue dropping what an iteration printed, for-else after continued iterations, `{% set %}` blocks
// leaking their sets, a loop's sets carried from one iteration to the next, title/odd/upper/abs on
// the wrong types.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { jinjaContext, renderPrompt, selectTemplate } from "../../src/daemon/prompt/render.js";

// JINJA_RANDOM_SEED explores other seeds; the committed one is fixed
let seed = Number(process.env.JINJA_RANDOM_SEED ?? 20261204);
// mulberry32: a linear congruential generator's low bits cycled within a few draws on some seeds
const rnd = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T,>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
const int = (n: number) => Math.floor(rnd() * n);

// ----- expressions -----
const STRS = ["'a'", "'Hello'", "''", "'a b'", "'é'", "'%s'", "'{}'", "'x,y'", "' pad '", "'A1'", "'-'", "'\\n'", "'o-k (x)'"];
// negative literals in parentheses: Jinja2 compiles `-2.5 ** x` to Python's -(2.5 ** x) unless it can fold it
const NUMS = ["0", "1", "(-1)", "2", "3", "7", "1.5", "0.5", "(-2.5)", "10", "100", "2.0", "0.1", "1e3"];
const FILTERS = ["length", "upper", "lower", "title", "capitalize", "trim", "first", "last", "list", "string", "int", "float", "abs", "round", "round(1)", "sort",
  "unique | list", "join", "join(',')", "tojson", "default('d')", "default('d', true)", "dictsort", "sum", "min", "max", "wordcount", "center(9)", "truncate(5, leeway=0)",
  "indent(2)", "replace('a', 'b')", "map('string') | list", "select | list", "reject | list", "selectattr('a') | list", "map(attribute='a') | list", "batch(2) | list",
  "slice(2) | list", "escape", "safe", "count", "format('z')", "striptags", "urlencode", "pprint", "filesizeformat", "groupby('a') | list", "xmlattr", "items | list", "reverse | list"];
const TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "sequence", "iterable", "boolean", "true", "false", "odd", "even",
  "lower", "upper", "divisibleby 2", "eq 1", "in [1, 'a']", "sameas none", "gt 1", "callable", "escaped"];
const METHODS = ["upper()", "lower()", "strip()", "split()", "split(',')", "startswith('H')", "endswith('o')", "replace('o', '0')", "title()", "find('o')", "count('o')",
  "isdigit()", "format(1)", "join(['a', 'b'])", "get('a')", "get('z', 0)", "index(1)", "rstrip('o')", "lstrip('H')", "zfill(5)", "center(9, '*')", "partition(' ')",
  "splitlines()", "capitalize()", "rsplit(' ', 1)"];
// no `**`: Jinja2 compiles `(-2.5) ** x` to Python's -2.5 ** x, which is -(2.5 ** x) (snippets cover `**`)
const BIN = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"];
function literal(d: number): string {
  switch (int(d > 2 ? 4 : 7)) {
    case 0: return pick(STRS);
    case 1: return pick(NUMS);
    case 2: return pick(["true", "false", "none", "True", "None"]);
    case 3: return pick(["x", "s", "n", "f", "l", "e", "t", "x.a", "x.b", "x['c']", "l[0]", "s[1:4]", "l[-1]", "x.b[1]", "messages[0].role"]);
    case 4: return `[${Array.from({ length: int(4) }, () => expr(d + 1)).join(", ")}]`;
    case 5: return `{${Array.from({ length: int(3) }, () => `${pick(STRS)}: ${expr(d + 1)}`).join(", ")}}`;
    default: return `(${expr(d + 1)}, ${expr(d + 1)})`;
  }
}
function expr(d = 0): string {
  if (d > 3) return literal(9);
  switch (int(7)) {
    case 0: case 1: return literal(d);
    case 2: return `(${expr(d + 1)} ${pick(BIN)} ${expr(d + 1)})`;
    case 3: return `(${expr(d + 1)} | ${pick(FILTERS)})`;
    case 4: return `(${expr(d + 1)} is ${rnd() < 0.3 ? "not " : ""}${pick(TESTS)})`;
    case 5: return `${pick(["s", "x", "l", "'a,b'", "' x '", "n"])}.${pick(METHODS)}`;
    default: return rnd() < 0.5 ? `(${expr(d + 1)} if ${expr(d + 1)} else ${expr(d + 1)})` : `(not ${expr(d + 1)})`;
  }
}
const EXPR_SETS = "{% set x = {'a': 1, 'b': [1, 2], 'c': 'Zed'} %}{% set s = 'Hello World foo' %}{% set n = 7 %}{% set f = 3.5 %}{% set l = [3, 1, 2] %}{% set e = '' %}{% set t = (1, 'a') %}";

// ----- statements -----
const VARS = ["a", "b", "i", "j", "ns.c", "loop.index", "loop.first", "loop.last", "loop.length", "loop.revindex", "loop.previtem", "v", "loop.cycle('o', 'e')"];
const value = () => pick(["1", "i", "a ~ 'x'", "'s'", "loop.index0", "ns.c + 1", "(a | length) if a is string else 0", "b", "j * 2", "[1, 2]"]);
const FILTER_CONDITIONS = ["i > 1", "a", "i is odd", "b is defined", "ns.c > 2", "j == 1", "true", "false", "i in [1, 3]"];
// a loop's own `loop` exists only in its body, not in its `if` filter
const filterCondition = () => pick(FILTER_CONDITIONS);
const condition = () => pick([...FILTER_CONDITIONS, "loop.first", "not loop.last", "loop.changed(i)"]);
const sequence = () => pick(["[1, 2, 3]", "range(4)", "[]", "'ab'", "x", "x.items()", "[3, 1, 2] | sort", "messages", "[1, 2, 3, 4] if i is defined else [5]"]);
const block = (d: number): string => Array.from({ length: 1 + int(3) }, () => statement(d)).join(pick(["", " ", "\n", "|"]));
function statement(d: number): string {
  switch (int(d > 2 ? 3 : 10)) {
    case 0: return `{{ ${pick(VARS)} }}`;
    case 1: return pick(["x", "-", "\n"]);
    case 2: {
      const target = pick(["a", "b", "ns.c"]);
      // read, then set: a later iteration must see the value the loop began with (Jinja2's scoping)
      return `${rnd() < 0.5 ? `{{ ${target} }}` : ""}{% set ${target} = ${value()} %}`;
    }
    case 3: case 4: return `{% for ${pick(["i", "j", "i, j"])} in ${sequence()}${rnd() < 0.2 ? " if " + filterCondition() : ""} %}${block(d + 1)}${rnd() < 0.2 ? "{% else %}E" : ""}{% endfor %}`;
    case 5: case 6: return `{% if ${condition()} %}${block(d + 1)}${rnd() < 0.4 ? `{% elif ${condition()} %}${block(d + 1)}` : ""}${rnd() < 0.4 ? `{% else %}${block(d + 1)}` : ""}{% endif %}`;
    case 7: return pick(["{% break %}", "{% continue %}"]);
    case 8: return `{% set v %}${block(d + 1)}{% endset %}{{ v | length }}`;
    default: return `{% with a = ${value()} %}${block(d + 1)}{% endwith %}`;
  }
}
const STATEMENT_SETS = "{% set ns = namespace(c=0) %}{% set a = 'q' %}{% set x = {'k': 1, 'm': 2} %}";

// ----- number formatting -----
function number(): string {
  switch (int(6)) {
    case 0: return String(int(2000) - 1000);
    case 1: return pick(["0.125", "2.5", "0.5", "1.5", "-2.5", "2.675", "1.005", "0.045", "1e16", "1e-7", "123456.789", "-0.0", "1e21", "9.995", "0.0005", "99999.95"]);
    case 2: return (rnd() * 10 ** (int(12) - 4) * (rnd() < 0.3 ? -1 : 1)).toPrecision(1 + int(17));
    case 3: return `${int(1000)}.${int(1000)}`;
    case 4: return pick(["true", "false", "2**40", "-7"]);
    default: return (int(1 << 20) / 2 ** int(12)).toString();
  }
}
function numberFormat(): string {
  const flags = Array.from({ length: int(3) }, () => pick(["-", "+", " ", "0", "#"])).join("");
  const width = rnd() < 0.5 ? String(int(14)) : "";
  const precision = rnd() < 0.6 ? `.${int(12)}` : "";
  if (rnd() < 0.5) return `'%${flags}${width}${precision}${pick(["d", "i", "f", "F", "e", "E", "g", "G", "x", "X", "o", "s", "r"])}' % ${number()}`;
  const align = rnd() < 0.4 ? `${pick(["", "*", "0", "_"])}${pick(["<", ">", "^", "="])}` : "";
  const spec = `${align}${pick(["", "+", "-", " "])}${rnd() < 0.2 ? "#" : ""}${rnd() < 0.2 ? "0" : ""}${width}${pick(["", "", ",", "_"])}${precision}${pick(["", "d", "f", "F", "e", "E", "g", "G", "%", "x", "b", "n"])}`;
  return `'{:${spec}}'.format(${number()})`;
}

const input = { messages: [{ role: "user" as const, content: "hi" }] };
function compare(templates: string[]): { rendered: number; differ: string[] } {
  const base = selectTemplate(undefined, "{{ 1 }}", "", "");
  const context = base.kind === "jinja" ? jinjaContext(base, input) : {};
  const helper = path.resolve(__dirname, "../helpers/jinja2_render.py");
  const out = spawnSync("python3", [helper], { input: JSON.stringify({ now_ms: Date.now(), jobs: templates.map((template) => ({ template, context })) }), encoding: "utf8", maxBuffer: 1 << 28 });
  if (out.status !== 0) throw new Error(`python3 ${helper} failed: ${out.stderr}`);
  const python = JSON.parse(out.stdout) as Array<{ ok?: string }>;
  const differ: string[] = [];
  let rendered = 0;
  templates.forEach((t, i) => {
    const want = python[i]!.ok;
    if (want === undefined || /object at 0x|<generator/.test(want)) return;
    rendered++;
    let got: string;
    try {
      got = renderPrompt(selectTemplate(undefined, t, "", ""), input);
    } catch (err) {
      got = `error: ${(err as Error).message}`;
    }
    if (got !== want) differ.push(`${t}\n  ours:   ${JSON.stringify(got)}\n  python: ${JSON.stringify(want)}`);
  });
  return { rendered, differ };
}

describe("random Jinja renders as Python renders it", () => {
  it("expressions: operators, filters, tests, methods, literals of every kind", () => {
    const { rendered, differ } = compare(Array.from({ length: 1200 }, () => `${EXPR_SETS}{{ ${expr()} }}`));
    expect(differ.slice(0, 5), differ.slice(0, 5).join("\n")).toEqual([]);
    expect(rendered).toBeGreaterThan(500);
  });
  it("number formatting: printf-style % and str.format specs over ties, magnitudes, signs and every type", () => {
    const { rendered, differ } = compare(Array.from({ length: 2000 }, () => `{{ ${numberFormat()} }}|{{ ${number()} | round(${int(6)}) }}`));
    expect(differ.slice(0, 5), differ.slice(0, 5).join("\n")).toEqual([]);
    expect(rendered).toBeGreaterThan(800);
  });
  it("statements: loops with break, continue, else and filters, ifs, sets, set blocks, with blocks", () => {
    const { rendered, differ } = compare(Array.from({ length: 2000 }, () => `${STATEMENT_SETS}${block(0)}|{{ a }}{{ b }}{{ ns.c }}{{ i }}`));
    expect(differ.slice(0, 5), differ.slice(0, 5).join("\n")).toEqual([]);
    expect(rendered).toBeGreaterThan(250);
  });
});
