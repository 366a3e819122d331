// Go's time.Duration text forms: String() ("1.503981s", "29.5ms", "1h2m3s") and ParseDuration.
// Durations are integer nanoseconds held in a JS number (exact up to ~104 days).

const NS = 1;
const US = 1000 * NS;
const MS = 1000 * US;
const SECOND = 1000 * MS;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Fractional digits of v / 10^prec with trailing zeros removed ("" when all zero), and the integer part. */
function frac(v: number, prec: number): [string, number] {
  let digits = "";
  let printed = false;
  for (let i = 0; i < prec; i++) {
    const digit = v % 10;
    printed = printed || digit !== 0;
    if (printed) digits = String(digit) + digits;
    v = Math.floor(v / 10);
  }
  return [printed ? "." + digits : "", v];
}

/** Go's time.Duration.String() for an integer number of nanoseconds. */
export function formatGoDuration(ns: number): string {
  let u = Math.abs(Math.trunc(ns));
  const sign = ns < 0 ? "-" : "";
  if (u < SECOND) {
    if (u === 0) return "0s";
    let prec: number;
    let unit: string;
    if (u < US) {
      prec = 0;
      unit = "ns";
    } else if (u < MS) {
      prec = 3;
      unit = "µs";
    } else {
      prec = 6;
      unit = "ms";
    }
    const [f, whole] = frac(u, prec);
    return `${sign}${whole}${f}${unit}`;
  }
  const [f, secondsTotal] = frac(u, 9);
  u = secondsTotal;
  let out = `${u % 60}${f}s`;
  u = Math.floor(u / 60);
  if (u > 0) {
    out = `${u % 60}m` + out;
    u = Math.floor(u / 60);
    if (u > 0) out = `${u}h` + out;
  }
  return sign + out;
}

const UNITS: Record<string, number> = {
  ns: NS,
  us: US,
  "µs": US, // U+00B5
  "μs": US, // U+03BC
  ms: MS,
  s: SECOND,
  m: MINUTE,
  h: HOUR,
};

/** Go's strconv.Quote for the ASCII-ish strings that reach these errors. */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** Go's time.ParseDuration: "300ms", "-1.5h", "2h45m"; a bare number other than 0 is an error. Returns ns. */
export function parseGoDurationStrict(input: string): number {
  const orig = input;
  let s = input;
  let neg = false;
  if (s !== "" && (s[0] === "-" || s[0] === "+")) {
    neg = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") throw new Error(`time: invalid duration ${goQuote(orig)}`);
  let total = 0;
  while (s !== "") {
    const m = /^([0-9]*)(?:\.([0-9]*))?/.exec(s);
    const intPart = m?.[1] ?? "";
    const fracPart = m?.[2];
    if (intPart === "" && (fracPart === undefined || fracPart === "")) {
      throw new Error(`time: invalid duration ${goQuote(orig)}`);
    }
    s = s.slice(m?.[0].length ?? 0);
    const u = /^[^0-9.]*/.exec(s)?.[0] ?? "";
    if (u === "") throw new Error(`time: missing unit in duration ${goQuote(orig)}`);
    const unit = Object.hasOwn(UNITS, u) ? UNITS[u] : undefined;
    if (unit === undefined) throw new Error(`time: unknown unit ${goQuote(u)} in duration ${goQuote(orig)}`);
    s = s.slice(u.length);
    const value = Number(`${intPart || "0"}.${fracPart || "0"}`);
    total += Math.round(value * unit);
  }
  if (!Number.isFinite(total) || total > Number.MAX_SAFE_INTEGER) {
    throw new Error(`time: invalid duration ${goQuote(orig)}`);
  }
  return neg ? -total : total;
}
