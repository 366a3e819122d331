// Python's number and string formatting for chat templates: `"%5.2f" % x` (printf style), the format
// spec of `"{:>8.3f}".format(x)`, and round(). Digits come from the double's exact decimal value and
// ties go to even, as CPython's dtoa does, so `"%.2f" % 0.125` is "0.12" and round(2.5) is 2.
import { is, isDict, isList, isNum, isStr, pyFloat, pyRepr, pyStr, pyType, TupleClass, V, type RValue } from "./jinja-values.js";

// ----- exact decimal digits -----

/** The exact decimal expansion of a finite double's magnitude: integer digits and fraction digits. */
function exactDecimal(x: number): { int: string; frac: string } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & ((1n << 52n) - 1n);
  if (biased !== 0) mantissa |= 1n << 52n;
  const exp = (biased === 0 ? 1 : biased) - 1075; // value = mantissa × 2^exp
  if (exp >= 0) return { int: (mantissa << BigInt(exp)).toString(), frac: "" };
  // m / 2^k = m·5^k / 10^k
  const k = -exp;
  const digits = (mantissa * 5n ** BigInt(k)).toString().padStart(k + 1, "0");
  return { int: digits.slice(0, -k), frac: digits.slice(-k).replace(/0+$/, "") };
}

/** Rounds a digit string to `keep` digits, half to even; returns the digits and whether a digit was carried out. */
function roundDigits(digits: string, keep: number): { digits: string; carry: boolean } {
  if (keep >= digits.length) return { digits: digits.padEnd(keep, "0"), carry: false };
  const head = digits.slice(0, keep), rest = digits.slice(keep);
  const half = rest[0]! > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || (keep > 0 && Number(head.at(-1)) % 2 === 1)));
  if (!half) return { digits: head, carry: false };
  const up = (BigInt("1" + head) + 1n).toString(); // the leading 1 keeps zeros and shows a carry as "2"
  return { digits: up.slice(1), carry: up[0] === "2" };
}

/** `%.{p}f`: fixed point with p fraction digits. */
export function toFixed(x: number, p: number): string {
  if (!Number.isFinite(x)) return pyFloat(x);
  const { int, frac } = exactDecimal(x);
  const r = roundDigits(int + frac, int.length + p);
  let digits = r.digits;
  if (r.carry) digits = "1" + digits;
  const cut = digits.length - p;
  const body = (digits.slice(0, cut).replace(/^0+(?=\d)/, "") || "0") + (p > 0 ? "." + digits.slice(cut) : "");
  return (x < 0 || Object.is(x, -0) ? "-" : "") + body;
}

/** `%.{p}e`: one digit, p fraction digits, a signed exponent of at least two digits. */
export function toExponent(x: number, p: number, upper = false): string {
  if (!Number.isFinite(x)) return pyFloat(x);
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  let mant = "0".repeat(p + 1), exp = 0;
  if (x !== 0) {
    const { int, frac } = exactDecimal(x);
    const all = int + frac;
    const first = all.search(/[1-9]/);
    exp = int.length - 1 - first;
    const r = roundDigits(all.slice(first), p + 1);
    mant = r.carry ? "1" + r.digits.slice(0, -1) : r.digits;
    if (r.carry) exp++;
  }
  const e = `${upper ? "E" : "e"}${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  return `${sign}${mant[0]}${p > 0 ? "." + mant.slice(1) : ""}${e}`;
}

/** `%.{p}g`: p significant digits, fixed or scientific by the exponent, trailing zeros dropped unless `alt`. */
export function toGeneral(x: number, p: number, upper = false, alt = false, addDot0 = false): string {
  if (!Number.isFinite(x)) return upper ? pyFloat(x).toUpperCase() : pyFloat(x);
  const prec = p === 0 ? 1 : p;
  const sci = toExponent(x, prec - 1, upper);
  const exp = Number(sci.slice(sci.search(/[eE]/) + 1));
  // the format spec's omitted type (addDot0) keeps a digit after the point, so it goes
  // scientific one digit sooner, as CPython's format_float_short does
  const fixed = exp >= -4 && exp < (addDot0 ? prec - 1 : prec);
  let out = fixed ? toFixed(x, prec - 1 - exp) : sci;
  if (!alt) out = out.replace(/\.?0+(?=[eE]|$)/, (m) => (out.includes(".") ? "" : m));
  if (addDot0 && fixed && !out.includes(".")) out += ".0";
  return out;
}

/** Python's round(x, n): an int stays an int when n is omitted or the value is one. */
export function pyRound(x: number, p: number): number {
  if (!Number.isFinite(x)) return x;
  if (p < 0) {
    const f = 10 ** -p;
    return Number(toFixed(x / f, 0)) * f;
  }
  return Number(toFixed(x, Math.min(p, 400)));
}

// ----- shared: sign, padding, integers -----

interface Spec {
  fill: string;
  align: string; // < > = ^ or "" for the type's default
  sign: string; // + - space
  alt: boolean;
  zero: boolean;
  width: number;
  grouping: string;
  precision: number | undefined;
  type: string;
}

const typeError = (msg: string): Error => new Error(msg);
const toInt = (v: RValue, code: string): bigint => {
  if (is(v, V.Integer) || is(v, V.Boolean)) return BigInt(Number(v.value));
  if (is(v, V.Float) && "diuc".includes(code)) {
    if (!Number.isFinite(v.value)) throw typeError(`cannot convert float ${pyFloat(v.value)} to integer`);
    return BigInt(Math.trunc(v.value));
  }
  throw typeError(`%${code} format: ${"xXob".includes(code) ? "an integer" : "a real number"} is required, not ${pyType(v)}`);
};
const toNumber = (v: RValue, code: string): number => {
  if (isNum(v) || is(v, V.Boolean)) return Number(v.value);
  throw typeError(`must be real number, not ${pyType(v)} (%${code})`);
};

function group(int: string, sep: string, every: number): string {
  if (!sep) return int;
  let out = "";
  for (let i = int.length; i > 0; i -= every) out = int.slice(Math.max(0, i - every), i) + (out ? sep + out : "");
  return out;
}

/** The digits of a number (no sign) for a conversion type. */
function numberBody(v: RValue, type: string, precision: number | undefined, alt: boolean, grouping: string): { negative: boolean; body: string } {
  // n: the locale's number, which in the C locale is d for an int and g for a float
  if (type === "n") type = is(v, V.Float) ? "g" : "d";
  if ("doxXbc".includes(type) && type !== "") {
    const n = toInt(v, type);
    const negative = n < 0n;
    const abs = negative ? -n : n;
    if (type === "c") return { negative: false, body: String.fromCodePoint(Number(n)) };
    const radix = type === "x" || type === "X" ? 16 : type === "o" ? 8 : type === "b" ? 2 : 10;
    let digits = abs.toString(radix);
    if (type === "X") digits = digits.toUpperCase();
    digits = group(digits, grouping, radix === 10 ? 3 : 4);
    const prefix = alt && radix !== 10 ? `0${type === "X" ? "X" : type === "o" ? "o" : type === "b" ? "b" : "x"}` : "";
    return { negative, body: prefix + digits };
  }
  const x = toNumber(v, type);
  const negative = x < 0 || Object.is(x, -0);
  const a = Math.abs(x);
  const p = precision ?? 6;
  let body: string;
  switch (type) {
    case "f":
    case "F":
      body = toFixed(a, p);
      break;
    case "e":
    case "E":
      body = toExponent(a, p, type === "E");
      break;
    case "%":
      body = toFixed(a * 100, p) + "%";
      break;
    default: // g, G
      body = toGeneral(a, p, type === "G", alt);
  }
  // the alternate form always has a decimal point ("%#.0f" % 7 is "7.")
  if (alt && !/\.|inf|nan/i.test(body)) body = body.replace(/(?=[eE%]|$)/, ".");
  if (type === "F" || type === "G" || type === "E") body = body.toUpperCase();
  if (grouping) body = body.replace(/^\d+/, (d) => group(d, grouping, 3));
  return { negative, body };
}

function pad(text: string, spec: Pick<Spec, "fill" | "align" | "width">, signLen = 0): string {
  const len = [...text].length;
  if (len >= spec.width) return text;
  const n = spec.width - len;
  switch (spec.align) {
    case "<":
      return text + spec.fill.repeat(n);
    case "^":
      return spec.fill.repeat(Math.floor(n / 2)) + text + spec.fill.repeat(n - Math.floor(n / 2));
    case "=":
      return text.slice(0, signLen) + spec.fill.repeat(n) + text.slice(signLen);
    default:
      return spec.fill.repeat(n) + text;
  }
}

// ----- "%s" % x -----

const PRINTF = /%(?:\(([^)]*)\))?([#0\- +]*)(\*|\d+)?(?:\.(\*|\d*))?[hlL]?([diouxXeEfFgGcrsa%])?/g;

/** Python's `format % values`. */
export function percentFormat(format: string, values: RValue): string {
  const mapping = isDict(values) ? (values.value as Map<unknown, RValue>) : undefined;
  const args = is(values, TupleClass) ? (values.value as RValue[]) : [values];
  let next = 0;
  const take = (): RValue => {
    if (mapping && !is(values, TupleClass)) return values;
    const v = args[next++];
    if (v === undefined) throw typeError("not enough arguments for format string");
    return v;
  };
  let usedKey = false;
  const out = format.replace(PRINTF, (m, key: string | undefined, flags: string, width: string | undefined, precision: string | undefined, type: string | undefined) => {
    if (type === undefined) throw typeError(`incomplete format`);
    if (type === "%" && m === "%%") return "%";
    let v: RValue;
    if (key !== undefined) {
      if (!mapping) throw typeError("format requires a mapping");
      usedKey = true;
      const got = mapping.get(key);
      if (got === undefined) throw typeError(`KeyError: '${key}'`);
      v = got;
    }
    const w = width === "*" ? Number(take().value) : Number(width ?? 0);
    const p = precision === "*" ? Number(take().value) : precision === undefined ? undefined : Number(precision || 0);
    if (key === undefined) v = take();
    const spec = { fill: flags.includes("0") && !flags.includes("-") && !"srac".includes(type) ? "0" : " ", align: flags.includes("-") || w < 0 ? "<" : ">", width: Math.abs(w) };
    if ("sra".includes(type)) {
      let text = type === "s" ? pyStr(v!) : pyRepr(v!);
      if (p !== undefined) text = [...text].slice(0, p).join("");
      return pad(text, { ...spec, fill: " " });
    }
    if (type === "c") return pad(isStr(v!) ? v!.value : String.fromCodePoint(Number(toInt(v!, "c"))), { ...spec, fill: " " });
    const { negative, body } = numberBody(v!, type === "i" || type === "u" ? "d" : type, p, flags.includes("#"), "");
    const sign = negative ? "-" : flags.includes("+") ? "+" : flags.includes(" ") ? " " : "";
    // printf's precision on an integer is a minimum digit count
    const prefix = /^0[xXo]/.test(body) && "oxX".includes(type) ? body.slice(0, 2) : "";
    const digits = p !== undefined && "diuoxX".includes(type) ? prefix + body.slice(prefix.length).padStart(p, "0") : body;
    // zeros go after the sign and the 0x prefix: "-0x0f8"
    return spec.fill === "0" ? sign + prefix + pad(digits.slice(prefix.length), { ...spec, width: spec.width - sign.length - prefix.length }) : pad(sign + digits, spec);
  });
  // Python leaves a value it can index (a dict, a list) unconverted without complaint
  const indexable = mapping || (isList(values) && !is(values, TupleClass));
  if (!indexable && next < args.length) throw typeError("not all arguments converted during string formatting");
  if (mapping && !usedKey && is(values, TupleClass) && next < args.length) throw typeError("not all arguments converted during string formatting");
  return out;
}

// ----- "{:>8.2f}".format(x) -----

const SPEC = /^(?:(.)?([<>=^]))?([+\- ])?(z)?(#)?(0)?(\d+)?([,_])?(?:\.(\d+))?([bcdeEfFgGnosxX%])?$/su;

/** One replacement field's format spec applied to a value, as format(value, spec) does. */
export function formatSpec(v: RValue, specText: string): string {
  const m = SPEC.exec(specText);
  if (!m) throw typeError(`Invalid format specifier '${specText}' for object of type '${pyType(v)}'`);
  const [, fill, align, sign = "-", , alt, zero, width, grouping = "", precision, type = ""] = m;
  const spec: Spec = {
    fill: fill ?? (zero ? "0" : " "),
    align: align ?? (zero ? "=" : ""),
    sign,
    alt: !!alt,
    zero: !!zero,
    width: Number(width ?? 0),
    grouping,
    precision: precision === undefined ? undefined : Number(precision),
    type,
  };
  if (isStr(v) || is(v, V.Null) || isList(v) || isDict(v)) {
    if (type !== "" && type !== "s") throw typeError(`Unknown format code '${type}' for object of type '${pyType(v)}'`);
    let text = pyStr(v);
    if (spec.precision !== undefined) text = [...text].slice(0, spec.precision).join("");
    return pad(text, { ...spec, align: spec.align || "<" });
  }
  const integer = is(v, V.Integer) || is(v, V.Boolean);
  if (integer && "eEfFgG%".includes(type) && type !== "") return formatSpec(new V.Float(Number(v.value)), specText);
  if (!integer && "dxXobc".includes(type) && type !== "") throw typeError(`Unknown format code '${type}' for object of type 'float'`);
  let body: string, negative: boolean;
  if (type === "" && !integer) {
    // no type: str(), or general format with the precision given
    const x = Number(v.value);
    negative = x < 0 || Object.is(x, -0);
    body = spec.precision === undefined ? pyFloat(Math.abs(x)) : toGeneral(Math.abs(x), spec.precision, false, spec.alt, true);
    if (spec.alt && !/\.|inf|nan/i.test(body)) body = body.replace(/(?=[eE]|$)/, ".");
    if (grouping) body = body.replace(/^\d+/, (d) => group(d, grouping, 3));
  } else if (type === "s") {
    throw typeError(`Unknown format code 's' for object of type '${pyType(v)}'`);
  } else ({ negative, body } = numberBody(v, type === "" ? "d" : type, spec.precision, spec.alt, grouping));
  const signText = negative ? "-" : sign === "+" ? "+" : sign === " " ? " " : "";
  if (grouping && spec.fill === "0" && spec.align === "=") {
    // zero padding is grouped too: "+0_005.350000"; a group never starts with its separator
    const [, prefix = "", int = "", rest = ""] = /^(0[xXob])?([\d,_]*)(.*)$/s.exec(body)!;
    const every = "bxXo".includes(type) && type !== "" ? 4 : 3;
    let digits = int.replace(/[,_]/g, "");
    const room = spec.width - signText.length - prefix.length - [...rest].length;
    while (group(digits, grouping, every).length < room) digits = "0" + digits;
    body = prefix + group(digits, grouping, every) + rest;
  }
  return pad(signText + body, { ...spec, align: spec.align || ">" }, signText.length + (spec.alt && /^0[xXob]/.test(body) && spec.align === "=" ? 2 : 0));
}
