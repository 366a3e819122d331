// `tsx scripts/bench-two-models.ts`: decode speed of the 1B-shape model alone, then while a second
// (small) model decodes at the same time in the same daemon, to see the thread budget at work
// (src/daemon/scheduler/threads.ts): without it both runners use every core and their spinning
// threads stall each other. Not part of `npm run bench`; figures in docs/performance.md.
import { createModelFromFile, startDaemon } from "../test/helpers/daemon.js";
import { makeTestModel } from "./make-test-model.js";

const big = await makeTestModel({ shape: "1b", type: "Q4_0", seed: 1 });
const small = await makeTestModel({ shape: "small", type: "F16", seed: 1 });
const d = await startDaemon({ OLLAMA_MAX_LOADED_MODELS: "2", OLLAMA_NUM_PARALLEL: "1" });
try {
  for (const [name, file] of [["big", big], ["small", small]] as const) await (await createModelFromFile(d.url, name, file)).text();
  const gen = async (model: string, n: number): Promise<number> => {
    const r = await fetch(`${d.url}/api/generate`, {
      method: "POST",
      body: JSON.stringify({ model, prompt: "Once upon a time", raw: true, stream: false, options: { num_predict: n, seed: 1, num_ctx: 2048 } }),
    });
    const j = (await r.json()) as { eval_count: number; eval_duration: number };
    return j.eval_count / (j.eval_duration / 1e9);
  };
  await gen("big", 2);
  await gen("small", 2);
  const alone = await gen("big", 48);
  const [bigBusy, smallBusy] = await Promise.all([gen("big", 48), gen("small", 3000)]);
  console.log(`1B alone ${alone.toFixed(1)} tok/s; both busy: 1B ${bigBusy.toFixed(1)} tok/s, small ${smallBusy.toFixed(1)} tok/s`);
} finally {
  await d.stop();
}
