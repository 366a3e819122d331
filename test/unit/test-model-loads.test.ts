// The synthetic models from scripts/make-test-model.ts load and run in the real node-llama-cpp.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, LlamaCompletion, LlamaLogLevel, type Llama, type LlamaModel } from "node-llama-cpp";
import { buildModel, makeTestModel, modelFileName } from "../../scripts/make-test-model.js";
import { buildBpeVocab } from "../../scripts/test-vocab.js";

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

describe("other kinds of models (--tokenizer, --template, --tied, --arch)", () => {
  it("a byte-level BPE (gpt2) tokenizer with Llama 3's special tokens: loads, round-trips, generates", async () => {
    const model = await load({ type: "Q4_0", tokenizer: "gpt2", template: "llama3" });
    const meta = model.fileInfo.metadata.tokenizer.ggml as unknown as Record<string, unknown>;
    expect(meta.model).toBe("gpt2");
    expect(meta.pre).toBe("llama-bpe");
    expect(model.detokenize([model.tokens.bos!], true)).toBe("<|begin_of_text|>");
    expect(model.detokenize([model.tokens.eos!], true)).toBe("<|eot_id|>");
    expect(model.isEogToken(model.tokens.eos!)).toBe(true);
    const text = "<|start_header_id|>user<|end_header_id|>\n\nthe quick brown fox, 42!<|eot_id|>";
    const toks = model.tokenize(text, true);
    expect(toks[0]).toBe(model.tokenize("<|start_header_id|>", true)[0]);
    expect(toks.length).toBeLessThan(text.length / 3); // words merge into whole tokens
    expect(model.detokenize(toks, true)).toBe(text);
    const ctx = await model.createContext({ contextSize: 256, threads: 1 });
    try {
      const c = new LlamaCompletion({ contextSequence: ctx.getSequence() });
      const r = await c.generateCompletionWithMeta("hello there", { maxTokens: 12, temperature: 0.8, seed: 42 });
      expect(r.response.trim().length).toBeGreaterThan(0);
    } finally {
      await ctx.dispose();
    }
  });

  it("tied (no output.weight), gemma's and mistral's turn tokens, no template, qwen2 with biases", async () => {
    const tied = await load({ type: "Q4_0", template: "gemma", tied: true });
    expect(tied.fileInfo.tensorInfo?.some((t) => t.name === "output.weight")).toBe(false);
    expect(tied.detokenize([tied.tokens.eos!], true)).toBe("<end_of_turn>");
    const mistral = await load({ type: "Q4_0", template: "mistral" });
    expect(mistral.detokenize([mistral.tokens.eos!], true)).toBe("</s>");
    const none = await load({ type: "Q4_0", template: "none" });
    expect(none.fileInfo.metadata.tokenizer.chat_template).toBeUndefined();
    const qwen2 = await load({ type: "Q4_0", arch: "qwen2", tokenizer: "gpt2", template: "chatml" });
    expect(qwen2.fileInfo.metadata.general.architecture).toBe("qwen2");
    expect(qwen2.fileInfo.tensorInfo?.some((t) => t.name === "blk.0.attn_q.bias")).toBe(true);
    for (const model of [tied, mistral, none, qwen2]) {
      const ctx = await model.createContext({ contextSize: 128, threads: 1 });
      try {
        const c = new LlamaCompletion({ contextSequence: ctx.getSequence() });
        const r = await c.generateCompletionWithMeta("hello there", { maxTokens: 8, temperature: 0.8, seed: 42 });
        expect(r.response.length).toBeGreaterThan(0);
      } finally {
        await ctx.dispose();
      }
    }
  });

  it("the default kind's bytes do not depend on the new options, and each option changes the file", () => {
    const bytes = (m: ReturnType<typeof buildModel>) => ({
      kvs: m.kvs,
      tensors: m.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, data: Buffer.concat([...t.data()].map((c) => Buffer.from(c))).toString("base64") })),
    });
    expect(bytes(buildModel({ tokenizer: "spm", template: "chatml", tied: false, arch: "llama", endsTurns: false }))).toEqual(bytes(buildModel({})));
    expect(modelFileName({})).toBe("tiny-Q4_0-s1.gguf");
    const names = new Set([{}, { tokenizer: "gpt2" }, { template: "gemma" }, { tied: true }, { arch: "qwen2" }, { endsTurns: true }].map((o) => modelFileName(o as never)));
    expect(names.size).toBe(6);
  });

  it("builds a Llama-3.2-1B-sized (32,000-token) byte-level vocabulary whose merges all name tokens", () => {
    const v = buildBpeVocab(32000, ["<|begin_of_text|>", "<|end_of_text|>"]);
    expect(v.tokens).toHaveLength(32000);
    expect(new Set(v.tokens).size).toBe(32000);
    const known = new Set(v.tokens);
    for (const m of v.merges) {
      const [a, b] = m.split(" ");
      expect(known.has(a!) && known.has(b!) && known.has(a! + b!)).toBe(true);
    }
  });
});
