// `npm run fuzz`: the seeded request and GGUF fuzzer (docs/fuzzing.md).
//
//   tsx scripts/fuzz.ts [--cases 10000] [--seed 1] [--from 0] [--only gguf|request] [--url http://127.0.0.1:11434]
//                       [--base ARCH]   crafted GGUFs made from another test model (mamba, jamba, bert, qwen3, …)
//                       [--skip K,K,...] [--deadline-ms 30000] [--json report.json]
//   tsx scripts/fuzz.ts --case K [--seed 1]    rerun case K alone and print exactly what was sent
//
// Case K of seed S is the same case on every run, whatever ran before it. Without --url the
// fuzzer builds nothing: run `npm run build` first (it starts dist/cli/main.js serve).
// Exits 1 when any oracle failed.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { ARCHITECTURES, REPO_ROOT, type Architecture } from "./make-test-model.js";
import { findingClasses, formatClasses, formatDesigned } from "./fuzz/report.js";
import { runFuzz, type FuzzOptions } from "./fuzz/run.js";

function int(name: string, v: string | undefined, d: number): number {
  if (v === undefined) return d;
  if (!/^\d+$/.test(v)) throw new Error(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

const { values: v } = parseArgs({
  options: {
    cases: { type: "string" },
    seed: { type: "string" },
    from: { type: "string" },
    case: { type: "string" },
    only: { type: "string" },
    skip: { type: "string" },
    url: { type: "string" },
    "deadline-ms": { type: "string" },
    json: { type: "string" },
    base: { type: "string" },
  },
});

try {
  if (v.only !== undefined && v.only !== "gguf" && v.only !== "request") throw new Error("--only must be gguf or request");
  if (v.base !== undefined && !ARCHITECTURES.includes(v.base as Architecture)) throw new Error(`--base must be one of ${ARCHITECTURES.join(", ")}`);
  const one = v.case !== undefined ? int("case", v.case, 0) : undefined;
  const seed = int("seed", v.seed, 1);
  const opts: FuzzOptions = {
    seed,
    from: one ?? int("from", v.from, 0),
    cases: one !== undefined ? 1 : int("cases", v.cases, 10_000),
    deadlineMs: int("deadline-ms", v["deadline-ms"], 30_000),
    ...(v.url ? { url: v.url } : {}),
    ...(v.only ? { only: v.only as "gguf" | "request" } : {}),
    ...(v.base ? { base: v.base as Architecture } : {}),
    ...(v.skip ? { skip: new Set(v.skip.split(",").map((x) => int("skip", x.trim(), 0))) } : {}),
    ...(one !== undefined ? { verbose: true, dumpDir: path.join(REPO_ROOT, ".cache", "fuzz", `seed-${seed}`) } : {}),
  };
  const report = await runFuzz(opts);
  const classes = findingClasses(report.findings);
  console.log(`\n${report.ran} cases (seed ${report.seed}, from ${report.from}) in ${Math.round(report.ms / 1000)} s: ${report.findings.length} findings in ${classes.length} classes, ${report.restarts} daemon restarts`);
  if (classes.length) console.log(`\n${formatClasses(classes, seed)}`);
  if (report.designed.length) console.log(`\ndesigned 5xx answers (not findings):\n${formatDesigned(report.designed)}`);
  const counts = Object.entries(report.statuses).filter(([k]) => k.startsWith("gguf")).sort();
  if (counts.length) console.log(`\ngguf answers: ${counts.map(([k, n]) => `${k.slice(5)}: ${n}`).join(", ")}`);
  if (v.json) await writeFile(v.json, JSON.stringify({ ...report, classes: classes.map((c) => ({ key: c.key, cases: c.cases })) }, null, 1));
  process.exitCode = report.findings.length ? 1 : 0;
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 2;
}
