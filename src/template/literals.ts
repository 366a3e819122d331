// Go literal parsing used by the template parser: strconv.Unquote / UnquoteChar and the
// NumberNode rules of text/template/parse (ideal constants stored as int/uint/float).

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const UINT64_MAX = (1n << 64n) - 1n;

export interface NumberConst {
  isInt: boolean;
  isUint: boolean;
  isFloat: boolean;
  isComplex: boolean;
  int64: bigint;
  uint64: bigint;
  float64: number;
  text: string;
}

/** Reads one (possibly escaped) character at s[i]; returns [codePoint, nextIndex] or null. */
function unquoteChar(s: string, i: number, quote: string): [number, number] | null {
  const c = s.codePointAt(i);
  if (c === undefined) return null;
  const ch = String.fromCodePoint(c);
  if (ch === quote && (quote === "'" || quote === '"')) return null;
  if (ch !== "\\") return [c, i + ch.length];
  const e = s[i + 1];
  const simple: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, "\\": 92 };
  if (e === undefined) return null;
  if (e in simple) return [simple[e]!, i + 2];
  if (e === "'" || e === '"') return e === quote ? [e.charCodeAt(0), i + 2] : null;
  const hexLen = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
  if (hexLen) {
    const h = s.slice(i + 2, i + 2 + hexLen);
    if (h.length !== hexLen || !/^[0-9a-fA-F]+$/.test(h)) return null;
    const v = parseInt(h, 16);
    if (e !== "x" && (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))) return null;
    return [v, i + 2 + hexLen];
  }
  if (e >= "0" && e <= "7") {
    const o = s.slice(i + 1, i + 4);
    if (!/^[0-7]{3}$/.test(o)) return null;
    const v = parseInt(o, 8);
    return v > 255 ? null : [v, i + 4];
  }
  return null;
}

/** strconv.Unquote for "..." and `...` literals; null on invalid syntax. */
export function unquote(s: string): string | null {
  if (s.length < 2) return null;
  const q = s[0];
  if (q !== s[s.length - 1]) return null;
  const body = s.slice(1, -1);
  if (q === "`") return body.includes("`") ? null : body.replace(/\r/g, "");
  if (q !== '"') return null;
  let out = "";
  let bytes: number[] = [];
  const flush = (): void => {
    if (bytes.length) out += Buffer.from(bytes).toString("utf8");
    bytes = [];
  };
  for (let i = 0; i < body.length; ) {
    if (body[i] === "\n") return null;
    const r = unquoteChar(body, i, '"');
    if (!r) return null;
    // \x and octal escapes are raw bytes; accumulate them so multi-byte UTF-8 sequences decode.
    if (body[i] === "\\" && (body[i + 1] === "x" || (body[i + 1]! >= "0" && body[i + 1]! <= "7"))) bytes.push(r[0]);
    else {
      flush();
      out += String.fromCodePoint(r[0]);
    }
    i = r[1];
  }
  flush();
  return out;
}

function parseGoInt(text: string, signed: boolean): bigint | null {
  let s = text;
  let neg = false;
  if (s[0] === "+" || s[0] === "-") {
    if (!signed) return null;
    neg = s[0] === "-";
    s = s.slice(1);
  }
  let base = 10;
  let digits = s;
  let prefixed = false;
  if (/^0[xX]/.test(s)) [base, digits, prefixed] = [16, s.slice(2), true];
  else if (/^0[oO]/.test(s)) [base, digits, prefixed] = [8, s.slice(2), true];
  else if (/^0[bB]/.test(s)) [base, digits, prefixed] = [2, s.slice(2), true];
  else if (s.length > 1 && s[0] === "0") [base, digits] = [8, s.slice(1)];
  if (digits.includes("_")) {
    // underscores only between digits (or right after a base prefix)
    if (!/^_?[0-9a-fA-F]+(_[0-9a-fA-F]+)*$/.test(digits) || (!prefixed && digits.startsWith("_") && base !== 8)) return null;
    digits = digits.replace(/_/g, "");
  }
  const valid = { 2: /^[01]+$/, 8: /^[0-7]+$/, 10: /^[0-9]+$/, 16: /^[0-9a-fA-F]+$/ }[base as 2 | 8 | 10 | 16];
  if (!valid.test(digits)) return null;
  let v = 0n;
  for (const d of digits) v = v * BigInt(base) + BigInt(parseInt(d, 16));
  if (neg) v = -v;
  if (signed ? v < INT64_MIN || v > INT64_MAX : v > UINT64_MAX) return null;
  return v;
}

function parseGoFloat(text: string): number | null {
  let s = text.replace(/_/g, "");
  if (/^[+-]?0[xX]/.test(s)) {
    const m = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?\d+)$/.exec(s);
    if (!m || (m[2] === "" && !m[3])) return null;
    const mant = parseInt((m[2] || "0") + (m[3] ?? ""), 16) / 16 ** (m[3]?.length ?? 0);
    const v = mant * 2 ** Number(m[4]);
    return m[1] === "-" ? -v : v;
  }
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return null;
  s = s.replace(/^\+/, "");
  const v = Number(s);
  return Number.isFinite(v) ? v : null;
}

/** NumberNode construction (parse.Tree.newNumber). Returns an error message string on failure. */
export function parseNumber(text: string, isChar: boolean, isComplex: boolean): NumberConst | string {
  const n: NumberConst = { isInt: false, isUint: false, isFloat: false, isComplex: false, int64: 0n, uint64: 0n, float64: 0, text };
  if (isChar) {
    const r = unquoteChar(text, 1, "'");
    if (!r) return "invalid syntax";
    if (text.slice(r[1]) !== "'") return `malformed character constant: ${text}`;
    return { ...n, isInt: true, isUint: true, isFloat: true, int64: BigInt(r[0]), uint64: BigInt(r[0]), float64: r[0] };
  }
  if (isComplex || text.endsWith("i")) {
    // Complex constants are outside the value model; real-only imaginary zero still fails here.
    return `complex constants are not supported: ${JSON.stringify(text)}`;
  }
  const u = parseGoInt(text, false);
  if (u !== null) {
    n.isUint = true;
    n.uint64 = u;
  }
  const i = parseGoInt(text, true);
  if (i !== null) {
    n.isInt = true;
    n.int64 = i;
    if (i === 0n) {
      n.isUint = true;
      n.uint64 = u ?? 0n;
    }
  }
  if (n.isInt) {
    n.isFloat = true;
    n.float64 = Number(n.int64);
  } else if (n.isUint) {
    n.isFloat = true;
    n.float64 = Number(n.uint64);
  } else {
    const f = parseGoFloat(text);
    if (f !== null) {
      if (!/[.eEpP]/.test(text)) return `integer overflow: ${JSON.stringify(text)}`;
      n.isFloat = true;
      n.float64 = f;
      if (Number.isInteger(f) && f >= -(2 ** 63) && f < 2 ** 63) {
        n.isInt = true;
        n.int64 = BigInt(f);
      }
      if (Number.isInteger(f) && f >= 0 && f < 2 ** 64) {
        n.isUint = true;
        n.uint64 = BigInt(f);
      }
    }
  }
  if (!n.isInt && !n.isUint && !n.isFloat) return `illegal number syntax: ${JSON.stringify(text)}`;
  return n;
}
