// A run's findings as classes (one bug reached by many cases is one entry), and the text that
// `npm run fuzz` and the CI test print.
import type { Finding, FuzzReport } from "./run.js";

export interface FindingClass {
  /** oracle | route or "gguf" @ step | message with numbers and quoted names blanked */
  key: string;
  cases: number[];
  example: Finding;
}

export function findingClasses(findings: readonly Finding[]): FindingClass[] {
  const groups = new Map<string, FindingClass>();
  for (const f of findings) {
    const msg = f.detail
      .split("\n")[0]!
      .replace(/sha256[:-][0-9a-f]{64}/g, "<digest>")
      .replace(/'[^']*'|"[^"]*"/g, "<name>")
      .replace(/\d+(\.\d+)?/g, "N")
      .slice(0, 90);
    const key = `${f.oracle} | ${f.title}${f.step ? ` @ ${f.step}` : ""} | ${msg}`;
    const g = groups.get(key) ?? { key, cases: [], example: f };
    g.cases.push(f.k);
    groups.set(key, g);
  }
  return [...groups.values()].sort((a, b) => b.cases.length - a.cases.length);
}

/** Each class with its cases, a command that reruns one, and an example. */
export function formatClasses(classes: readonly FindingClass[], seed: number): string {
  return classes
    .map((c) => {
      const shown = c.cases.slice(0, 12).join(", ") + (c.cases.length > 12 ? `, … (${c.cases.length})` : "");
      return [
        `[${c.cases.length}] ${c.key}`,
        `    cases: ${shown}; rerun one: npx tsx scripts/fuzz.ts --seed ${seed} --case ${c.cases[0]}`,
        `    e.g. case ${c.example.k}: ${c.example.detail.split("\n")[0]}`,
        `    edits: ${c.example.edits.join(" | ").slice(0, 300)}`,
      ].join("\n");
    })
    .join("\n\n");
}

/** The designed 5xx answers seen, grouped the same way (not findings: docs/fuzzing.md). */
export function formatDesigned(designed: FuzzReport["designed"]): string {
  const seen = new Map<string, number[]>();
  for (const d of designed) {
    const key = `${d.status} ${d.step}: ${d.message.replace(/\d+/g, "N").slice(0, 100)}`;
    seen.set(key, [...(seen.get(key) ?? []), d.k]);
  }
  return [...seen].map(([key, ks]) => `  [${ks.length}] ${key} (cases ${ks.slice(0, 8).join(", ")}${ks.length > 8 ? ", …" : ""})`).join("\n");
}
