// `npm run bench`: the daemon against the engine at its best (plain node-llama-cpp with its
// defaults), one case after another, ending with one table of every figure against its target.
//
//   npm run bench                          every case (the 1B-shaped Q4_0 test model)
//   npm run bench -- --only engine,busy    some cases
//   npm run bench -- --rounds 5            rounds per measurement (default 3)
//   npm run bench -- --quick               short prompts and generations: checks that cases run
//   npm run bench -- --list                the cases
//   flags: --model PATH, --model2 PATH (switch case), --busy N (busy case),
//          --prompt-tokens 256,1024,4096 (engine case), --json PATH
//
// Targets are reported, never enforced: a case that fails is recorded and the others still run.
// Results go to .cache/bench-latest.json (and --json PATH).
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { makeTestModel } from "../make-test-model.js";
import { REPO } from "../../test/helpers/daemon.js";
import { busyCase } from "./cases/busy.js";
import { cliCase, kvCase, parallelCase, prefixCase, pullCase, remoteCase } from "./cases/earlier.js";
import { engineCase } from "./cases/engine.js";
import { threadsCase } from "./cases/threads.js";
import { loadCase, switchCase } from "./cases/load.js";
import { spareStartCase } from "./cases/spare-start.js";
import { prefixSlotsCase } from "./cases/prefix-slots.js";
import { rssCase } from "./cases/rss.js";
import { metricsCase } from "./cases/metrics.js";
import { speculativeCase } from "./cases/speculative.js";
import type { BenchCase, CaseContext, Row } from "./registry.js";
import { waitForQuiet } from "../bench-plan.js";
import { fmt } from "./support.js";

/** Other processes' CPU (cores) under which the machine counts as quiet before a case. */
const QUIET_CORES = 0.15;

export const CASES: BenchCase[] = [engineCase, threadsCase, busyCase, loadCase, switchCase, spareStartCase, prefixSlotsCase, rssCase, parallelCase, prefixCase, kvCase, pullCase, remoteCase, cliCase, metricsCase, speculativeCase];

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      only: { type: "string" },
      rounds: { type: "string" },
      quick: { type: "boolean" },
      list: { type: "boolean" },
      model: { type: "string" },
      model2: { type: "string" },
      busy: { type: "string" },
      "prompt-tokens": { type: "string" },
      json: { type: "string" },
    },
  });
  const names = values.only?.split(",").map((s) => s.trim()).filter(Boolean) ?? CASES.map((c) => c.name);
  for (const n of names) if (!CASES.some((c) => c.name === n)) throw new Error(`unknown case "${n}"; --list shows them`);
  const positive = (v: string | undefined, flag: string, dflt: number) => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a whole number of at least 1`);
    return n;
  };
  return {
    cases: CASES.filter((c) => names.includes(c.name)),
    rounds: positive(values.rounds, "--rounds", values.quick ? 1 : 3),
    quick: values.quick === true,
    list: values.list === true,
    model: values.model,
    model2: values.model2,
    busy: positive(values.busy, "--busy", 1),
    promptTokens: (values["prompt-tokens"] ?? (values.quick ? "256" : "256,1024,4096")).split(",").map((s) => positive(s.trim(), "--prompt-tokens", 256)),
    json: values.json,
  };
}

function table(rows: Row[]): string {
  const head = ["figure", "daemon", "direct", "ratio / diff", "target", "verdict", "others (cores)"];
  const body = rows.map((r) => [
    r.figure,
    r.daemon === undefined ? "" : fmt(r.daemon),
    r.direct === undefined ? "" : fmt(r.direct),
    r.value === undefined ? "" : fmt(r.value, 3) + (r.note ? ` (${r.note})` : ""),
    r.target ?? "",
    r.pass === undefined ? "-" : r.pass ? "PASS" : "MISS",
    r.foreign === undefined ? "" : fmt(r.foreign),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  if (args.list) {
    for (const c of CASES) console.log(`${c.name.padEnd(14)} ${c.what}`);
    return;
  }
  const modelPath = args.model ?? (await makeTestModel({ shape: "1b", type: "Q4_0", seed: 1 }));
  let second: Promise<string> | undefined;
  const ctx: CaseContext = {
    rounds: args.rounds,
    quick: args.quick,
    modelPath,
    model2Path: () => (second ??= args.model2 ? Promise.resolve(args.model2) : makeTestModel({ shape: "1b", type: "Q4_0", seed: 2 })),
    busy: args.busy,
    promptTokens: args.promptTokens,
    log: (line) => console.log(line),
  };
  const started = Date.now();
  const results: Array<{ case: string; rows: Row[]; error?: string; seconds: number }> = [];
  console.log(`bench: ${args.cases.map((c) => c.name).join(", ")}; ${args.rounds} round(s); model ${path.basename(modelPath)}; ${os.availableParallelism()} cores; load average ${os.loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  let patient = true;
  for (const c of args.cases) {
    console.log(`\n== ${c.name}: ${c.what}`);
    // A busy machine is a case's own choice (busy, --busy), never the leftovers of the one before;
    // on a machine that stays busy (measuring under a user's load) only the first case waits.
    const quiet = await waitForQuiet(["self"], patient ? 30_000 : 0, QUIET_CORES);
    if (quiet.foreign >= QUIET_CORES) patient = false;
    console.log(`  other processes ${fmt(quiet.foreign)} cores after ${fmt(quiet.waitedMs / 1000, 0)} s${quiet.foreign >= QUIET_CORES ? " (not quiet: going on)" : ""}`);
    const t0 = Date.now();
    try {
      results.push({ case: c.name, rows: await c.run(ctx), seconds: (Date.now() - t0) / 1000 });
    } catch (err) {
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      console.log(`  FAILED: ${message}`);
      results.push({ case: c.name, rows: [], error: message, seconds: (Date.now() - t0) / 1000 });
    }
  }
  const rows = results.flatMap((r) => r.rows.map((row) => ({ ...row, figure: `${r.case}: ${row.figure}` })));
  console.log(`\n${table(rows)}`);
  for (const r of results.filter((x) => x.error)) console.log(`case ${r.case} failed: ${r.error?.split("\n")[0]}`);
  const out = { date: new Date().toISOString(), seconds: (Date.now() - started) / 1000, cores: os.availableParallelism(), loadavg: os.loadavg(), rounds: args.rounds, quick: args.quick, model: modelPath, results };
  await mkdir(path.join(REPO, ".cache"), { recursive: true });
  for (const file of [path.join(REPO, ".cache/bench-latest.json"), ...(args.json ? [path.resolve(args.json)] : [])]) await writeFile(file, JSON.stringify(out, null, 2));
  console.log(`\n${((Date.now() - started) / 1000).toFixed(0)} s; results in .cache/bench-latest.json`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
