// Python's operators on the engine's values: `~` and `+` of strings, repetition, printf-style `%`,
// Python's modulo and floor division, zero division, ordering of strings and sequences, `in`.
import { Environment } from "@huggingface/jinja";
import { escapeHtml, is, isDict, isList, isMarkup, isMissing, isStr, markup, pyEquals, pyStr, pyType, TupleClass, V, type RValue } from "./jinja-values.js";
import { type Node, type Interp, proto, str, tuple, pre, order, numeric, keyOf } from "./jinja-runtime.js";
import { percentFormat } from "./jinja-format.js";
import { renderLimits, TemplateSizeError, tooLong } from "./render-budget.js";

function concat(left: RValue, right: RValue): RValue {
  // Python's str + Markup escapes the plain side (markupsafe); Jinja2 templates use `"..."|safe + x` so.
  if (isMarkup(left) || isMarkup(right)) {
    const side = (v: RValue) => (isMarkup(v) ? v.value : escapeHtml(pyStr(v)));
    return markup(side(left) + side(right));
  }
  return str(pyStr(left) + pyStr(right));
}

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
  const [quotient, remainder] = divmod(x, y);
  return float ? new V.Float(op === "%" ? remainder : quotient) : new V.Integer(op === "%" ? remainder : quotient);
}
/** Python's divmod: the remainder from fmod, given the divisor's sign, and the quotient that goes
 *  with it (float_divmod: 100 // 0.1 is 999.0 and 100 % 0.1 is 0.0999…, not 1000 and 0). */
function divmod(x: number, y: number): [number, number] {
  let mod = x % y;
  let div = (x - mod) / y;
  if (mod !== 0) {
    if (y < 0 !== mod < 0) {
      mod += y;
      div -= 1;
    }
  } else mod = Math.sign(y) * 0;
  if (div === 0) return [Math.sign(x / y) * 0, mod];
  let floor = Math.floor(div);
  if (div - floor > 0.5) floor += 1;
  return [floor, mod];
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
        const items = Array.from({ length: times }, () => seq.value).flat();
        return is(seq, TupleClass) ? tuple(items) : new V.Array(items);
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
