// BERT-family embedding models (what all-minilm, bge, mxbai-embed and nomic-embed-text are):
// encoders with bidirectional attention and no KV cache, a WordPiece tokenizer that puts [CLS] and
// [SEP] around every input, a 512-position table (bert) or rotary positions (nomic-bert), and no
// BOS/EOS ids in the file. Each goes through the real daemon and is checked against plain
// node-llama-cpp on the same file.
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { kv, writeGgufCached } from "../../scripts/gguf-writer.js";
import { buildModel, makeTestModel, type Architecture, type MakeModelOptions } from "../../scripts/make-test-model.js";
import { BERT_CONTEXT, NOMIC_CONTEXT } from "../../scripts/make-bert-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
let llama: Llama;

beforeAll(async () => {
  d = await startDaemon({ OLLAMA_KEEP_ALIVE: "30s" });
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
}, 60_000);

afterAll(async () => {
  await d?.stop();
  await llama?.dispose();
});

async function post(route: string, body: unknown): Promise<{ status: number; json: any; text: string }> {
  const r = await fetch(`${d.url}${route}`, { method: "POST", body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text.startsWith("{") ? JSON.parse(text) : undefined, text };
}

const unit = (v: readonly number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const maxDiff = (a: readonly number[], b: readonly number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

const TEXTS = ["Hello there", "The quick brown fox, again: the QUICK brown fox!", "Ünïcödé café naïve 日本語 😀"];

describe.each([
  { arch: "bert" as Architecture, context: BERT_CONTEXT },
  { arch: "nomic-bert" as Architecture, context: NOMIC_CONTEXT },
])("$arch", ({ arch, context }) => {
  const name = `${arch}-embed`;
  let file: string;

  beforeAll(async () => {
    file = await makeTestModel({ arch });
    const r = await createModelFromFile(d.url, name, file);
    expect(r.status, await r.text()).toBe(200);
  }, 60_000);

  it("is shown as an embedding model of its family", async () => {
    const { status, json, text } = await post("/api/show", { model: name });
    expect(status, text).toBe(200);
    expect(json.capabilities).toEqual(["embedding"]);
    expect(json.details.family).toBe(arch);
    expect(json.model_info[`${arch}.pooling_type`]).toBe(1);
    expect(json.model_info[`${arch}.context_length`]).toBe(context);
    expect(json.template).toBe("{{ .Prompt }}");
  });

  it("embeds as plain node-llama-cpp does, each input alone, [CLS] and [SEP] counted", async () => {
    const { status, json, text } = await post("/api/embed", { model: name, input: TEXTS });
    expect(status, text).toBe(200);
    expect(json.embeddings).toHaveLength(TEXTS.length);
    // The daemon runs embedding models without flash attention (Ollama's rule), so the engine is
    // asked for the same arithmetic.
    const model = await llama.loadModel({ modelPath: file, defaultContextFlashAttention: false });
    const engine = await model.createEmbeddingContext({ contextSize: context, batchSize: context });
    try {
      let tokens = 0;
      for (let i = 0; i < TEXTS.length; i++) {
        const got = json.embeddings[i] as number[];
        expect(got).toHaveLength(64);
        expect(Math.hypot(...got)).toBeCloseTo(1, 6);
        const want = unit((await engine.getEmbeddingFor(TEXTS[i]!)).vector);
        expect(maxDiff(got, want), TEXTS[i]).toBeLessThan(1e-6);
        // in a batch of inputs as alone: no input attends to another's tokens
        const alone = await post("/api/embed", { model: name, input: TEXTS[i] });
        expect(alone.json.embeddings[0]).toEqual(got);
        tokens += model.tokenize(TEXTS[i]!).length + 2;
      }
      expect(json.prompt_eval_count).toBe(tokens);
      expect(maxDiff(json.embeddings[0], json.embeddings[1])).toBeGreaterThan(0.01);
    } finally {
      await engine.dispose();
      await model.dispose();
    }
  });

  it("runs within the positions the model has: a larger num_ctx is cut to it, a longer input truncated or refused", async () => {
    const long = "word ".repeat(context + 100);
    const refused = await post("/api/embed", { model: name, input: long, truncate: false, options: { num_ctx: 8192 } });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe("the input length exceeds the context length");
    // The legacy route never truncates, and passes the runner's refusal on as a 500 (as Ollama).
    const legacy = await post("/api/embeddings", { model: name, prompt: long });
    expect(legacy.status).toBe(500);
    expect(legacy.json.error).toBe("the input length exceeds the context length");
    const cut = await post("/api/embed", { model: name, input: long, options: { num_ctx: 8192 } });
    expect(cut.status, cut.text).toBe(200);
    expect(cut.json.prompt_eval_count).toBeLessThanOrEqual(context);
    expect(cut.json.prompt_eval_count).toBeGreaterThan(context - 8);
    expect(Math.hypot(...(cut.json.embeddings[0] as number[]))).toBeCloseTo(1, 6);
    const ps = (await (await fetch(`${d.url}/api/ps`)).json()) as { models: { name: string; context_length: number }[] };
    expect(ps.models.find((m) => m.name === `${name}:latest`)?.context_length).toBe(context);
  });

  it("answers the legacy route unnormalised, the OpenAI client, and refuses to generate or chat", async () => {
    const legacy = await post("/api/embeddings", { model: name, prompt: TEXTS[0] });
    expect(legacy.status, legacy.text).toBe(200);
    const embed = await post("/api/embed", { model: name, input: TEXTS[0] });
    expect(maxDiff(unit(legacy.json.embedding), embed.json.embeddings[0])).toBeLessThan(1e-6);
    const openai = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "unused" });
    const v1 = await openai.embeddings.create({ model: name, input: [TEXTS[0]!, TEXTS[1]!], encoding_format: "float" });
    expect(v1.data.map((e) => e.index)).toEqual([0, 1]);
    expect(maxDiff(v1.data[0]!.embedding, embed.json.embeddings[0])).toBeLessThan(1e-6);
    expect(v1.usage.prompt_tokens).toBeGreaterThan(4);
    const gen = await post("/api/generate", { model: name, prompt: "hi" });
    expect(gen.status).toBe(400);
    expect(gen.json.error).toBe(`"${name}" does not support generate`);
    const chat = await post("/api/chat", { model: name, messages: [{ role: "user", content: "hi" }] });
    expect(chat.status).toBe(400);
    expect(chat.json.error).toBe(`"${name}" does not support chat`);
  });
});

describe("a long input is cut to what the context holds with the tokens the engine adds", () => {
  // A byte-level BPE file without tokenizer.ggml.add_bos_token: the engine still adds BOS (its
  // default for the vocabulary), which the file's flags alone do not say.
  const noBosFlag = (kvs: ReturnType<typeof buildModel>["kvs"]) => kvs.filter((e) => e.key !== "tokenizer.ggml.add_bos_token");
  const addEos = (kvs: ReturnType<typeof buildModel>["kvs"]) => kvs.map((e) => (e.key === "tokenizer.ggml.add_eos_token" ? kv.bool(e.key, true) : e));
  it.each([
    { label: "BPE, no add_bos_token key", opts: { embedding: true, tokenizer: "gpt2", template: "llama3" }, edit: noBosFlag },
    { label: "BPE, add_eos_token", opts: { embedding: true, tokenizer: "gpt2", template: "llama3" }, edit: addEos },
    { label: "WordPiece", opts: { arch: "bert" }, edit: (k: ReturnType<typeof buildModel>["kvs"]) => k },
  ] as Array<{ label: string; opts: MakeModelOptions; edit: (k: ReturnType<typeof buildModel>["kvs"]) => ReturnType<typeof buildModel>["kvs"] }>)("$label", async ({ label, opts, edit }) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-embed-fit-"));
    try {
      const { kvs, tensors } = buildModel(opts);
      const file = await writeGgufCached(path.join(dir, "model.gguf"), edit(kvs), tensors);
      const name = `fit-${label.replace(/\W+/g, "-").toLowerCase()}`;
      const r = await createModelFromFile(d.url, name, file);
      expect(r.status, await r.text()).toBe(200);
      const long = "word ".repeat(400);
      const cut = await post("/api/embed", { model: name, input: long, options: { num_ctx: 256 } });
      expect(cut.status, cut.text).toBe(200);
      // the most the engine takes: one position short of the context, its own tokens included
      expect(cut.json.prompt_eval_count).toBe(255);
      const refused = await post("/api/embed", { model: name, input: long, truncate: false, options: { num_ctx: 256 } });
      expect([refused.status, refused.json.error]).toEqual([400, "the input length exceeds the context length"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
