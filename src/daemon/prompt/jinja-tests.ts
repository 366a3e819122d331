// Jinja2's tests (`value is name`, `value is divisibleby 3`) as Python evaluates them.
import { Environment } from "@huggingface/jinja";
import { is, isDict, KwargsClass, isList, isMarkup, isNum, isStr, pyEquals, pyStr, pyType, V, type RValue } from "./jinja-values.js";
import { type Node, type Interp, type Kwargs, proto, str, iterate, compare, numeric, keyOf } from "./jinja-runtime.js";
import { pyCase } from "./jinja-methods.js";
import { percentFormat } from "./jinja-format.js";

const tests = (Environment as unknown as { TESTS: Map<string, (...v: RValue[]) => boolean> }).TESTS;
tests.set("iterable", (v) => isList(v) || isStr(v) || isDict(v) || is(v, V.Undefined));
tests.set("float", (v) => is(v, V.Float));
// len() and [] work on it: a list, a string, a dict, and Jinja2's Undefined (its len is 0)
tests.set("sequence", (v) => isList(v) || isStr(v) || isDict(v) || is(v, V.Undefined));
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
  // Python's `value % num == 0`: a string is formatted with num, which never equals 0
  if (isStr(a) && b) return (percentFormat(a.value, b), false);
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

const JINJA2_FILTERS = new Set(("abs attr batch capitalize center count d default dictsort e escape filesizeformat first float forceescape format groupby indent int " +
  "items join last length list lower map max min pprint random reject rejectattr replace reverse round safe select selectattr slice sort string striptags " +
  "sum title tojson trim truncate unique upper urlencode urlize wordcount wordwrap xmlattr").split(" "));
