// The load/fault suite's verdicts: each part returns named checks (an oracle, pass or fail, and
// what was measured) and figures; the entry point prints them as one table and exits non-zero
// when a check failed.

export interface Check {
  part: string;
  name: string;
  /** "skip": could not be run here (e.g. no permission to mount); printed, not a failure. */
  verdict: "pass" | "FAIL" | "skip";
  detail: string;
}

export class Checks {
  readonly list: Check[] = [];

  constructor(private readonly part: string) {}

  add(name: string, ok: boolean, detail: string): boolean {
    this.list.push({ part: this.part, name, verdict: ok ? "pass" : "FAIL", detail });
    return ok;
  }

  skip(name: string, detail: string): void {
    this.list.push({ part: this.part, name, verdict: "skip", detail });
  }

  /** Runs `fn`; a throw becomes a failed check instead of ending the part. */
  async step(name: string, fn: () => Promise<string>): Promise<boolean> {
    try {
      return this.add(name, true, await fn());
    } catch (e) {
      return this.add(name, false, e instanceof Error ? e.message : String(e));
    }
  }
}

/** Nearest-rank percentile (p in [0, 100]) of unsorted samples; NaN when there are none. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1]!;
}

export const ms = (x: number): string => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(1) : x.toFixed(0)} ms` : "n/a");
export const mib = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(0)} MiB` : "n/a");

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  ")).join("\n");
}

export function checksTable(checks: readonly Check[]): string {
  return table([["part", "check", "verdict", "measured"], ...checks.map((c) => [c.part, c.name, c.verdict, c.detail])]);
}
