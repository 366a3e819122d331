// Ports of strconv.FormatFloat (e/E/f/g/G, shortest and fixed precision with Go's
// round-half-even on exact decimal expansions) and strconv.Quote/QuoteRune.

interface Digits {
  d: string; // decimal digits, no leading/trailing zeros ("" for zero)
  dp: number; // decimal point position
}

function exactDigits(x: number): Digits {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const expBits = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  let e: number;
  if (expBits === 0) e = -1074;
  else {
    mant |= 1n << 52n;
    e = expBits - 1075;
  }
  if (mant === 0n) return { d: "", dp: 0 };
  let s: string;
  let dp: number;
  if (e >= 0) {
    s = (mant << BigInt(e)).toString();
    dp = s.length;
  } else {
    s = (mant * 5n ** BigInt(-e)).toString();
    dp = s.length + e;
  }
  return { d: s.replace(/0+$/, ""), dp };
}

function shortestDigits(x: number): Digits {
  if (x === 0) return { d: "", dp: 0 };
  const [m = "0", ex = "0"] = x.toExponential().split("e");
  return { d: m.replace(".", "").replace(/0+$/, ""), dp: Number(ex) + 1 };
}

/** Round to nd digits, half to even on exact ties (strconv's decimal.Round). */
function roundDigits(digs: Digits, nd: number): Digits {
  const { d, dp } = digs;
  if (nd < 0) return { d: "", dp: 0 };
  if (nd >= d.length) return digs;
  let up: boolean;
  if (d[nd] === "5" && nd + 1 === d.length) up = nd > 0 && (Number(d[nd - 1]) & 1) === 1;
  else up = d[nd]! >= "5";
  if (!up) return { d: d.slice(0, nd).replace(/0+$/, ""), dp };
  let i = nd - 1;
  while (i >= 0 && d[i] === "9") i--;
  if (i < 0) return { d: "1", dp: dp + 1 };
  return { d: d.slice(0, i) + String(Number(d[i]) + 1), dp };
}

function fmtE(neg: boolean, digs: Digits, prec: number, ch: string): string {
  let out = neg ? "-" : "";
  out += digs.d.length ? digs.d[0] : "0";
  if (prec > 0) {
    out += "." + digs.d.slice(1, prec + 1).padEnd(prec, "0");
  }
  let exp = digs.d.length === 0 ? 0 : digs.dp - 1;
  const sign = exp < 0 ? "-" : "+";
  exp = Math.abs(exp);
  return out + ch + sign + (exp < 10 ? "0" + exp : String(exp));
}

function fmtF(neg: boolean, digs: Digits, prec: number): string {
  let out = neg ? "-" : "";
  if (digs.dp > 0) out += digs.d.slice(0, digs.dp).padEnd(digs.dp, "0");
  else out += "0";
  if (prec > 0) {
    let frac = "";
    for (let i = 0; i < prec; i++) {
      const j = digs.dp + i;
      frac += j >= 0 && j < digs.d.length ? digs.d[j] : "0";
    }
    out += "." + frac;
  }
  return out;
}

/** strconv.FormatFloat(x, fmt, prec, 64) for fmt in e E f g G. */
export function formatFloat(x: number, fmt: string, prec: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "+Inf" : "-Inf";
  const neg = x < 0 || Object.is(x, -0);
  const a = Math.abs(x);
  const shortest = prec < 0;
  let digs: Digits;
  if (shortest) {
    digs = shortestDigits(a);
    if (fmt === "e" || fmt === "E") prec = Math.max(digs.d.length - 1, 0);
    else if (fmt === "f") prec = Math.max(digs.d.length - digs.dp, 0);
    else prec = digs.d.length;
  } else {
    const exact = exactDigits(a);
    if (fmt === "e" || fmt === "E") digs = roundDigits(exact, prec + 1);
    else if (fmt === "f") digs = roundDigits(exact, exact.dp + prec);
    else {
      if (prec === 0) prec = 1;
      digs = roundDigits(exact, prec);
    }
  }
  if (fmt === "e" || fmt === "E") return fmtE(neg, digs, prec, fmt);
  if (fmt === "f") return fmtF(neg, digs, prec);
  // g / G
  let eprec = prec;
  if (eprec > digs.d.length && digs.d.length >= digs.dp) eprec = digs.d.length;
  if (shortest) eprec = 6;
  const exp = digs.dp - 1;
  if (exp < -4 || exp >= eprec) {
    if (prec > digs.d.length) prec = digs.d.length;
    return fmtE(neg, digs, prec - 1, fmt === "g" ? "e" : "E");
  }
  if (prec > digs.dp) prec = digs.d.length;
  return fmtF(neg, digs, Math.max(prec - digs.dp, 0));
}

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

export function isPrint(ch: string): boolean {
  return PRINTABLE.test(ch);
}

export function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, "0");
}

function escapeRune(ch: string, quote: string, ascii: boolean): string {
  const c = ch.codePointAt(0) ?? 0;
  if (ch === quote || ch === "\\") return "\\" + ch;
  if (c >= 0xd800 && c <= 0xdfff) return "\\ufffd";
  if (ascii ? c < 0x80 && isPrint(ch) : isPrint(ch)) return ch;
  switch (ch) {
    case "\x07":
      return "\\a";
    case "\b":
      return "\\b";
    case "\f":
      return "\\f";
    case "\n":
      return "\\n";
    case "\r":
      return "\\r";
    case "\t":
      return "\\t";
    case "\v":
      return "\\v";
  }
  if (c < 0x20 || c === 0x7f) return "\\x" + hex(c, 2);
  if (c < 0x10000) return "\\u" + hex(c, 4);
  return "\\U" + hex(c, 8);
}

/** strconv.Quote (ascii: QuoteToASCII). */
export function quote(s: string, ascii = false): string {
  let out = '"';
  for (const ch of s) out += escapeRune(ch, '"', ascii);
  return out + '"';
}

export function quoteRune(c: number, ascii = false): string {
  const ch = c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ? "\ufffd" : String.fromCodePoint(c);
  return "'" + escapeRune(ch, "'", ascii) + "'";
}
