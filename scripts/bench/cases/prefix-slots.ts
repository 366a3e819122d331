// A ~1,000-token prefix asked about again after unrelated prompts took every slot
// (OLLAMA_NUM_PARALLEL=4): its first token against the cold one's. A fresh prefix every round.
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { BenchDaemon, fmt, freshPrompt, median } from "../support.js";

const SLOTS = 4;
const CONTEXT = 2048;

async function run(ctx: CaseContext): Promise<Row[]> {
  const prefixTokens = ctx.quick ? 300 : 1000;
  const b = await BenchDaemon.start({ OLLAMA_NUM_PARALLEL: String(SLOTS) }, { m: ctx.modelPath });
  const ratios: number[] = [];
  const again: number[] = [];
  const ask = async (prompt: string) => {
    const g = await b.generate({ model: "m", prompt, raw: true, keep_alive: "10m", options: { num_ctx: CONTEXT, num_predict: 4, temperature: 0 } });
    return g.tFirst - g.tSent;
  };
  try {
    await ask(freshPrompt(16)); // load and warm up
    for (let r = 0; r < ctx.rounds; r++) {
      const prefix = freshPrompt(prefixTokens);
      const cold = await ask(`${prefix} question water`);
      await Promise.all(Array.from({ length: SLOTS }, () => ask(freshPrompt(64))));
      const warm = await ask(`${prefix} question river`);
      ratios.push(warm / cold);
      again.push(warm);
      ctx.log(`  round ${r + 1}: cold ${fmt(cold, 0)} ms, after ${SLOTS} unrelated prompts took every slot ${fmt(warm, 0)} ms (${fmt(warm / cold, 4)})`);
    }
  } finally {
    await b.stop();
  }
  const ratio = median(ratios);
  return [{ figure: `prefix of ${prefixTokens} tokens after ${SLOTS} unrelated prompts took all ${SLOTS} slots: first token / cold`, daemon: median(again), value: ratio, target: "≤ 0.01", pass: ratio <= 0.01 }];
}

export const prefixSlotsCase: BenchCase = { name: "prefix-slots", what: "a 1,000-token prefix again after every slot was taken (NUM_PARALLEL=4)", run };
