// Model loads. "load": a load request (empty prompt) to a daemon whose spare runner has finished
// starting, against plain node-llama-cpp's loadModel + createContext of the same file and context
// in a process that has already called getLlama; and a daemon without the spare for reference.
// "switch": OLLAMA_MAX_LOADED_MODELS=1 with two models alternating, each request one token,
// against disposing one model and loading the other directly, plus the same first token.
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { Direct } from "../direct.js";
import { BenchDaemon, fmt, freshPrompt, median, sleep } from "../support.js";
import { childPids } from "../../../test/helpers/daemon.js";

const CONTEXT = 4096;
/** How long the fresh direct process waits after getLlama before its load (a spare is idle a while). */
const FRESH_IDLE_MS = 3000;

async function unload(b: BenchDaemon, model: string): Promise<void> {
  await b.generate({ model, prompt: "", keep_alive: 0 });
  for (const end = Date.now() + 15_000; Date.now() < end && (await childPids(b.d.proc.pid!)).length > 0; ) await sleep(50);
}

/** Wall time of a load request, and the daemon's load_duration, in ms. */
async function daemonLoad(b: BenchDaemon, model: string): Promise<{ wall: number; reported: number }> {
  const g = await b.generate({ model, prompt: "", keep_alive: "10m", options: { num_ctx: CONTEXT } });
  return { wall: g.tEnd - g.tSent, reported: Number(g.final.load_duration ?? NaN) / 1e6 };
}

async function runLoad(ctx: CaseContext): Promise<Row[]> {
  const withSpare = await BenchDaemon.start({}, { m: ctx.modelPath });
  const without = await BenchDaemon.start({ OLLAMATS_SPARE_RUNNER: "0" }, { m: ctx.modelPath });
  const d = Direct.start();
  const spare: number[] = [];
  const plain: number[] = [];
  const direct: number[] = [];
  const fresh: number[] = [];
  try {
    await d.open(ctx.modelPath, CONTEXT); // getLlama done, the file in the page cache
    for (let r = 0; r < ctx.rounds; r++) {
      direct.push((await d.swap(ctx.modelPath, CONTEXT)).loadMs);
      if (!(await withSpare.spareReady())) ctx.log("  (the spare runner was not ready within 60 s)");
      spare.push((await daemonLoad(withSpare, "m")).wall);
      await unload(withSpare, "m");
      plain.push((await daemonLoad(without, "m")).wall);
      await unload(without, "m");
      // For reference: a process of its own that has only called getLlama, as the spare has,
      // and loads once. On a VM whose host takes back freed memory, the pages a new process
      // touches first cost far more than those a reload in the same process gets back.
      const f = Direct.start();
      try {
        await f.prepare();
        await sleep(FRESH_IDLE_MS);
        fresh.push(await f.open(ctx.modelPath, CONTEXT));
      } finally {
        await f.stop();
      }
      ctx.log(
        `  round ${r + 1}: daemon with its spare ${fmt(spare.at(-1)!, 0)} ms, without ${fmt(plain.at(-1)!, 0)} ms, direct loadModel + createContext ${fmt(direct.at(-1)!, 0)} ms ` +
          `(in a fresh process ${fmt(fresh.at(-1)!, 0)} ms)`,
      );
    }
  } finally {
    await d.stop();
    await withSpare.stop();
    await without.stop();
  }
  const over = median(spare.map((x, i) => x - direct[i]!));
  return [
    { figure: "model load (ms): daemon with a ready spare − direct loadModel + createContext", daemon: median(spare), direct: median(direct), value: over, target: "≤ 150 ms", pass: over <= 150 },
    { figure: "model load (ms): daemon without a spare (OLLAMATS_SPARE_RUNNER=0) − direct", daemon: median(plain), direct: median(direct), value: median(plain.map((x, i) => x - direct[i]!)) },
    { figure: "model load (ms): daemon with a ready spare − direct's first load in a fresh process (getLlama done)", daemon: median(spare), direct: median(fresh), value: median(spare.map((x, i) => x - fresh[i]!)) },
  ];
}

async function runSwitch(ctx: CaseContext): Promise<Row[]> {
  const second = await ctx.model2Path();
  const files = { a: ctx.modelPath, b: second };
  const b = await BenchDaemon.start({ OLLAMA_MAX_LOADED_MODELS: "1" }, files);
  const d = Direct.start();
  const daemon: number[] = [];
  const direct: number[] = [];
  try {
    await b.generate({ model: "a", prompt: "", keep_alive: "10m", options: { num_ctx: CONTEXT } });
    await d.open(ctx.modelPath, CONTEXT);
    for (let i = 0; i < 2 * ctx.rounds; i++) {
      const model = i % 2 === 0 ? "b" : "a";
      const prompt = freshPrompt(8);
      await b.spareReady();
      const g = await b.generate({ model, prompt, raw: true, keep_alive: "10m", options: { num_ctx: CONTEXT, num_predict: 1, temperature: 0 } });
      daemon.push(g.tFirst - g.tSent);
      const s = await d.swap(files[model], CONTEXT);
      const c = await d.complete(prompt, 1);
      direct.push(s.disposeMs + s.loadMs + (c.tFirst - c.t0));
      ctx.log(`  switch ${i + 1} to ${model}: daemon ${fmt(daemon.at(-1)!, 0)} ms to the first token, direct dispose + load + first token ${fmt(direct.at(-1)!, 0)} ms`);
    }
  } finally {
    await d.stop();
    await b.stop();
  }
  return [
    {
      figure: "model switch (MAX_LOADED_MODELS=1), request → first token (ms): daemon − direct dispose + load + first token",
      daemon: median(daemon),
      direct: median(direct),
      value: median(daemon.map((x, i) => x - direct[i]!)),
      target: "≤ 150 ms",
      pass: median(daemon.map((x, i) => x - direct[i]!)) <= 150,
    },
  ];
}

export const loadCase: BenchCase = { name: "load", what: "model load with the warm spare vs node-llama-cpp's loadModel + createContext", run: runLoad };
export const switchCase: BenchCase = { name: "switch", what: "two models alternating with OLLAMA_MAX_LOADED_MODELS=1", run: runSwitch };
