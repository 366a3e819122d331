// Ollama's human formats (format/bytes.go, format/format.go, format/time.go), Go's float printing
// (%.Nf with round-half-even ties, %g), and the --verbose stats block (api.Metrics.Summary).

import { formatGoDuration } from "./duration.js";
import type { Metrics } from "../api/types.js";

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** Go's fmt "%.{prec}f": correctly rounded, exact ties to even (JS toFixed rounds ties up). */
export function goFixed(x: number, prec: number): string {
  const js = x.toFixed(prec);
  if (!Number.isFinite(x) || x === 0) return js;
  f64[0] = Math.abs(x);
  const bits = u64[0] ?? 0n;
  const e = Number((bits >> 52n) & 0x7ffn);
  const f = bits & ((1n << 52n) - 1n);
  const mant = e === 0 ? f : f | (1n << 52n);
  const exp = e === 0 ? -1074 : e - 1075;
  if (exp >= 0) return js; // an integer: no tie possible
  const k = -exp; // |x| = mant * 5^k / 10^k exactly
  if (k <= prec) return js;
  const n = mant * 5n ** BigInt(k);
  const drop = 10n ** BigInt(k - prec);
  const rem = n % drop;
  if (rem !== 5n * (drop / 10n)) return js; // not an exact tie: toFixed is already right
  let q = n / drop;
  if (q % 2n === 1n) q += 1n;
  let digits = q.toString().padStart(prec + 1, "0");
  if (prec > 0) digits = `${digits.slice(0, -prec)}.${digits.slice(-prec)}`;
  return (x < 0 ? "-" : "") + digits;
}

const KB = 1000;
const MB = KB * 1000;
const GB = MB * 1000;
const TB = GB * 1000;

/** format.HumanBytes: decimal units, one decimal below 10 unless whole ("3.8 GB", "986 MB", "1 GB"). */
export function humanBytes(b: number): string {
  let value: number;
  let unit: string;
  if (b >= TB) [value, unit] = [b / TB, "TB"];
  else if (b >= GB) [value, unit] = [b / GB, "GB"];
  else if (b >= MB) [value, unit] = [b / MB, "MB"];
  else if (b >= KB) [value, unit] = [b / KB, "KB"];
  else return `${Math.trunc(b)} B`;
  if (value >= 10) return `${Math.trunc(value)} ${unit}`;
  if (value !== Math.trunc(value)) return `${goFixed(value, 1)} ${unit}`;
  return `${Math.trunc(value)} ${unit}`;
}

/** format.HumanNumber: "7B", "1.5B", "133.70M", "12K", "999". */
export function humanNumber(b: number): string {
  if (b >= 1e9) {
    const n = b / 1e9;
    return n === Math.floor(n) ? `${goFixed(n, 0)}B` : `${goFixed(n, 1)}B`;
  }
  if (b >= 1e6) {
    const n = b / 1e6;
    return n === Math.floor(n) ? `${goFixed(n, 0)}M` : `${goFixed(n, 2)}M`;
  }
  if (b >= 1e3) return `${goFixed(b / 1e3, 0)}K`;
  return String(Math.trunc(b));
}

/** format/time.go humanDuration, for a positive span in milliseconds. */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < 1) return "Less than a second";
  if (seconds === 1) return "1 second";
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.trunc(ms / 60_000);
  if (minutes === 1) return "About a minute";
  if (minutes < 60) return `${minutes} minutes`;
  const hoursExact = ms / 3_600_000;
  const hours = Math.round(hoursExact);
  if (hours === 1) return "About an hour";
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.trunc(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.trunc(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24 / 30)} months`;
  return `${Math.trunc(Math.trunc(hoursExact) / 24 / 365)} years`;
}

/** True for a missing, unparseable or Go zero time ("0001-01-01T00:00:00Z"). */
export function isZeroTime(t: string | Date | undefined): boolean {
  if (t === undefined || t === "") return true;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) || new Date(ms).getUTCFullYear() <= 1;
}

/** format.HumanTime: "4 minutes ago", "About an hour from now", "Forever" (>20 years ahead), zeroValue. */
export function humanTime(t: string | Date | undefined, zeroValue: string, now: number = Date.now()): string {
  if (isZeroTime(t)) return zeroValue;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t as string);
  const delta = now - ms;
  if (Math.trunc(Math.trunc(Math.trunc(delta / 3_600_000) / 24) / 365) < -20) return "Forever";
  if (delta < 0) return `${humanDuration(-delta)} from now`;
  return `${humanDuration(delta)} ago`;
}

/** Go's %g (strconv 'g', shortest): "8e+09", "1000", "0.5", "1e-05". */
export function goFloatG(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "+Inf" : "-Inf";
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const [mant = "0", expStr = "0"] = x.toExponential().split("e");
  const exp = Number(expStr);
  // shortest digits; %e when the exponent is < -4 or >= 6 (strconv's rule for shortest 'g')
  if (exp < -4 || exp >= 6) {
    const e = Math.abs(exp);
    return `${mant}e${exp < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  }
  return String(x);
}

/** Go's %v for JSON-decoded values (as in fmt.Sprintf("%v", any)). */
export function goValue(v: unknown): string {
  if (v === null || v === undefined) return "<nil>";
  if (typeof v === "number") return goFloatG(v);
  if (typeof v === "string") return v;
  if (typeof v === "boolean") return v ? "true" : "false";
  if (Array.isArray(v)) return `[${v.map(goValue).join(" ")}]`;
  if (typeof v === "object") {
    const entries = Object.keys(v as Record<string, unknown>)
      .sort()
      .map((k) => `${k}:${goValue((v as Record<string, unknown>)[k])}`);
    return `map[${entries.join(" ")}]`;
  }
  return String(v);
}

/** The --verbose block, exactly as api.Metrics.Summary prints it (lines for non-zero values only). */
export function formatSummary(m: Metrics): string {
  const lines: string[] = [];
  const total = m.total_duration ?? 0;
  const load = m.load_duration ?? 0;
  const pCount = m.prompt_eval_count ?? 0;
  const pDur = m.prompt_eval_duration ?? 0;
  const eCount = m.eval_count ?? 0;
  const eDur = m.eval_duration ?? 0;
  if (total > 0) lines.push(`total duration:       ${formatGoDuration(total)}`);
  if (load > 0) lines.push(`load duration:        ${formatGoDuration(load)}`);
  if (pCount > 0) lines.push(`prompt eval count:    ${pCount} token(s)`);
  if (pDur > 0) {
    lines.push(`prompt eval duration: ${formatGoDuration(pDur)}`);
    lines.push(`prompt eval rate:     ${goFixed(pCount / (pDur / 1e9), 2)} tokens/s`);
  }
  if (eCount > 0) lines.push(`eval count:           ${eCount} token(s)`);
  if (eDur > 0) {
    lines.push(`eval duration:        ${formatGoDuration(eDur)}`);
    lines.push(`eval rate:            ${goFixed(eCount / (eDur / 1e9), 2)} tokens/s`);
  }
  return lines.map((l) => l + "\n").join("");
}

/** Go's json.Marshal of a float32: the shortest decimal that reads back as the same float32. */
export function float32Json(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`json: unsupported value: ${x}`);
  const f = Math.fround(x);
  if (f === 0) return Object.is(f, -0) ? "-0" : "0";
  for (let p = 1; p <= 9; p++) {
    const n = Number(f.toPrecision(p));
    if (Math.fround(n) === f) return String(n);
  }
  return String(f);
}

/** `ollama run <embedding model>`: the vector as Go prints a []float32 with json.Marshal. */
export function formatEmbedding(vector: number[]): string {
  return `[${vector.map(float32Json).join(",")}]`;
}
