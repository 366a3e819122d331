import { ApiError } from "../../src/daemon/errors.js";
import { describe, expect, it } from "vitest";
import type { LoadOptions, RunnerJob as GenerateJob } from "../../src/backends/llamacpp/protocol.js";
import { boundJob, boundLoadOptions } from "../../src/backends/option-ranges.js";
import { resolveOptions } from "../../src/daemon/options.js";

describe("resolveOptions", () => {
  it("uses Ollama's defaults", () => {
    const o = resolveOptions({ numCtx: 4096 }, undefined, undefined);
    expect(o.sampling).toEqual({
      temperature: 0.8,
      topK: 40,
      topP: 0.9,
      minP: 0,
      seed: -1,
      repeatLastN: 64,
      repeatPenalty: 1,
      presencePenalty: 0,
      frequencyPenalty: 0,
    });
    expect(o.runner).toEqual({ numCtx: 4096, numBatch: 512, numGpu: -1, numThread: 0, useMmap: undefined });
    expect(o.numPredict).toBe(-1);
    expect(o.stop).toEqual([]);
  });
  it("request options override model parameters, which override defaults", () => {
    const o = resolveOptions({ numCtx: 4096 }, { temperature: 0.2, stop: ["<|x|>"], num_ctx: 1024 }, { temperature: 0.5, seed: 3.9 });
    expect(o.sampling.temperature).toBe(0.5);
    expect(o.sampling.seed).toBe(3); // floats truncate for int options
    expect(o.stop).toEqual(["<|x|>"]);
    expect(o.runner.numCtx).toBe(1024);
  });
  it("ignores unknown options and answers wrong types exactly as Ollama does (a 500, its words)", () => {
    expect(resolveOptions({ numCtx: 8 }, undefined, { bogus: 1, num_ctx: null }).runner.numCtx).toBe(8);
    const wrong = (options: Record<string, unknown>, message: string) => {
      let err: unknown;
      try {
        resolveOptions({ numCtx: 8 }, undefined, options);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(500);
      expect((err as Error).message).toBe(message);
    };
    wrong({ num_ctx: "big" }, 'option "num_ctx" must be of type integer');
    wrong({ num_ctx: "4096" }, 'option "num_ctx" must be of type integer');
    wrong({ seed: true }, 'option "seed" must be of type integer');
    wrong({ temperature: "0.5" }, 'option "temperature" must be of type float32');
    wrong({ use_mmap: 1 }, 'option "use_mmap" must be of type boolean');
    wrong({ stop: "\n" }, 'option "stop" must be of type array');
    wrong({ stop: ["a", 1] }, 'option "stop" must be of an array of strings');
    wrong({ stop: { a: "b" } }, 'option "stop" must be of type array');
    expect(resolveOptions({ numCtx: 8 }, undefined, { stop: [], num_predict: 7.9 }).numPredict).toBe(7);
    // deprecated keys are not Ollama options any more: ignored whatever their type (fuzz case 731)
    expect(resolveOptions({ numCtx: 8 }, undefined, { penalize_newline: "true", mirostat: "x", f16_kv: 3 }).runner.numCtx).toBe(8);
  });
});

// issue 13, row 4: every option has a range (backends/option-ranges.ts), applied by the daemon
// here and again by the runner (boundLoadOptions / boundJob), so no caller can skip it.
describe("option ranges", () => {
  const d = { numCtx: 4096, cores: 2 };
  const req = (options: Record<string, unknown>) => resolveOptions(d, undefined, options);

  it("num_thread: at most the logical cores; zero or negative is automatic", () => {
    expect(req({ num_thread: 100000 }).runner.numThread).toBe(2);
    expect(req({ num_thread: 2 }).runner.numThread).toBe(2);
    expect(req({ num_thread: 1 }).runner.numThread).toBe(1);
    expect(req({ num_thread: -5 }).runner.numThread).toBe(0);
    expect(resolveOptions(d, { num_thread: 64 }, undefined).runner.numThread).toBe(2); // a Modelfile from a bigger machine
  });
  it("num_ctx at least 4 and an int32; num_batch 1 to num_ctx; num_gpu below 0 is automatic", () => {
    expect(req({ num_ctx: 0 }).runner.numCtx).toBe(4);
    expect(req({ num_ctx: 1e300 }).runner.numCtx).toBe(2 ** 31 - 1);
    expect(req({ num_batch: 0 }).runner.numBatch).toBe(1);
    expect(req({ num_batch: -3 }).runner.numBatch).toBe(1);
    expect(req({ num_ctx: 256, num_batch: 100000 }).runner.numBatch).toBe(256);
    expect(req({ num_gpu: -7 }).runner.numGpu).toBe(-1);
    expect(req({ num_gpu: 1e12 }).runner.numGpu).toBe(2 ** 31 - 1);
  });
  it("sampling: probabilities 0..1, top_k 0..int32, seed a uint32 or random, temperature and penalties finite in float32", () => {
    const s = req({ top_p: 7, min_p: -1, top_k: -3, seed: 2 ** 32 + 5, temperature: 1e-45, presence_penalty: 1e300, frequency_penalty: -1e300 }).sampling;
    expect(s).toMatchObject({ topP: 1, minP: 0, topK: 0, seed: 5, temperature: 0, presencePenalty: 1e4, frequencyPenalty: -1e4 });
    expect(req({ top_k: 2 ** 40, seed: -7, temperature: 1e30, repeat_penalty: 1e-30 }).sampling).toMatchObject({
      topK: 2 ** 31 - 1,
      seed: -1,
      temperature: 1e4,
      repeatPenalty: 1e-4,
    });
    expect(req({ temperature: -1 }).sampling.temperature).toBe(0);
  });
  it("counts: any negative is Ollama's -1", () => {
    const o = req({ num_predict: -5, num_keep: -9, repeat_last_n: -3 });
    expect([o.numPredict, o.numKeep, o.sampling.repeatLastN]).toEqual([-1, -1, -1]);
    expect(req({ num_predict: 1e20 }).numPredict).toBe(2 ** 31 - 1);
  });
  it("repeat_penalty 0 or below is refused with a 400 naming the option, its range and the value", () => {
    for (const v of [0, -1]) {
      let err: unknown;
      try {
        req({ repeat_penalty: v });
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ status: 400 });
      expect((err as Error).message).toBe(
        `option "repeat_penalty" must be greater than 0 (1 turns the penalty off); got ${v}`,
      );
    }
  });
  it("stop: at most 256 sequences of at most 256 characters (a longer one would stall the runner)", () => {
    expect(req({ stop: Array.from({ length: 256 }, (_, i) => `s${i}`) }).stop).toHaveLength(256);
    expect(() => req({ stop: Array.from({ length: 257 }, (_, i) => `s${i}`) })).toThrow('option "stop" takes at most 256 sequences; got 257');
    expect(req({ stop: ["x".repeat(256)] }).stop).toEqual(["x".repeat(256)]);
    expect(() => req({ stop: ["ok", "x".repeat(1_000_000)] })).toThrow('option "stop" sequences may be at most 256 characters long; got one of 1000000');
  });
  it("a refused value from the model's PARAMETER says so; the request may override it", () => {
    expect(() => resolveOptions(d, { repeat_penalty: 0 }, undefined)).toThrow("set by the model's PARAMETER");
    expect(resolveOptions(d, { repeat_penalty: 0 }, { repeat_penalty: 1.1 }).sampling.repeatPenalty).toBe(1.1);
  });
});

describe("the runner's own bounds (defence in depth)", () => {
  const load: LoadOptions = {
    numCtx: 0,
    numBatch: 1e9,
    numGpu: -9,
    numThread: 100000,
    useMmap: undefined,
    slots: 0,
    flashAttention: undefined,
    kvCacheTypeK: "",
    kvCacheTypeV: "",
    embedding: false,
    adapters: [],
  };
  it("load options: threads at most the cores, a context of at least 4, a batch within it, at least one slot", () => {
    expect(boundLoadOptions(load, { cores: 3 })).toMatchObject({ numCtx: 4, numBatch: 4, numGpu: -1, numThread: 3, slots: 1 });
    expect(boundLoadOptions({ ...load, numThread: -1 }, { cores: 3 }).numThread).toBe(0);
  });
  it("a generation job: sampling, num_predict and num_keep in range, even a refused repeat_penalty", () => {
    const job: GenerateJob = {
      prompt: "x",
      stop: [],
      wantContext: false,
      numPredict: -8,
      numKeep: -2,
      sampling: { temperature: -2, topK: 2 ** 33, topP: 2, minP: -2, seed: 2 ** 32, repeatLastN: -4, repeatPenalty: 0, presencePenalty: 1e39, frequencyPenalty: 0 },
    };
    expect(boundJob({ ...job, stop: ["a", "x".repeat(257), ...Array.from({ length: 300 }, (_, i) => `s${i}`)] }, { cores: 2 }).stop).toEqual([
      "a",
      ...Array.from({ length: 255 }, (_, i) => `s${i}`),
    ]);
    expect(boundJob(job, { cores: 2 })).toMatchObject({
      numPredict: -1,
      numKeep: -1,
      sampling: { temperature: 0, topK: 2 ** 31 - 1, topP: 1, minP: 0, seed: 0, repeatLastN: -1, repeatPenalty: 1e-4, presencePenalty: 1e4 },
    });
  });
});
