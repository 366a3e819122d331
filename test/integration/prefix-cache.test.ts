// Prompt prefixes reused beyond their own slot (prefix-reuse.ts, prompt-cache.ts,
// sequence-states.ts) on real runner processes with the small test model: copied from another
// slot, also a busy one; loaded from the snapshot an expensive prompt leaves; copied ahead into an
// idle slot once reused; kept across an unload for the next runner of the same model and shape.
// Reuse is read from the runner's `cachedTokens` and `cachedFrom`; every reused run must produce
// the text of a cold run.
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import type { GenerateJob, Runner, RunnerEvent } from "../../src/backends/backend.js";
import type { LoadOptions } from "../../src/backends/llamacpp/protocol.js";
import { LlamaCppBackend } from "../../src/backends/llamacpp/backend.js";
import { testLoadOptions } from "../helpers/load-options.js";
import type { StateStore } from "../../src/backends/backend.js";

const baseOpts = testLoadOptions({ numCtx: 1024, slots: 2 });

const words = "river stone cloud lantern meadow copper whisper harbor orchard ember violet canyon".split(" ");
const text = (n: number, seed: number) => Array.from({ length: n }, (_, i) => words[(i * 5 + seed) % words.length]).join(" ");
/** Over SNAPSHOT_MIN_TOKENS tokens: snapshotted when evaluated. */
const prefix = text(240, 1);
/** Under it (but longer than MIN_COPY_GAIN_TOKENS): only ever copied from a slot. */
const shortPrefix = text(50, 3);

function job(prompt: string, numPredict = 12, prefixTokens?: number[]): GenerateJob {
  return {
    prompt,
    ...(prefixTokens ? { prefixTokens, wantContext: true } : {}),
    sampling: { temperature: 0.8, topK: 40, topP: 0.9, minP: 0, seed: 77, repeatLastN: 64, repeatPenalty: 1, presencePenalty: 0, frequencyPenalty: 0 },
    numPredict,
    stop: [],
    wantContext: prefixTokens !== undefined,
  };
}

type Done = Extract<RunnerEvent, { type: "done" }>;

async function run(runner: Runner, j: GenerateJob, onText?: () => void): Promise<{ text: string; done: Done }> {
  let text = "";
  for await (const ev of runner.generate(j, new AbortController().signal)) {
    if (ev.type === "text") {
      text += ev.text;
      onText?.();
    } else if (ev.type === "done") return { text, done: ev };
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
  return new LlamaCppBackend({ debug: false, cpuOnly: true, states }).start(modelFile, opts, { gpuLayers: 0 }, new AbortController().signal);
}

describe("prefix reuse across slots and unloads", () => {
  /** A decodes (held at the lockstep gate for B's copy or load, then going on) while B runs. */
  async function whileBusy(runner: Runner, a: GenerateJob, b: GenerateJob): Promise<{ text: string; done: Done }> {
    let pieces = 0;
    let onPiece: () => void = () => undefined;
    const stopA = new AbortController();
    const busy = (async () => {
      for await (const ev of runner.generate({ ...a, numPredict: 100_000 }, stopA.signal)) {
        if (ev.type === "text") pieces++;
        onPiece();
      }
    })();
    const piecesReach = (n: number) =>
      new Promise<void>((resolve) => {
        onPiece = () => {
          if (pieces >= n) resolve();
        };
        onPiece();
      });
    try {
      await piecesReach(1);
      const result = await run(runner, b);
      await piecesReach(pieces + 3); // A still decodes after B
      return result;
    } finally {
      stopA.abort();
      await busy;
    }
  }

  /** The warm run reused (nearly) the whole prompt, from `from`, and wrote the cold run's text. */
  function expectReused(warm: { text: string; done: Done }, cold: { text: string; done: Done }, from: string): void {
    expect(warm.done.cachedFrom).toBe(from);
    expect(warm.done.cachedTokens).toBeGreaterThanOrEqual(cold.done.promptEvalCount - 8);
    expect(warm.text).toBe(cold.text);
  }

  async function coldRun(j: GenerateJob): Promise<{ text: string; done: Done }> {
    const runner = await load();
    try {
      const r = await run(runner, j);
      expect(r.done.cachedTokens).toBe(0);
      return r;
    } finally {
      await runner.close();
    }
  }

  // A short prefix is copied from the busy slot; an expensive one left a snapshot when the
  // request that evaluated it was done, which is loaded instead (no wait for the busy slot's state
  // to be written). The request before goes on differently for long enough (> 64 tokens) that
  // the next one does not count as its continuation: its snapshot is written, not dropped.
  it.each([
    { what: "a copy of the busy slot", start: shortPrefix, before: "", from: "slot" },
    { what: "the snapshot its first evaluation left", start: prefix, before: text(40, 9), from: "snapshot" },
  ])("a prompt whose prefix sits in a busy slot starts from $what", async ({ start, before, from }) => {
    const b = job(`${start} and then the second question`);
    const bCold = await coldRun(b);
    const runner = await load();
    try {
      await run(runner, job(`${start} ${before} and the question before`));
      expectReused(await whileBusy(runner, job(`${start} and then the first question`), b), bCold, from);
    } finally {
      await runner.close();
    }
  });

  it("a snapshot outlives its slot: the prefix is loaded after both slots were given to other prompts", async () => {
    const again = job(`${prefix} so what about the lantern`);
    const cold = await coldRun(again);
    const runner = await load();
    try {
      await run(runner, job(`${prefix} first of all`));
      await run(runner, job(`${text(240, 2)} something else`));
      await run(runner, job(`${text(240, 4)} something else again`));
      expectReused(await run(runner, again), cold, "snapshot");
    } finally {
      await runner.close();
    }
  });

  // Short prompts are never snapshotted, so a slot they hold costs little to lose: once the
  // runner is idle, the prefix they pushed out is loaded back into one of them (restoreAhead),
  // and the next request with it starts there (waiting for that load if it is still going on).
  it("a prefix pushed out of every slot by short prompts is loaded back into an idle slot before it is asked for again", async () => {
    const again = job(`${prefix} so what about the lantern`);
    const cold = await coldRun(again);
    const runner = await load();
    try {
      await run(runner, job(`${prefix} first of all`));
      await Promise.all([run(runner, job(`${text(20, 2)} short one`)), run(runner, job(`${text(20, 4)} short two`))]);
      expectReused(await run(runner, again), cold, "restored");
      // Not with a long prompt in every slot instead: nothing there is cheap to lose.
      await Promise.all([run(runner, job(`${text(240, 2)} long one`)), run(runner, job(`${text(240, 4)} long two`))]);
      expect((await run(runner, again)).done.cachedFrom).toBe("snapshot");
    } finally {
      await runner.close();
    }
  });

  it("snapshots live in the runner's own directory, gone with it; a killed runner's is removed by the next", async () => {
    const dead = 2 ** 22 + 4321; // above Linux's pid_max default: no such process
    const leftover = path.join(stateDir, `ollamats-runner-${dead}-abc123`);
    await mkdir(leftover);
    await writeFile(path.join(leftover, "snapshot-1.state"), "x");
    const runner = await load();
    try {
      await run(runner, job(`${prefix} leave a snapshot`));
      // The snapshot (and the runner's directory) is written after the answer is complete.
      const written = async () => {
        const dirs = await readdir(stateDir);
        const files = dirs.length === 1 && dirs[0] !== path.basename(leftover) ? await readdir(path.join(stateDir, dirs[0]!)) : [];
        return { dirs, files };
      };
      let seen = await written();
      for (let i = 0; i < 100 && seen.files.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        seen = await written();
      }
      expect(seen.dirs).toHaveLength(1);
      expect(seen.dirs[0]).toMatch(/^ollamats-runner-\d+-[A-Za-z0-9]{6}$/);
      expect(seen.dirs[0]).not.toBe(path.basename(leftover));
      expect(seen.files).toEqual(["snapshot-1.state"]);
    } finally {
      await runner.close();
    }
    expect(await readdir(stateDir)).toEqual([]);
  });

  it("a reused prefix is copied ahead into an idle slot: the next request while it decodes finds it in its own", async () => {
    const c = job(`${prefix} the third one`);
    const cCold = await coldRun(c);
    const runner = await load();
    try {
      await run(runner, job(`${prefix} the first one`));
      const second = await run(runner, job(`${prefix} the second one`));
      expect(second.done.cachedFrom).toBe("own");
      expectReused(await whileBusy(runner, job(`${prefix} a long one`), c), cCold, "own");
    } finally {
      await runner.close();
    }
  });

  /** Waits (bounded) until the running runner has written `n` snapshots: they are written after
   *  the answer, and one nothing waits for 50 ms later. */
  async function snapshotsWritten(n: number): Promise<void> {
    const count = async () => {
      let files = 0;
      for (const d of await readdir(stateDir)) if (d.startsWith("ollamats-runner-")) files += (await readdir(path.join(stateDir, d)).catch(() => [])).length;
      return files;
    };
    for (let i = 0; i < 100 && (await count()) < n; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await count()).toBeGreaterThanOrEqual(n);
  }

  // A conversation's follow-up, with `between` run on the same runner before it; the reference is
  // the same conversation with nothing in between (the KV of a reply computed while decoding is
  // not bit-identical to the same tokens evaluated as a prompt, so a cold run is no reference).
  async function followUpAfter(
    opts: LoadOptions,
    turns: (runner: Runner) => Promise<number[]>,
    between: (runner: Runner) => Promise<void>,
  ): Promise<{ conversation: number[]; warm: { text: string; done: Done }; reference: string }> {
    const conversationRun = async (withBetween: boolean) => {
      const runner = await load(opts);
      try {
        const conversation = await turns(runner);
        if (withBetween) await between(runner);
        return { conversation, result: await run(runner, job(" and what happened next", 12, conversation)) };
      } finally {
        await runner.close();
      }
    };
    const reference = await conversationRun(false);
    expect(reference.result.done.cachedFrom).toBe("own");
    const { conversation, result: warm } = await conversationRun(true);
    expect(conversation).toEqual(reference.conversation);
    return { conversation, warm, reference: reference.result.text };
  }

  it("the idle slot it overwrites keeps its conversation: saved as a snapshot first", async () => {
    const { conversation, warm, reference } = await followUpAfter(
      baseOpts,
      // Slot 1: a conversation. Its first turn is snapshotted when done; its second turn adds
      // ~90 tokens, too few for a snapshot of their own, so the slot holds more than any snapshot.
      async (runner) => {
        const first = await run(runner, job(`${text(200, 5)} tell me a story`, 12, []));
        await snapshotsWritten(1);
        const second = await run(runner, job(" go on", 80, first.done.context!));
        expect(second.done.context!.length - first.done.context!.length).toBeGreaterThan(64);
        return second.done.context!;
      },
      // Slot 2: another prefix, then shared: copied ahead into the idle slot 1.
      async (runner) => {
        await run(runner, job(`${prefix} one`));
        await run(runner, job(`${prefix} two`));
      },
    );
    expect(warm.done.cachedFrom).toBe("snapshot");
    expect(warm.done.cachedTokens).toBeGreaterThanOrEqual(conversation.length - 2);
    expect(warm.text).toBe(reference);
  });

  it("a conversation whose only slot was given to another prompt in between loads it back", async () => {
    const { conversation, warm, reference } = await followUpAfter(
      { ...baseOpts, slots: 1 },
      // A short question with a long answer: the slot holds more than 256 tokens no snapshot has.
      async (runner) => (await run(runner, job(`${text(30, 6)} tell me everything`, 300, []))).done.context!,
      async (runner) => void (await run(runner, job(`${text(20, 7)} a title for this chat`))), // takes the one slot
    );
    expect(conversation.length).toBeGreaterThan(300);
    expect(warm.done.cachedFrom).toBe("snapshot");
    expect(warm.done.cachedTokens).toBeGreaterThanOrEqual(conversation.length - 2);
    expect(warm.text).toBe(reference);
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
