// The daemon's own memory with no model: right after start; then after a model was created
// (its GGUF uploaded), loaded, used and unloaded (runners and the spare are other processes).
import { readRssMiB } from "../../bench-plan.js";
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { BenchDaemon, fmt, freshPrompt, sleep } from "../support.js";

async function run(ctx: CaseContext): Promise<Row[]> {
  const b = await BenchDaemon.start({}, {});
  const pid = b.d.proc.pid!;
  const rss = async () => (await readRssMiB(pid)) ?? NaN;
  let atStart: number;
  let created: number;
  const after: number[] = [];
  try {
    await sleep(2000);
    atStart = await rss();
    await b.create({ m: ctx.modelPath });
    await sleep(1000);
    created = await rss();
    for (let r = 0; r < ctx.rounds; r++) {
      await b.generate({ model: "m", prompt: freshPrompt(32), raw: true, keep_alive: 0, options: { num_predict: 8 } });
      await sleep(1000);
      after.push(await rss());
    }
  } finally {
    await b.stop();
  }
  ctx.log(`  daemon RSS (MiB): at start ${fmt(atStart, 1)}, after the model's upload and create ${fmt(created, 1)}, after each unload ${after.map((x) => fmt(x, 1)).join(", ")}`);
  const worst = Math.max(...after);
  return [
    { figure: "daemon RSS at start, no model (MiB)", daemon: atStart, target: "≤ 100", pass: atStart <= 100 },
    { figure: "daemon RSS after create, load and unload (MiB)", daemon: worst, target: "≤ 100", pass: worst <= 100, note: `after the upload alone ${fmt(created, 1)}` },
  ];
}

export const rssCase: BenchCase = { name: "rss", what: "the daemon's RSS with no model loaded", run };
