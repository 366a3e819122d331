// Decode speed against the thread count (decode-threads.ts): plain node-llama-cpp with one thread
// per core and with one thread, and the daemon with automatic threads, for a small model (where
// ggml starting its threads anew for every step can cost more than the step) and the case's model.
import { makeTestModel } from "../../make-test-model.js";
import type { BenchCase, CaseContext, Row } from "../registry.js";
import { Direct } from "../direct.js";
import { daemonOptions } from "./engine.js";
import { BenchDaemon, decodeRate, fmt, freshSeed, median, sleep } from "../support.js";
import os from "node:os";

const CONTEXT = 1024;
const PROMPT_TOKENS = 64;

/** Plain node-llama-cpp on `threads` threads, in a process of its own for `f` (no cache carries over). */
async function withDirect<T>(modelPath: string, threads: number, f: (d: Direct) => Promise<T>): Promise<T> {
  const d = Direct.start();
  try {
    await d.open(modelPath, CONTEXT, threads);
    return await f(d);
  } finally {
    await d.stop();
  }
}

/** Decode rates of an open direct side, one run per prompt, after a warm-up. */
async function directRates(d: Direct, prompts: string[], predict: number): Promise<number[]> {
  await d.complete((await d.fit(freshSeed(), 16)).prompt, 4); // warm-up
  const rates: number[] = [];
  for (const prompt of prompts) {
    await sleep(300);
    const c = await d.complete(prompt, predict);
    rates.push((c.tokens - 1) / ((c.tLast - c.tFirst) / 1000));
  }
  return rates;
}

async function daemonRates(modelPath: string, prompts: string[], predict: number): Promise<number[]> {
  const b = await BenchDaemon.start({}, { m: modelPath });
  try {
    await b.generate({ model: "m", prompt: " hello", raw: true, keep_alive: "10m", options: daemonOptions(CONTEXT, 4) });
    const rates: number[] = [];
    for (const prompt of prompts) {
      await sleep(300);
      const g = await b.generate({ model: "m", prompt, raw: true, keep_alive: "10m", options: daemonOptions(CONTEXT, predict) });
      rates.push(decodeRate(g.chunkTimes));
    }
    return rates;
  } finally {
    await b.stop();
  }
}

async function run(ctx: CaseContext): Promise<Row[]> {
  const cores = os.availableParallelism();
  const predict = ctx.quick ? 16 : 64;
  const small = await makeTestModel({ shape: "small", type: "Q4_0", seed: 1 });
  const rows: Row[] = [];
  for (const [label, modelPath] of [
    ["small model", small],
    ["the case's model", ctx.modelPath],
  ] as const) {
    // Fresh prompts fitted to the model's tokenizer, made in the first direct side's process; every
    // side runs the same ones.
    const { prompts, all } = await withDirect(modelPath, cores, async (d) => {
      const prompts: string[] = [];
      for (let i = 0; i < ctx.rounds; i++) prompts.push((await d.fit(freshSeed(), PROMPT_TOKENS)).prompt);
      return { prompts, all: median(await directRates(d, prompts, predict)) };
    });
    const one = median(await withDirect(modelPath, 1, (d) => directRates(d, prompts, predict)));
    const daemon = median(await daemonRates(modelPath, prompts, predict));
    ctx.log(`  ${label}: direct ${cores} threads ${fmt(all, 1)} tok/s, direct 1 thread ${fmt(one, 1)}, daemon (automatic) ${fmt(daemon, 1)}`);
    rows.push(
      { figure: `decode, ${label}: daemon (automatic threads) / direct with ${cores} threads (tok/s)`, daemon, direct: all, value: daemon / all },
      {
        figure: `decode, ${label}: daemon (automatic threads) / direct with the better of ${cores} and 1 threads (tok/s)`,
        daemon,
        direct: Math.max(all, one),
        value: daemon / Math.max(all, one),
        // At ~1,000 tok/s the daemon's own per-token path (IPC, HTTP) is as long as the step:
        // the small model's row shows what the thread choice gains, not a parity target.
        ...(modelPath === small ? {} : { target: "≥ 0.98", pass: daemon / Math.max(all, one) >= 0.98 }),
        note: `1 thread: ${fmt(one, 1)}`,
      },
    );
  }
  return rows;
}

export const threadsCase: BenchCase = { name: "threads", what: "decode with automatic threads vs plain node-llama-cpp on every core and on one", run };
