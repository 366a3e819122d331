// JSON numbers within `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum` as GBNF: digit
// strings compared position by position against the bounds' digits (integer part by length, then
// the fraction). Bounded numbers are written without an exponent and with at most 15 significant
// digits, so every string parses to the double it reads as and the bounds hold after parsing.
import { InvalidSchemaError } from "./gbnf.js";

const MAX_DIGITS = 15;
const CAP = 10 ** MAX_DIGITS - 1;

export interface Bound {
  value: number;
  exclusive: boolean;
}

/** Integers without bounds; numbers without bounds (a short exponent keeps them finite). */
export const INTEGER = `"-"? ("0" | [1-9] [0-9]{0,${MAX_DIGITS - 1}})`;
export const NUMBER = `"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?`;

const alt = (parts: string[]) => (parts.length === 1 ? parts[0]! : `(${parts.join(" | ")})`);
const lit = (s: string) => `"${s}"`;
const range = (a: number, b: number) => (a === b ? lit(String(a)) : `[${a}-${b}]`);
const anyDigits = (min: number, max: number) => (max === 0 ? "" : min === max ? (min === 1 ? "[0-9]" : `[0-9]{${min}}`) : `[0-9]{${min},${max}}`);

/** Digit strings of a.length digits between a and b (a <= b, equal lengths). */
function digitsBetween(a: string, b: string): string {
  if (a === b) return a === "" ? '""' : lit(a);
  let i = 0;
  while (a[i] === b[i]) i++;
  const prefix = a.slice(0, i);
  const x = Number(a[i]);
  const y = Number(b[i]);
  const ra = a.slice(i + 1);
  const rb = b.slice(i + 1);
  const n = ra.length;
  const zeros = /^0*$/.test(ra);
  const nines = /^9*$/.test(rb);
  const parts: string[] = [];
  const lo = zeros ? x : x + 1;
  const hi = nines ? y : y - 1;
  if (!zeros) parts.push(`${lit(String(x))} ${digitsBetween(ra, "9".repeat(n))}`);
  if (lo <= hi) parts.push(`${range(lo, hi)}${n > 0 ? ` ${anyDigits(n, n)}` : ""}`);
  if (!nines) parts.push(`${lit(String(y))} ${digitsBetween("0".repeat(n), rb)}`);
  const body = alt(parts);
  return prefix ? `${lit(prefix)} ${body}` : body;
}

/** Non-negative integers in [lo, hi] (hi may be Infinity: up to 15 digits), by digit count. */
function nonNegativeByLength(lo: number, hi: number): Array<{ length: number; expr: string }> {
  const out: Array<{ length: number; expr: string }> = [];
  const lenLo = String(lo).length;
  const lenHi = hi === Infinity ? MAX_DIGITS : String(hi).length;
  for (let len = lenLo; len <= lenHi; len++) {
    const lower = len === lenLo ? String(lo) : `1${"0".repeat(len - 1)}`;
    const upper = hi !== Infinity && len === lenHi ? String(hi) : "9".repeat(len);
    out.push({ length: len, expr: digitsBetween(lower, upper) });
  }
  return out;
}

function integerBetween(lo: number, hi: number): string {
  const parts: string[] = [];
  if (lo < 0) {
    const magLo = hi < 0 ? -hi : 1;
    const magHi = lo === -Infinity ? Infinity : -lo;
    parts.push(`"-" ${alt(nonNegativeByLength(magLo, magHi).map((p) => p.expr))}`);
  }
  if (hi >= 0) parts.push(...nonNegativeByLength(Math.max(lo, 0), hi).map((p) => p.expr));
  return alt(parts);
}

/** Integers within the bounds; a range with no integer is an invalid schema. */
export function integerGrammar(lo: Bound | undefined, hi: Bound | undefined): string {
  let a = lo ? (lo.exclusive ? Math.floor(lo.value) + 1 : Math.ceil(lo.value)) : -Infinity;
  let b = hi ? (hi.exclusive ? Math.ceil(hi.value) - 1 : Math.floor(hi.value)) : Infinity;
  if (a > b) throw new InvalidSchemaError(`no integer lies between ${lo?.value} and ${hi?.value}`);
  a = Math.max(a, -CAP);
  b = Math.min(b, CAP);
  if (a > b) throw new InvalidSchemaError(`the integers between ${lo?.value} and ${hi?.value} have more than ${MAX_DIGITS} digits`);
  return integerBetween(a, b);
}

// ---- decimals ----

/** A non-negative double's exact decimal digits: integer part (no leading zeros), fraction
 *  (no trailing zeros). */
function decimal(x: number): { int: string; frac: string } {
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(Math.abs(x).toString())!;
  let digits = m[1]! + (m[2] ?? "");
  let point = m[1]!.length + Number(m[3] ?? 0);
  if (point < 0) {
    digits = "0".repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += "0".repeat(point - digits.length);
  const int = digits.slice(0, point).replace(/^0+/, "") || "0";
  return { int, frac: digits.slice(point).replace(/0+$/, "") };
}

interface Digits {
  nonEmpty: string | null;
  empty: boolean;
}

/**
 * Fraction digit strings of at most n digits between two bounds (each a digit string, "" = 0,
 * null = none), compared as decimals (trailing zeros do not count).
 */
function fractionDigits(lower: string | null, lowerEx: boolean, upper: string | null, upperEx: boolean, n: number): Digits {
  // The empty string is 0.
  const empty = (lower === null || (lower === "" && !lowerEx)) && (upper === null || upper !== "" || !upperEx);
  if (n === 0) return { nonEmpty: null, empty };
  if (lower === null && upper === null) return { nonEmpty: anyDigits(1, n), empty: true };
  const l0 = lower ? Number(lower[0]) : 0;
  const u0 = upper === null ? 9 : upper ? Number(upper[0]) : 0;
  const parts: string[] = [];
  let free: [number, number] | undefined;
  const flushFree = () => {
    if (free) parts.push(`${range(free[0], free[1])}${n > 1 ? ` ${anyDigits(0, n - 1)}` : ""}`.trim());
    free = undefined;
  };
  for (let c = l0; c <= u0; c++) {
    const tightLow = lower !== null && c === l0;
    const tightHigh = upper !== null && c === u0;
    if (!tightLow && !tightHigh) {
      free = free ? [free[0], c] : [c, c];
      continue;
    }
    flushFree();
    const sub = fractionDigits(tightLow ? lower.slice(1) : null, tightLow && lowerEx, tightHigh ? upper.slice(1) : null, tightHigh && upperEx, n - 1);
    const rest = sub.nonEmpty === null ? (sub.empty ? "" : null) : sub.empty ? `(${sub.nonEmpty})?` : sub.nonEmpty;
    if (rest !== null) parts.push(rest ? `${lit(String(c))} ${rest}` : lit(String(c)));
  }
  flushFree();
  return { nonEmpty: parts.length > 0 ? alt(parts) : null, empty };
}

/** "." and the fraction digits, optional when 0 is allowed; null when nothing fits. */
function fraction(d: Digits): string | null {
  if (d.nonEmpty === null) return d.empty ? "" : null;
  return d.empty ? `("." ${d.nonEmpty})?` : `"." ${d.nonEmpty}`;
}

interface Side {
  d: { int: string; frac: string };
  exclusive: boolean;
}

/** Magnitudes from `low` up to `high` (none: up to 15 integer digits); null when empty. */
function magnitudes(low: Side, high: Side | undefined, places: number): string | null {
  if (low.d.int.length > MAX_DIGITS) return null;
  const hi = high && high.d.int.length <= MAX_DIGITS ? high : undefined;
  const li = Number(low.d.int);
  const ui = hi ? Number(hi.d.int) : Infinity;
  // Significant digits: a leading "0" is not one.
  const budget = (int: number) => Math.min(places, MAX_DIGITS - (int === 0 ? 0 : String(int).length));
  const parts: string[] = [];
  const add = (int: string, frac: string | null) => {
    if (frac !== null) parts.push(frac ? `${lit(int)} ${frac}` : lit(int));
  };
  if (hi && li === ui) {
    add(low.d.int, fraction(fractionDigits(low.d.frac, low.exclusive, hi.d.frac, hi.exclusive, budget(li))));
  } else {
    add(low.d.int, fraction(fractionDigits(low.d.frac, low.exclusive, null, false, budget(li))));
    if (li + 1 <= ui - 1) {
      for (const p of nonNegativeByLength(li + 1, ui === Infinity ? Infinity : ui - 1)) {
        const f = fraction(fractionDigits(null, false, null, false, Math.min(places, MAX_DIGITS - p.length)));
        parts.push(f ? `${p.expr} ${f}` : p.expr);
      }
    }
    if (hi) add(hi.d.int, fraction(fractionDigits(null, false, hi.d.frac, hi.exclusive, budget(ui))));
  }
  return parts.length > 0 ? alt(parts) : null;
}

const MAX_MULTIPLES = 1000;

/** x × 10^places as an integer rounded up or down, and whether that was exact (from x's
 *  decimal digits, so no floating-point error). */
function scaled(x: number, places: number, up: boolean): { v: bigint; exact: boolean } {
  const d = decimal(x);
  const frac = d.frac.padEnd(places, "0");
  const magnitude = BigInt(d.int + frac.slice(0, places));
  const exact = !/[1-9]/.test(frac.slice(places));
  let v = x < 0 ? -magnitude : magnitude;
  // Digits were cut off: the exact value lies between v and the next integer away from zero.
  if (!exact && up && x > 0) v += 1n;
  if (!exact && !up && x < 0) v -= 1n;
  return { v, exact };
}

function formatScaled(v: bigint, places: number): string {
  const neg = v < 0n;
  const digits = (neg ? -v : v).toString().padStart(places + 1, "0");
  const int = digits.slice(0, digits.length - places);
  const frac = digits.slice(digits.length - places).replace(/0+$/, "");
  return `${neg ? "-" : ""}${int}${frac ? `.${frac}` : ""}`;
}

/**
 * The multiples of `multipleOf` within two bounds, spelled out when there are at most 1,000
 * (a rating in steps of 0.5, a percentage in steps of 5); undefined otherwise.
 */
export function multiplesGrammar(lo: Bound | undefined, hi: Bound | undefined, multipleOf: unknown): string | undefined {
  const places = decimalPlaces(multipleOf);
  if (places === undefined || !lo || !hi || places > MAX_DIGITS) return undefined;
  const step = scaled(multipleOf as number, places, false).v;
  const a = scaled(lo.value, places, true);
  const b = scaled(hi.value, places, false);
  const ceilDiv = (x: bigint) => (x >= 0n ? (x + step - 1n) / step : -(-x / step));
  const floorDiv = (x: bigint) => (x >= 0n ? x / step : -((-x + step - 1n) / step));
  let kmin = ceilDiv(a.v);
  let kmax = floorDiv(b.v);
  // An exclusive bound that is itself a multiple is stepped over.
  if (lo.exclusive && a.exact && kmin * step === a.v) kmin += 1n;
  if (hi.exclusive && b.exact && kmax * step === b.v) kmax -= 1n;
  if (kmax < kmin) throw new InvalidSchemaError(`no multiple of ${String(multipleOf)} lies between ${lo.value} and ${hi.value}`);
  if (kmax - kmin >= BigInt(MAX_MULTIPLES)) return undefined;
  const values: string[] = [];
  for (let k = kmin; k <= kmax; k++) values.push(lit(formatScaled(k * step, places)));
  return alt(values);
}

/** The decimal places of a `multipleOf`: a value with more is never a multiple of it. */
export function decimalPlaces(multipleOf: unknown): number | undefined {
  if (typeof multipleOf !== "number" || !(multipleOf > 0) || !Number.isFinite(multipleOf)) return undefined;
  return decimal(multipleOf).frac.length;
}

/**
 * Numbers within the bounds, with at most `places` decimals (multipleOf 0.01: 2, exact for a
 * power of ten; other multiples are not enforced beyond that), without an exponent; an empty
 * range is an invalid schema.
 */
export function numberGrammar(lo: Bound | undefined, hi: Bound | undefined, places = MAX_DIGITS): string {
  if (lo && hi && (lo.value > hi.value || (lo.value === hi.value && (lo.exclusive || hi.exclusive)))) {
    throw new InvalidSchemaError(`no number lies between ${lo.value} and ${hi.value}`);
  }
  const zero = { int: "0", frac: "" };
  const parts: string[] = [];
  if (!lo || lo.value < 0) {
    // Negative numbers: "-" and a magnitude above 0 (so never "-0").
    const low: Side = hi && hi.value < 0 ? { d: decimal(hi.value), exclusive: hi.exclusive } : { d: zero, exclusive: true };
    const m = magnitudes(low, lo ? { d: decimal(lo.value), exclusive: lo.exclusive } : undefined, places);
    if (m) parts.push(`"-" ${m}`);
  }
  if (!hi || hi.value > 0 || (hi.value === 0 && !hi.exclusive)) {
    const low: Side = lo && lo.value >= 0 ? { d: decimal(lo.value), exclusive: lo.exclusive } : { d: zero, exclusive: false };
    const m = magnitudes(low, hi ? { d: decimal(hi.value), exclusive: hi.exclusive } : undefined, places);
    if (m) parts.push(m);
  }
  if (parts.length === 0) throw new InvalidSchemaError(`no number with at most ${places} decimals lies between ${lo?.value} and ${hi?.value}`);
  return alt(parts);
}
