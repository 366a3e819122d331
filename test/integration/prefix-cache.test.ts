// Prompt prefixes reused beyond their own slot (sequence-states.ts) on real runner processes with
// the small test model: copied from another slot, also a busy one, and kept across an unload
// for the next runner of the same model and shape. Reuse is read from the runner's
// `cachedTokens`; every reused run must produce the text of a cold run.
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import type { GenerateJob, Runner, RunnerEvent } from "../../src/backends/backend.js";
import { LlamaCppBackend } from "../../src/backends/llamacpp/backend.js";
import { testLoadOptions } from "../helpers/load-options.js";
import type { StateStore } from "../../src/backends/llamacpp/protocol.js";

const baseOpts = testLoadOptions({ numCtx: 1024, slots: 2 });

const words = "river stone cloud lantern meadow copper whisper harbor orchard ember violet canyon".split(" ");
const prefix = Array.from({ length: 240 }, (_, i) => words[(i * 5 + 1) % words.length]).join(" ");

function job(prompt: string, numPredict = 12): GenerateJob {
  return {
    prompt,
    sampling: { temperature: 0.8, topK: 40, topP: 0.9, minP: 0, seed: 77, repeatLastN: 64, repeatPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 },
    numPredict,
    stop: [],
    wantContext: false,
  };
}

type Done = Extract<RunnerEvent, { type: "done" }>;

async function run(runner: Runner, j: GenerateJob, onText?: () => void): Promise<{ text: string; done: Done }> {
  let text = "";
  for await (const ev of runner.generate(j, new AbortController().signal)) {
    if (ev.type === "text") {
      text += ev.text;
      onText?.();
    } else return { text, done: ev };
  }
  throw new Error("no done event");
}

let modelFile: string;
let stateDir: string;
let states: StateStore;

beforeAll(async () => {
  modelFile = await makeTestModel({ shape: "small", type: "Q4_0", seed: 1 });
  stateDir = await mkdtemp(path.join(os.tmpdir(), "prefix-cache-test-"));
  states = { dir: stateDir, budgetBytes: 256 * 1024 * 1024 };
}, 120_000);

afterAll(async () => {
  await rm(stateDir, { recursive: true, force: true });
});

async function load(opts = baseOpts): Promise<Runner> {
  return new LlamaCppBackend({ debug: false, cpuOnly: true, states }).load(modelFile, opts, { gpuLayers: 0 }, new AbortController().signal);
}

describe("prefix reuse across slots and unloads", () => {
  it("a prompt whose prefix sits in a busy slot is started from a copy of it", async () => {
    const cold = await load();
    const b = job(`${prefix} and then the second question`);
    const bCold = await run(cold, b);
    await cold.close();
    expect(bCold.done.cachedTokens).toBe(0);

    const runner = await load();
    try {
      // A takes a slot and stays busy until B is done; A was held at the lockstep gate for the
      // copy and must go on decoding afterwards (then it is aborted).
      let pieces = 0;
      let onPiece: () => void = () => undefined;
      const stopA = new AbortController();
      const a = (async () => {
        for await (const ev of runner.generate(job(`${prefix} and then the first question`, 100_000), stopA.signal)) {
          if (ev.type === "text") pieces++;
          onPiece();
        }
      })();
      const piecesReach = (n: number) => new Promise<void>((resolve) => {
        onPiece = () => {
          if (pieces >= n) resolve();
        };
        onPiece();
      });
      await piecesReach(1);
      const bWarm = await run(runner, b);
      await piecesReach(pieces + 3); // A still decodes after B's copy
      stopA.abort();
      await a;
      expect(bWarm.done.cachedTokens).toBeGreaterThanOrEqual(bCold.done.promptEvalCount - 8);
      expect(bWarm.text).toBe(bCold.text);
    } finally {
      await runner.close();
    }
  });

  it("a model unloaded with keepPromptCache gives its next runner the evaluated prefixes", async () => {
    const first = await load();
    const cold = await run(first, job(`${prefix} tell me about the meadow`));
    expect(cold.done.cachedTokens).toBe(0);
    await first.close({ keepPromptCache: true });
    expect((await readdir(stateDir)).length).toBeGreaterThan(0);

    const second = await load();
    try {
      expect(await readdir(stateDir)).toEqual([]); // each saved state is used once
      const again = await run(second, job(`${prefix} tell me about the meadow`));
      expect(again.done.cachedTokens).toBe(cold.done.promptEvalCount - 1);
      expect(again.text).toBe(cold.text);
    } finally {
      await second.close(); // not kept
    }
    expect(await readdir(stateDir)).toEqual([]);
  });

  it("states are only loaded into a runner of the same shape", async () => {
    const first = await load();
    const cold = await run(first, job(`${prefix} what about the harbor`));
    await first.close({ keepPromptCache: true });
    const other = await load({ ...baseOpts, numCtx: 2048 });
    try {
      const r = await run(other, job(`${prefix} what about the harbor`));
      expect(r.done.cachedTokens).toBe(0);
    } finally {
      await other.close();
    }
    expect(cold.done.cachedTokens).toBe(0);
    expect((await readdir(stateDir)).length).toBeGreaterThan(0); // left for a runner it fits
  });
});
