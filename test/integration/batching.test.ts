// The runner's continuous batching (step-gate.ts, batch-plan.ts) on a real runner process with
// the small Q4_0 test model and four sequences: concurrent generations must produce exactly the
// text each produces alone, also when one joins with a long prompt while the others decode, and
// when one stops or is aborted in the middle (the others must neither stall nor change).
// No assertion depends on timing. Where a long prompt's chunks join the decoders' batches, the
// engine's sums for them run in another order, so the decoders are compared greedily, allowing
// only a near tie to go the other way.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import type { GenerateJob, Logprob, Runner } from "../../src/backends/backend.js";
import { LlamaCppBackend } from "../../src/backends/llamacpp/backend.js";
import { testLoadOptions } from "../helpers/load-options.js";
import { PROMPT_CHUNK_WITH_DECODERS } from "../../src/backends/llamacpp/batch-plan.js";

const opts = testLoadOptions({ numCtx: 1024, slots: 4 });

function job(i: number, prompt: string, numPredict = 24, stop: string[] = []): GenerateJob {
  return {
    prompt,
    sampling: {
      temperature: [0.7, 1.0, 0, 1.3][i % 4]!,
      topK: [40, 20, 1, 60][i % 4]!,
      topP: 0.9,
      minP: 0,
      seed: 500 + i,
      repeatLastN: 64,
      repeatPenalty: 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
    },
    numPredict,
    stop,
    wantContext: false,
  };
}

interface Result {
  text: string;
  evalCount: number;
  doneReason?: string;
  logprobs: Logprob[];
}

/** Greedy, with each token's two most likely choices. */
function greedy(j: GenerateJob): GenerateJob {
  return { ...j, sampling: { ...j.sampling, temperature: 0, topK: 1 }, logprobs: 2 };
}

/** Two tokens this close in log probability are a near tie: another batch shape runs other
 *  kernels (a whole prompt against its last token alone), which moves a logit by up to ~0.003
 *  with this model. A sequence given another's logits differs by far more, as a rule. */
const NEAR_TIE = 0.01;

/**
 * `together` is `alone`'s text, or parts from it only where `alone`'s two most likely tokens were
 * a near tie, which another batch shape may pick the other way; a sequence whose batch-mates
 * corrupted it goes another way where its choice was clear.
 */
function sameUpToTies(together: Result, alone: Result): void {
  if (together.text === alone.text) return;
  const k = together.logprobs.findIndex((lp, i) => lp.token !== alone.logprobs[i]?.token);
  expect(k, `${together.text}\n  vs alone\n${alone.text}`).toBeGreaterThanOrEqual(0);
  const [a, b] = alone.logprobs[k]!.top_logprobs!;
  expect(a!.logprob - b!.logprob, `token ${k} of ${JSON.stringify(alone.text)} was a clear choice`).toBeLessThan(NEAR_TIE);
}

let runner: Runner;

async function run(j: GenerateJob, signal = new AbortController().signal, onText?: (soFar: string) => void): Promise<Result> {
  const r: Result = { text: "", evalCount: 0, logprobs: [] };
  for await (const ev of runner.generate(j, signal)) {
    if (ev.type === "text") {
      r.text += ev.text;
      r.logprobs.push(...(ev.logprobs ?? []));
      onText?.(r.text);
    } else if (ev.type === "done") {
      r.evalCount = ev.evalCount;
      r.doneReason = ev.doneReason;
    }
  }
  return r;
}

/** Each prompt alone; the slot caches are emptied of these prompts by using fresh wording. */
async function solo(jobs: GenerateJob[]): Promise<Result[]> {
  const out: Result[] = [];
  for (const j of jobs) out.push(await run(j));
  return out;
}

const words = "river stone cloud lantern meadow copper whisper harbor orchard ember violet canyon".split(" ");
function longPrompt(n: number, salt: number): string {
  return Array.from({ length: n }, (_, i) => words[(i * 7 + salt) % words.length]).join(" ");
}

beforeAll(async () => {
  const file = await makeTestModel({ shape: "small", type: "Q4_0", seed: 1 });
  runner = await new LlamaCppBackend({ debug: false, cpuOnly: true }).start(file, opts, { gpuLayers: 0 }, new AbortController().signal);
}, 120_000);

afterAll(async () => {
  await runner?.close();
});

describe("continuous batching on four sequences", () => {
  it("four concurrent generations give the texts of four solo runs", async () => {
    const jobs = [0, 1, 2, 3].map((i) => job(i, `Batch test ${i}: the ${words[i]} and the ${words[i + 4]}`));
    const alone = await solo(jobs);
    expect(alone.map((r) => r.evalCount)).toEqual([24, 24, 24, 24]);
    expect(new Set(alone.map((r) => r.text)).size).toBe(4);
    const together = await Promise.all(jobs.map((j) => run(j)));
    expect(together.map((r) => r.text)).toEqual(alone.map((r) => r.text));
  });

  it("a long prompt joining three decoding streams is chunked and changes no clear greedy choice", async () => {
    // Greedy: the joiner's chunks change the decoders' batch shape, so a decoder's logits may
    // differ in their last digits from its solo run's (sameUpToTies).
    const decoderJobs = [0, 1, 2].map((i) => greedy(job(i, `Joiner test ${i}: the ${words[i + 1]} by the ${words[i + 5]}`, 160)));
    const joinerJob = greedy(job(3, longPrompt(3 * PROMPT_CHUNK_WITH_DECODERS, 3), 16));
    const alone = await solo([...decoderJobs, joinerJob]);
    let started = 0;
    let allStarted!: () => void;
    const decoding = new Promise<void>((resolve) => (allStarted = resolve));
    const decoders = decoderJobs.map((j) => {
      let first = true;
      return run(j, undefined, () => {
        if (first && ++started === 3) allStarted();
        first = false;
      });
    });
    await decoding; // the joiner's prompt arrives while the three are decoding
    const results = await Promise.all([...decoders, run(joinerJob)]);
    expect(new Set(alone.map((r) => r.text)).size).toBe(4);
    expect(alone.map((r) => r.logprobs.length)).toEqual([160, 160, 160, 16]);
    results.forEach((r, i) => sameUpToTies(r, alone[i]!));
  });

  it("prompts of different lengths evaluated in one batch each sample from their own logits", async () => {
    // llama.cpp computes the shorter prompts' outputs first and puts the rows back in order on
    // the first read; concurrent first reads used to swap them (output-order.ts), so two
    // requests traded first tokens. The race needs a busy machine to show often; the guard's
    // own logic is tested in test/unit/output-order.test.ts.
    expect(runner.info.warnings ?? []).not.toContainEqual(expect.stringContaining("each other's logits"));
    const lengths = [60, 30, 11, 3]; // longest first: the most rows out of order
    const firstToken = (prompt: string): GenerateJob => ({ ...greedy(job(0, prompt)), numPredict: 1 });
    for (let round = 0; round < 40; round++) {
      const jobs = lengths.map((n, i) => firstToken(`${round}-${i} ${longPrompt(n, round + i)}`));
      const together = await Promise.all(jobs.map((j) => run(j)));
      const alone = await solo(jobs);
      together.forEach((t, i) => sameUpToTies(t, alone[i]!));
      expect(new Set(alone.map((a) => a.logprobs[0]!.token)).size, "the prompts' first tokens tell them apart").toBeGreaterThan(1);
    }
  });

  it("a stream that stops early or is aborted lets the others finish with their own text", async () => {
    const jobs = [0, 1, 2, 3].map((i) => job(i, `Leaving test ${i}: the ${words[i + 2]} near the ${words[i + 6]}`, 32));
    const alone = await solo(jobs);
    const ac = new AbortController();
    const aborted = run(jobs[1]!, ac.signal, (soFar) => {
      if (soFar.length > 0) ac.abort();
    });
    const stopper = alone[2]!.text.slice(4, 8);
    const stopped = run({ ...jobs[2]!, stop: [stopper] });
    const [r0, r1, r2, r3] = await Promise.all([run(jobs[0]!), aborted, stopped, run(jobs[3]!)]);
    expect(r0.text).toBe(alone[0]!.text);
    expect(r3.text).toBe(alone[3]!.text);
    expect(r1.text.length).toBeLessThan(alone[1]!.text.length);
    expect(alone[1]!.text.startsWith(r1.text)).toBe(true);
    expect(r2.text).toBe(alone[2]!.text.slice(0, alone[2]!.text.indexOf(stopper)));
  });
});
