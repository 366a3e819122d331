// `npm run load-fault`: the load and fault suite (a script, not CI; docs/load-fault.md).
//
//   npm run load-fault -- [--part load|kill|disk] [--seconds 60] [--clients 64] [--seed 1]
//                         [--max-queue 16] [--p99-ms 50] [--rss-growth-mib 256] [--num-thread N]
//
// Runs the built daemon (`npm run build` first: the script runs dist/cli/main.js) against
// generated models and a local docker-registry on loopback; the disk part mounts a small tmpfs
// (it needs root). Prints a table of checks and exits 1 if any failed.
import { parseArgs } from "node:util";
import { runDisk } from "./load-fault/disk.js";
import { runKill } from "./load-fault/kill.js";
import { runLoad } from "./load-fault/load.js";
import { checksTable, type Check, type Checks } from "./load-fault/report.js";

const PARTS = ["load", "kill", "disk"] as const;
type Part = (typeof PARTS)[number];

function options() {
  const { values: v } = parseArgs({
    options: {
      part: { type: "string", multiple: true },
      seconds: { type: "string", default: "60" },
      clients: { type: "string", default: "64" },
      seed: { type: "string", default: "1" },
      "max-queue": { type: "string", default: "16" },
      "p99-ms": { type: "string", default: "50" },
      "rss-growth-mib": { type: "string", default: "256" },
      "num-thread": { type: "string" },
    },
  });
  const num = (name: string, text: string, min: number): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(text)}`);
    return n;
  };
  const parts = (v.part ?? [...PARTS]).map((p) => {
    if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--part must be one of ${PARTS.join(", ")}, got ${JSON.stringify(p)}`);
    return p as Part;
  });
  return {
    parts,
    seconds: num("seconds", v.seconds, 1),
    clients: num("clients", v.clients, 1),
    seed: num("seed", v.seed, 0),
    maxQueue: num("max-queue", v["max-queue"], 0),
    p99TargetMs: num("p99-ms", v["p99-ms"], 1),
    rssGrowthLimitMiB: num("rss-growth-mib", v["rss-growth-mib"], 1),
    numThread: v["num-thread"] === undefined ? undefined : num("num-thread", v["num-thread"], 1),
  };
}

let opts: ReturnType<typeof options>;
try {
  opts = options();
} catch (e) {
  console.error((e as Error).message);
  process.exit(2);
}
const log = (s: string) => console.log(s);
const checks: Check[] = [];
for (const part of opts.parts) {
  log(`== ${part}`);
  const t0 = Date.now();
  let c: Checks;
  if (part === "load") c = await runLoad({ ...opts, log });
  else if (part === "kill") c = await runKill({ log });
  else c = await runDisk({ log });
  checks.push(...c.list);
  log(`   (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}
log("");
log(checksTable(checks));
const failed = checks.filter((c) => c.verdict === "FAIL").length;
log("");
log(failed ? `${failed} check(s) failed` : "all checks passed");
process.exit(failed ? 1 : 0);
