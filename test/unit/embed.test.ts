// Embedding helpers: Ollama's input rules, normalisation, `dimensions`, the token allowance; and
// the runner side (src/backends/llamacpp/embed.ts) on a generated embedding model.
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { embedInputs, embeddingContextOptions } from "../../src/backends/llamacpp/embed.js";
import { ApiError } from "../../src/daemon/errors.js";
import { inputTokenLimit, specialTokenAllowance } from "../../src/backends/llamacpp/embed-inputs.js";
import { applyDimensions, normalize, parseEmbedInput } from "../../src/daemon/services/embed.js";

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe("embed helpers", () => {
  it("input: a string, an array of strings, nothing; anything else is 'invalid input type'", () => {
    expect(parseEmbedInput("a")).toEqual(["a"]);
    expect(parseEmbedInput("")).toEqual([]);
    expect(parseEmbedInput(undefined)).toEqual([]);
    expect(parseEmbedInput(null)).toEqual([]);
    expect(parseEmbedInput(["a", ""])).toEqual(["a", ""]);
    for (const bad of [["a", 1], 5, { a: 1 }, true]) {
      expect(() => parseEmbedInput(bad)).toThrow(ApiError);
      expect(() => parseEmbedInput(bad)).toThrow("invalid input type");
    }
  });

  it("normalises to unit length; a zero vector stays zero; NaN is an error", () => {
    const v = normalize([3, 4]);
    expect(v[0]).toBeCloseTo(0.6, 12);
    expect(v[1]).toBeCloseTo(0.8, 12);
    expect(normalize([0, 0])).toEqual([0, 0]);
    expect(() => normalize([1, NaN])).toThrow("embedding contains NaN or Inf values");
  });

  it("dimensions truncates then normalises again; larger or non-positive values change nothing", () => {
    const v = normalize([1, 2, 3, 4]);
    const d = applyDimensions(v, 2);
    expect(d).toHaveLength(2);
    expect(norm(d)).toBeCloseTo(1, 12);
    expect(d[0]! / d[1]!).toBeCloseTo(0.5, 12);
    expect(applyDimensions(v, 4)).toBe(v);
    expect(applyDimensions(v, 10)).toBe(v);
    expect(applyDimensions(v, 0)).toBe(v);
    expect(applyDimensions(v, undefined)).toBe(v);
  });

  it("special-token allowance by tokenizer family", () => {
    expect(specialTokenAllowance({ "tokenizer.ggml.model": "llama", "tokenizer.ggml.add_bos_token": true, "tokenizer.ggml.add_eos_token": false })).toBe(1);
    expect(specialTokenAllowance({ "tokenizer.ggml.model": "llama" })).toBe(1);
    expect(specialTokenAllowance({ "tokenizer.ggml.model": "gpt2" })).toBe(0);
    expect(specialTokenAllowance({ "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.add_bos_token": true, "tokenizer.ggml.add_eos_token": true })).toBe(2);
    expect(specialTokenAllowance({ "tokenizer.ggml.model": "bert" })).toBe(2);
    expect(inputTokenLimit(512, 2)).toBe(509);
  });
});

describe("runner embeddings on a generated embedding model", () => {
  let llama: Llama;
  let model: LlamaModel;
  beforeAll(async () => {
    llama = await getLlama({ build: "never", gpu: false, maxThreads: 2, logLevel: LlamaLogLevel.error });
    model = await llama.loadModel({ modelPath: await makeTestModel({ embedding: true, type: "F32" }) });
  }, 60_000);
  afterAll(async () => {
    await model?.dispose();
    await llama?.dispose();
  });

  it("raw vectors of the embedding length, deterministic, BOS counted, '' embedded as BOS", async () => {
    const ctx = await model.createEmbeddingContext(embeddingContextOptions(256, 1));
    try {
      const r = await embedInputs(model, ctx, ["hello world", "hello world", ""]);
      expect(r.embeddings).toHaveLength(3);
      expect(r.embeddings[0]).toHaveLength(64);
      expect(r.embeddings[1]).toEqual(r.embeddings[0]);
      expect(r.embeddings[2]).toHaveLength(64);
      expect(r.embeddings[2]).not.toEqual(r.embeddings[0]);
      const tokens = model.tokenize("hello world").length;
      expect(r.promptEvalCount).toBe(2 * (tokens + 1) + 1);
    } finally {
      await ctx.dispose();
    }
  });

  it("an input longer than 512 tokens is pooled over all its tokens (one batch of the context size)", async () => {
    const text = Array.from({ length: 130 }, () => "hello world").join(" ");
    expect(model.tokenize(text).length).toBeGreaterThan(512);
    const whole = await model.createEmbeddingContext(embeddingContextOptions(2048, 1));
    const batched = await model.createEmbeddingContext({ contextSize: 2048, batchSize: 512, threads: 1 });
    try {
      const a = (await embedInputs(model, whole, [text])).embeddings[0]!;
      const b = (await embedInputs(model, batched, [text])).embeddings[0]!;
      // The last-batch-only pooling of a 512-token batch gives a different vector.
      expect(a).not.toEqual(b);
      // Mean pooling over every token: embedding the same text twice in one batch changes little.
      const twice = (await embedInputs(model, whole, [`${text} ${text}`])).embeddings[0]!;
      const cos = a.reduce((s, x, i) => s + x * twice[i]!, 0) / (norm(a) * norm(twice));
      expect(cos).toBeGreaterThan(0.9);
    } finally {
      await whole.dispose();
      await batched.dispose();
    }
  });
});
