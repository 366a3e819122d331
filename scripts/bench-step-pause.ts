// `tsx scripts/bench-step-pause.ts`: why the runner pauses between decode steps (step-pause.ts).
// Plain node-llama-cpp, the 1B-shaped Q4_0 test model, 2 threads, no daemon: one long
// generation per seed in which the pause after each token changes every 4 tokens (none / 0.1 /
// 0.25 / 0.4 ms, blocking the main thread as the runner does), so every setting sees the same
// context depths and the machine's drift; the time between tokens is averaged per setting.
// Not part of `npm run bench` (it measures the engine, not the daemon). Needs an idle machine.
import { loadEngine, nowMs } from "./bench-engine.js";
import { makeTestModel } from "./make-test-model.js";
import { BENCH_SAMPLING } from "./bench-plan.js";
import { blockMicroseconds } from "../src/backends/llamacpp/step-pause.js";
import type { Token } from "node-llama-cpp";

const PAUSES_US = [0, 100, 250, 400];
const BLOCK = 4;
const TOKENS = Math.max(80, Number(process.env.STEP_PAUSE_TOKENS) || 900);
const SEEDS = Math.max(1, Number(process.env.STEP_PAUSE_SEEDS) || 3);

const modelPath = await makeTestModel({ shape: "1b", type: "Q4_0", seed: 1 });
const e = await loadEngine(modelPath, { threads: 2, numCtx: 2048, numBatch: 512, sampling: BENCH_SAMPLING });
const seq = e.sequences[0]!;
const prompt = e.model.tokenize("Once upon a time there was", true) as Token[];
const gaps = new Map<number, number[]>(PAUSES_US.map((us) => [us, []]));
const setting = (n: number) => PAUSES_US[Math.floor(n / BLOCK) % PAUSES_US.length]!;
for (let s = 0; s < SEEDS; s++) {
  await seq.clearHistory();
  let n = 0;
  let last = 0;
  for await (const _token of seq.evaluate(prompt, { ...BENCH_SAMPLING, seed: s + 1 })) {
    const now = nowMs();
    // The gap ending at token n follows the pause taken after token n − 1.
    if (n > 0) gaps.get(setting(n - 1))!.push(now - last);
    last = now;
    blockMicroseconds(setting(n));
    if (++n >= TOKENS) break;
  }
}
await e.dispose();
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const base = mean(gaps.get(0)!);
console.log(`${SEEDS} generations of ${TOKENS} tokens, pause changed every ${BLOCK} tokens`);
for (const [us, xs] of gaps) {
  const m = mean(xs);
  const se = Math.sqrt(mean(xs.map((x) => (x - m) ** 2)) / xs.length);
  console.log(`pause ${String(us).padStart(3)} µs: ${m.toFixed(2)} ms/token ± ${se.toFixed(2)} (${xs.length} gaps), speed vs no pause ${(base / m).toFixed(3)}`);
}
