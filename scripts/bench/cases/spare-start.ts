// "spare-start": a prompt sent while the daemon's next spare runner is starting (its start takes
// ~1.6 s of CPU: node-llama-cpp's import and its binary test) against the same size of prompt once
// that spare is ready. A load takes the spare; the next one starts when the runner has been idle
// a second; this prompt comes 300 ms into that start, as a user's next request might.
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { BenchDaemon, fmt, freshPrompt, median, sleep } from "../support.js";
import { sparePids } from "../../../test/helpers/daemon.js";

const OPTIONS = { num_ctx: 2048, num_predict: 8, temperature: 0 };
/** How far into the new spare's start the prompt comes. */
const INTO_START_MS = 300;

async function promptRate(b: BenchDaemon, tokens: number): Promise<number> {
  const g = await b.generate({ model: "m", prompt: freshPrompt(tokens), raw: true, keep_alive: "10m", options: OPTIONS });
  const f = g.final as { prompt_eval_count: number; prompt_eval_duration: number };
  return f.prompt_eval_count / (f.prompt_eval_duration / 1e9);
}

async function run(ctx: CaseContext): Promise<Row[]> {
  const tokens = ctx.quick ? 64 : 256;
  const b = await BenchDaemon.start({}, { m: ctx.modelPath });
  const starting: number[] = [];
  const ready: number[] = [];
  try {
    for (let r = 0; r < ctx.rounds; r++) {
      await b.generate({ model: "m", prompt: "", keep_alive: 0 });
      await b.spareReady();
      await b.generate({ model: "m", prompt: "", keep_alive: "10m", options: OPTIONS }); // takes the spare
      const [taken] = await sparePids(b.d.proc.pid!);
      for (let i = 0; i < 500; i++) {
        const now = await sparePids(b.d.proc.pid!);
        if (now.length > 0 && now[0] !== taken) break;
        await sleep(10);
      }
      await sleep(INTO_START_MS);
      starting.push(await promptRate(b, tokens));
      await b.spareReady();
      await sleep(1500);
      ready.push(await promptRate(b, tokens));
      ctx.log(`  round ${r + 1}: prompt eval while the spare starts ${fmt(starting.at(-1)!, 1)} tok/s, with it ready ${fmt(ready.at(-1)!, 1)} tok/s`);
    }
  } finally {
    await b.stop();
  }
  const ratio = median(starting.map((x, i) => x / ready[i]!));
  return [
    {
      figure: `prompt eval (${tokens} tokens) while the next spare runner starts ÷ with it ready`,
      daemon: median(starting),
      direct: median(ready),
      value: ratio,
      target: "≥ 0.9",
      pass: ratio >= 0.9,
    },
  ];
}

export const spareStartCase: BenchCase = { name: "spare-start", what: "a prompt while the next spare runner starts vs with it ready", run };
