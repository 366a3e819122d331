// A strict reader of the Prometheus text exposition format (0.0.4), for tests that scrape
// /metrics. Ours, because the one npm parser (parse-prometheus-text-format 1.1.1) drops the labels,
// sum and count of every histogram with a label besides `le`, which is every histogram we have.
// Strict means it throws on what Prometheus' own parser refuses (a malformed line, a bad name or
// escape, TYPE after samples, a family split in two, a duplicate series, a histogram without its
// +Inf bucket or with buckets that do not add up), and `problems()` lists breaches of Prometheus'
// naming conventions on top.

export interface Sample {
  /** The sample's own name (`x_bucket`, `x_sum`, … for a histogram's parts). */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string | undefined;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  samples: Sample[];
}

export interface Histogram {
  count: number;
  sum: number;
  /** Upper bound ("+Inf" included) → cumulative count. */
  buckets: Map<string, number>;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** A value as Go's strconv.ParseFloat reads it (Prometheus' parser): Inf and NaN in any case. */
function parseValue(s: string, line: string): number {
  if (/^\+?inf(inity)?$/i.test(s)) return Infinity;
  if (/^-inf(inity)?$/i.test(s)) return -Infinity;
  if (/^nan$/i.test(s)) return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) throw new Error(`bad value ${JSON.stringify(s)} in: ${line}`);
  return Number(s);
}

/** `{a="1",b="x\"y"}` at the start of s → the labels and the rest of the line. */
function parseLabels(s: string, line: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  const fail = (why: string) => new Error(`${why} in: ${line}`);
  for (;;) {
    if (s[i] === "}") return { labels, rest: s.slice(i + 1) };
    const eq = s.indexOf("=", i);
    if (eq < 0) throw fail("label without =");
    const name = s.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw fail(`bad label name ${JSON.stringify(name)}`);
    if (Object.hasOwn(labels, name)) throw fail(`label ${name} twice`);
    if (s[eq + 1] !== '"') throw fail("label value not quoted");
    let value = "";
    let j = eq + 2;
    for (;;) {
      const c = s[j];
      if (c === undefined) throw fail("unterminated label value");
      if (c === '"') break;
      if (c === "\\") {
        const e = s[j + 1];
        if (e === "\\" || e === '"') value += e;
        else if (e === "n") value += "\n";
        else throw fail(`bad escape \\${e ?? ""}`);
        j += 2;
        continue;
      }
      value += c;
      j++;
    }
    labels[name] = value;
    i = j + 1;
    if (s[i] === ",") i++;
    else if (s[i] !== "}") throw fail("expected , or } after a label");
  }
}

function familyOf(sampleName: string, families: Map<string, Family>): Family | undefined {
  const own = families.get(sampleName);
  if (own) return own;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!sampleName.endsWith(suffix)) continue;
    const f = families.get(sampleName.slice(0, -suffix.length));
    if (f && (f.type === "histogram" || (f.type === "summary" && suffix !== "_bucket"))) return f;
  }
  return undefined;
}

const seriesKey = (s: Sample) => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;

/** Buckets ascending and cumulative, +Inf present and equal to _count, one _sum: per series. */
function checkHistogram(f: Family): void {
  const series = new Map<string, Sample[]>();
  for (const s of f.samples) {
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    series.set(key, [...(series.get(key) ?? []), s]);
  }
  for (const [key, samples] of series) {
    const buckets = samples.filter((s) => s.name === `${f.name}_bucket`);
    const count = samples.find((s) => s.name === `${f.name}_count`);
    const sum = samples.find((s) => s.name === `${f.name}_sum`);
    if (buckets.some((b) => b.labels.le === undefined)) throw new Error(`${f.name}${key}: a bucket without le`);
    const inf = buckets.find((b) => b.labels.le === "+Inf");
    if (!inf || !count || !sum) throw new Error(`${f.name}${key}: needs an +Inf bucket, _sum and _count`);
    if (inf.value !== count.value) throw new Error(`${f.name}${key}: +Inf bucket ${inf.value} != _count ${count.value}`);
    let le = -Infinity;
    let n = 0;
    for (const b of buckets) {
      const bound = parseValue(b.labels.le as string, f.name);
      if (bound <= le) throw new Error(`${f.name}${key}: bucket le=${b.labels.le} not above the one before`);
      if (b.value < n) throw new Error(`${f.name}${key}: bucket le=${b.labels.le} holds fewer than the one before`);
      le = bound;
      n = b.value;
    }
  }
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const closed = new Set<string>(); // families whose group of lines has ended
  let current: Family | undefined;
  const seen = new Set<string>();
  const open = (name: string): Family => {
    if (!METRIC_NAME.test(name)) throw new Error(`bad metric name ${JSON.stringify(name)}`);
    let f = families.get(name);
    if (f && closed.has(name)) throw new Error(`${name}: its lines are not in one group`);
    if (!f) {
      f = { name, help: undefined, type: "untyped", samples: [] };
      families.set(name, f);
    }
    if (current && current !== f) closed.add(current.name);
    current = f;
    return f;
  };
  if (text !== "" && !text.endsWith("\n")) throw new Error("the text does not end with a newline");
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const meta = /^#\s*(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
    if (meta) {
      const [, kind, name, rest = ""] = meta as unknown as [string, string, string, string | undefined];
      const f = open(name);
      if (kind === "HELP") {
        if (f.help !== undefined) throw new Error(`${name}: HELP twice`);
        if (/\\[^\\n]/.test(rest.replace(/\\\\/g, ""))) throw new Error(`${name}: bad escape in HELP`);
        f.help = rest.replace(/\\(\\|n)/g, (_m, e: string) => (e === "n" ? "\n" : "\\"));
      } else {
        if (!TYPES.has(rest)) throw new Error(`${name}: unknown TYPE ${JSON.stringify(rest)}`);
        if (f.samples.length > 0) throw new Error(`${name}: TYPE after its samples`);
        if (f.type !== "untyped") throw new Error(`${name}: TYPE twice`);
        f.type = rest as Family["type"];
      }
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(.*)$/.exec(line);
    if (!m) throw new Error(`not a sample: ${line}`);
    const name = m[1] as string;
    let rest = m[2] as string;
    let labels: Record<string, string> = {};
    if (rest.startsWith("{")) ({ labels, rest } = parseLabels(rest, line));
    const parts = rest.trim().split(/[ \t]+/);
    if (!/^[ \t]/.test(rest) || parts.length < 1 || parts.length > 2) throw new Error(`not a sample: ${line}`);
    const value = parseValue(parts[0] as string, line);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`bad timestamp in: ${line}`);
    const f = (current && familyOf(name, new Map([[current.name, current]]))) ?? familyOf(name, families) ?? open(name);
    if (f !== current) open(f.name);
    const sample = { name, labels, value };
    const key = seriesKey(sample);
    if (seen.has(key)) throw new Error(`duplicate series: ${line}`);
    seen.add(key);
    f.samples.push(sample);
  }
  for (const f of families.values()) if (f.type === "histogram") checkHistogram(f);
  return families;
}

function matches(sample: Sample, labels: Record<string, string>): boolean {
  return Object.entries(labels).every(([k, v]) => (sample.labels[k] ?? "") === v);
}

export class Scrape {
  readonly families: Map<string, Family>;
  constructor(readonly text: string) {
    this.families = parsePrometheusText(text);
  }

  family(name: string): Family {
    const f = this.families.get(name);
    if (!f) throw new Error(`no metric ${name} in the scrape`);
    return f;
  }

  /** The samples of a counter or gauge whose labels include `labels` ("" matches an absent label). */
  samples(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.family(name).samples.filter((s) => s.name === name && matches(s, labels));
  }

  /** The sum of the matching samples' values (0 when none match). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples(name, labels).reduce((n, s) => n + s.value, 0);
  }

  /** The matching series of a histogram, added together. */
  histogram(name: string, labels: Record<string, string> = {}): Histogram {
    const f = this.family(name);
    if (f.type !== "histogram") throw new Error(`${name} is a ${f.type}, not a histogram`);
    const out: Histogram = { count: 0, sum: 0, buckets: new Map() };
    for (const s of f.samples.filter((x) => matches(x, labels))) {
      if (s.name === `${name}_count`) out.count += s.value;
      else if (s.name === `${name}_sum`) out.sum += s.value;
      else if (s.labels.le !== undefined) out.buckets.set(s.labels.le, (out.buckets.get(s.labels.le) ?? 0) + s.value);
    }
    return out;
  }

  /** Breaches of Prometheus' naming conventions among the families under `prefix`; [] when none. */
  problems(prefix: string): string[] {
    const out: string[] = [];
    for (const f of this.families.values()) {
      if (!f.name.startsWith(prefix)) {
        // the runtime's metrics (prom-client's defaults) keep their usual names
        if (!/^(process|nodejs)_/.test(f.name)) out.push(`${f.name}: not under ${prefix}`);
        continue;
      }
      if (!f.help) out.push(`${f.name}: no HELP`);
      if (f.type === "untyped") out.push(`${f.name}: no TYPE`);
      if (f.type === "counter" && !f.name.endsWith("_total")) out.push(`${f.name}: a counter not ending in _total`);
      if (f.type !== "counter" && f.name.endsWith("_total")) out.push(`${f.name}: _total on a ${f.type}`);
      if (/_(milliseconds|ms|microseconds|minutes|hours|kilobytes|megabytes|gigabytes|percent)(_|$)/.test(f.name)) out.push(`${f.name}: not in base units`);
      if (f.type === "histogram" && !/_(seconds|bytes|second|tokens)$/.test(f.name)) out.push(`${f.name}: a histogram without a unit`);
    }
    return out;
  }
}
