// The synthetic models from scripts/make-test-model.ts load and run in the real node-llama-cpp.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, LlamaCompletion, LlamaLogLevel, type Llama, type LlamaModel } from "node-llama-cpp";
import { makeTestModel } from "../../scripts/make-test-model.js";

let llama: Llama;
const models: LlamaModel[] = [];

beforeAll(async () => {
  llama = await getLlama({ build: "never", gpu: false, maxThreads: 2, logLevel: LlamaLogLevel.error });
}, 60_000);

afterAll(async () => {
  for (const m of models) await m.dispose();
  await llama?.dispose();
});

async function load(opts: Parameters<typeof makeTestModel>[0]): Promise<LlamaModel> {
  const model = await llama.loadModel({ modelPath: await makeTestModel(opts) });
  models.push(model);
  return model;
}

const PROMPT = "<|im_start|>user\nWrite a short story<|im_end|>\n<|im_start|>assistant\n";

describe.each(["Q4_0", "F16"] as const)("tiny %s model in node-llama-cpp", (type) => {
  let model: LlamaModel;
  beforeAll(async () => {
    model = await load({ type });
  }, 30_000);

  it("has the ChatML control tokens, bos 1 and eos 4 (<|im_end|>)", () => {
    expect(model.tokens.bos).toBe(1);
    expect(model.tokens.eos).toBe(4);
    expect(model.isEogToken(4 as never)).toBe(true);
    const toks = model.tokenize("<|im_start|>user\nhi<|im_end|>", true);
    expect(toks[0]).toBe(3);
    expect(toks.at(-1)).toBe(4);
    expect(toks).toContain(15); // "\n" is the byte token <0x0A> = 5 + 10
    expect(model.detokenize(toks, true)).toBe("<|im_start|>user\nhi<|im_end|>");
    expect(model.detokenize(model.tokenize("the quick brown fox"))).toBe("the quick brown fox");
  });

  it("generates deterministic, non-empty text for a fixed seed", async () => {
    const context = await model.createContext({ contextSize: 256, threads: 1 }); // 1 thread: tiny model, robust on a busy machine
    try {
      const seq = context.getSequence();
      const completion = new LlamaCompletion({ contextSequence: seq });
      const run = async (seed: number) => {
        seq.clearHistory();
        return completion.generateCompletionWithMeta(PROMPT, { maxTokens: 16, temperature: 0.8, seed });
      };
      const a = await run(42);
      const b = await run(42);
      expect(a.response.trim().length).toBeGreaterThan(0);
      expect(a.metadata.stopReason).toBe("maxTokens");
      expect(b.response).toBe(a.response);
      expect(new Set(a.response.trim().split(/\s+/)).size).toBeGreaterThan(2); // not one token forever
    } finally {
      await context.dispose();
    }
  });
});

describe("tiny embedding model", () => {
  it("yields a 64-dimensional vector", async () => {
    const model = await load({ type: "F32", embedding: true });
    const ctx = await model.createEmbeddingContext({ contextSize: 128, threads: 1 });
    try {
      const a = await ctx.getEmbeddingFor("hello world");
      const b = await ctx.getEmbeddingFor("the quick brown fox");
      expect(a.vector).toHaveLength(64);
      expect(a.vector.every((x) => Number.isFinite(x))).toBe(true);
      expect(a.calculateCosineSimilarity(b)).toBeLessThan(0.999);
    } finally {
      await ctx.dispose();
    }
  });
});

describe("tiny reranker (--ranking)", () => {
  it("is a ranking model to node-llama-cpp: scores in (0, 1) that differ by document and repeat exactly", async () => {
    const model = await load({ type: "F32", ranking: true });
    expect(model.fileInsights.supportsRanking).toBe(true);
    expect(model.fileInfo.metadata.general.architecture).toBe("qwen3");
    const ctx = await model.createRankingContext({ contextSize: 256, threads: 1 });
    try {
      const docs = ["cats eat fish", "stock prices fell", "a small animal"];
      const scores = await ctx.rankAll("what do cats eat", docs);
      expect(scores.every((s) => s > 0 && s < 1)).toBe(true);
      expect(new Set(scores).size).toBe(3);
      expect(await ctx.rankAll("what do cats eat", docs)).toEqual(scores);
    } finally {
      await ctx.dispose();
    }
  });
});
