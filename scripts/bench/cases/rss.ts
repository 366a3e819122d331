// The daemon's own memory with no model: right after start, and after a model was loaded,
// used and unloaded (the runner and the spare are other processes and not counted).
import { readRssMiB } from "../../bench-plan.js";
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { BenchDaemon, fmt, freshPrompt, sleep } from "../support.js";

async function run(ctx: CaseContext): Promise<Row[]> {
  const b = await BenchDaemon.start({}, { m: ctx.modelPath });
  const pid = b.d.proc.pid!;
  const seen: number[] = [];
  try {
    await sleep(2000);
    seen.push((await readRssMiB(pid)) ?? NaN);
    for (let r = 0; r < ctx.rounds; r++) {
      await b.generate({ model: "m", prompt: freshPrompt(32), raw: true, keep_alive: 0, options: { num_predict: 8 } });
      await sleep(1000);
      seen.push((await readRssMiB(pid)) ?? NaN);
    }
  } finally {
    await b.stop();
  }
  ctx.log(`  daemon RSS (MiB): at start ${fmt(seen[0]!, 1)}, after each unload ${seen.slice(1).map((x) => fmt(x, 1)).join(", ")}`);
  const worst = Math.max(...seen);
  return [{ figure: "daemon RSS with no model, MiB (the larger of at start and after unloads)", daemon: worst, target: "≤ 100", pass: worst <= 100 }];
}

export const rssCase: BenchCase = { name: "rss", what: "the daemon's RSS with no model loaded", run };
