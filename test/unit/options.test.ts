import { describe, expect, it } from "vitest";
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
  it("ignores unknown options and rejects wrong types", () => {
    expect(resolveOptions({ numCtx: 8 }, undefined, { bogus: 1 }).runner.numCtx).toBe(8);
    expect(() => resolveOptions({ numCtx: 8 }, undefined, { num_ctx: "big" })).toThrow('option "num_ctx" must be of type integer');
    expect(() => resolveOptions({ numCtx: 8 }, undefined, { use_mmap: 1 })).toThrow('option "use_mmap" must be of type boolean');
  });
});
