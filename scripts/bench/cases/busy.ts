// Decode on a busy machine: `--busy` processes (default 1) each keep a core busy while the
// daemon and plain node-llama-cpp (one thread per core, as it is configured on an idle machine)
// decode the same prompt in turns; and the same pair with nothing else running, in the same
// round, for the quiet figure.
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { Direct } from "../direct.js";
import { BenchDaemon, BusyProcesses, ForeignLoad, fmt, freshPrompt, median, sleep } from "../support.js";
import { daemonOptions, ratioRow } from "./engine.js";

const CONTEXT = 2048;
/** Time the busy processes run before a measurement, so both sides start under the same load. */
const SETTLE_MS = 1500;

async function daemonDecode(b: BenchDaemon, prompt: string, predict: number): Promise<number> {
  await sleep(1000); // as in the engine case: the other side's run has ended a moment ago
  const g = await b.generate({ model: "m", prompt, raw: true, keep_alive: "10m", options: daemonOptions(CONTEXT, predict) });
  const n = (g.final as { eval_count: number }).eval_count;
  return (n - 1) / (((g.chunkTimes.at(-1) ?? g.tFirst) - g.tFirst) / 1000);
}

async function directDecode(d: Direct, prompt: string, predict: number): Promise<number> {
  await sleep(1000);
  const c = await d.complete(prompt, predict);
  return (c.tokens - 1) / ((c.tLast - c.tFirst) / 1000);
}

async function run(ctx: CaseContext): Promise<Row[]> {
  const predict = ctx.quick ? 16 : 64;
  const b = await BenchDaemon.start({}, { m: ctx.modelPath });
  const d = Direct.start();
  const load = new ForeignLoad(async () => [...(await b.pids()), d.pid]);
  const quiet = { daemon: [] as number[], direct: [] as number[], foreign: [] as number[] };
  const busy = { daemon: [] as number[], direct: [] as number[] };
  try {
    await d.open(ctx.modelPath, CONTEXT);
    const warm = freshPrompt(32);
    await daemonDecode(b, warm, 4);
    await directDecode(d, warm, 4);
    for (let r = 0; r < ctx.rounds; r++) {
      const prompt = freshPrompt(32);
      const pair = async (into: { daemon: number[]; direct: number[] }) => {
        const sides = [async () => into.daemon.push(await daemonDecode(b, prompt, predict)), async () => into.direct.push(await directDecode(d, prompt, predict))];
        for (const side of r % 2 === 0 ? sides : sides.reverse()) await side();
      };
      await load.begin();
      await pair(quiet);
      quiet.foreign.push(await load.end());
      const procs = new BusyProcesses(ctx.busy);
      try {
        await sleep(SETTLE_MS);
        await pair(busy);
      } finally {
        await procs.stop();
      }
      ctx.log(
        `  round ${r + 1}: quiet ${fmt(quiet.daemon.at(-1)!)} / ${fmt(quiet.direct.at(-1)!)} tok/s (other processes ${fmt(quiet.foreign.at(-1)!)} cores), ` +
          `with ${ctx.busy} busy ${fmt(busy.daemon.at(-1)!)} / ${fmt(busy.direct.at(-1)!)} tok/s (daemon / direct)`,
      );
      await sleep(500);
    }
  } finally {
    await d.stop();
    await b.stop();
  }
  const q = { daemon: median(quiet.daemon), direct: median(quiet.direct) };
  const u = { daemon: median(busy.daemon), direct: median(busy.direct) };
  return [
    ratioRow("decode, quiet (tok/s)", q.daemon, q.direct, undefined, median(quiet.foreign)),
    ratioRow(`decode with ${ctx.busy} busy process(es) (tok/s)`, u.daemon, u.direct, "≥ 0.9"),
    { figure: "busy / quiet decode, daemon", value: u.daemon / q.daemon, target: "≥ 0.4", pass: u.daemon / q.daemon >= 0.4 },
    { figure: "busy / quiet decode, direct", value: u.direct / q.direct },
  ];
}

export const busyCase: BenchCase = {
  name: "busy",
  what: "decode with busy processes on the machine, daemon vs plain node-llama-cpp under the same load",
  run,
};
