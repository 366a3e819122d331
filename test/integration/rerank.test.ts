// Reranking on the real daemon and runner: generated rerankers (scripts/make-test-model.ts
// --ranking: qwen3, pooling_type rank, a classifier head on the last token; and --arch bert
// --ranking: a BERT cross-encoder as bge-reranker, the pooler and a one-score head on [CLS])
// through /api/rerank and /v1/rerank; the scores are node-llama-cpp's ranking context's own.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
const RANKERS = [
  { name: "ranker", opts: { ranking: true, type: "F32" } },
  { name: "bert-ranker", opts: { arch: "bert", ranking: true, type: "F32" } },
] as const;
const rankerFiles = new Map<string, string>();
const QUERY = "what do cats eat";
const DOCS = ["cats eat fish and mice", "the stock market fell today", "a cat is a small animal", "dogs bark at night", ""];

const post = async (path: string, body: object) => {
  const r = await fetch(`${d.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  d = await startDaemon();
  const parameters = { num_thread: 1 };
  for (const r of RANKERS) {
    rankerFiles.set(r.name, await makeTestModel(r.opts));
    expect((await createModelFromFile(d.url, r.name, rankerFiles.get(r.name)!, { parameters })).status).toBe(200);
  }
  expect((await createModelFromFile(d.url, "tiny", await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }), { parameters })).status).toBe(200);
  expect((await createModelFromFile(d.url, "embed", await makeTestModel({ embedding: true, type: "F32" }), { parameters })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await d?.stop();
});

describe("/api/rerank", () => {
  it.each(RANKERS)("$name: scores every document as node-llama-cpp's ranking context does, most relevant first", async ({ name }) => {
    const r = await post("/api/rerank", { model: name, query: QUERY, documents: DOCS });
    expect(r.status).toBe(200);
    const results = r.body.results as Array<{ index: number; relevance_score: number; document?: unknown }>;
    expect(results.map((x) => x.index).sort()).toEqual([0, 1, 2, 3, 4]);
    for (let i = 1; i < results.length; i++) expect(results[i - 1]!.relevance_score).toBeGreaterThanOrEqual(results[i]!.relevance_score);
    for (const x of results) {
      expect(x.relevance_score).toBeGreaterThan(0);
      expect(x.relevance_score).toBeLessThan(1);
      expect("document" in x).toBe(false);
    }
    expect(new Set(results.map((x) => x.relevance_score)).size).toBeGreaterThan(1);
    expect(r.body).toMatchObject({ model: name, total_duration: expect.any(Number), load_duration: expect.any(Number), prompt_eval_count: expect.any(Number) });
    expect(r.body.prompt_eval_count as number).toBeGreaterThan(DOCS.length * 4);

    // The same scores straight from the engine.
    const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error, maxThreads: 1 });
    try {
      // without flash attention, as the daemon runs embedding and ranking models (Ollama's rule)
      const model = await llama.loadModel({ modelPath: rankerFiles.get(name)!, defaultContextFlashAttention: false });
      const ctx = await model.createRankingContext({ contextSize: 512 });
      const direct = await ctx.rankAll(QUERY, DOCS);
      for (const x of results) expect(x.relevance_score).toBeCloseTo(direct[x.index]!, 6);
    } finally {
      await llama.dispose();
    }
  });

  it("top_n, return_documents, documents as {text}; the same request gives the same scores", async () => {
    const all = await post("/api/rerank", { model: "ranker", query: QUERY, documents: DOCS });
    const r = await post("/api/rerank", { model: "ranker", query: QUERY, documents: DOCS.map((text) => ({ text })), top_n: 2, return_documents: true });
    expect(r.status).toBe(200);
    const top = r.body.results as Array<{ index: number; relevance_score: number; document: { text: string } }>;
    expect(top).toEqual((all.body.results as Array<{ index: number }>).slice(0, 2).map((x) => ({ ...x, document: { text: DOCS[x.index] } })));
  });

  it("no documents: an empty list (the model loads); a document longer than the context is scored by its best part, or refused with truncate:false", async () => {
    expect((await post("/api/rerank", { model: "ranker", query: QUERY, documents: [] })).body.results).toEqual([]);
    const long = "cats eat fish ".repeat(400);
    const ok = await post("/api/rerank", { model: "ranker", query: QUERY, documents: [long, "x"], options: { num_ctx: 256 } });
    expect(ok.status).toBe(200);
    expect((ok.body.results as unknown[]).length).toBe(2);
    const refused = await post("/api/rerank", { model: "ranker", query: QUERY, documents: [long], truncate: false, options: { num_ctx: 256 } });
    expect(refused).toEqual({ status: 400, body: { error: "the input length exceeds the context length" } });
  });

  it("bad requests say what to send; other models are refused with the reason", async () => {
    expect(await post("/api/rerank", { query: "q", documents: [] })).toEqual({ status: 400, body: { error: "model is required" } });
    expect(await post("/api/rerank", { model: "nope", query: "q", documents: ["a"] })).toEqual({ status: 404, body: { error: 'model "nope" not found, try pulling it first' } });
    expect((await post("/api/rerank", { model: "ranker", documents: ["a"] })).body.error).toMatch(/^query is required/);
    expect((await post("/api/rerank", { model: "ranker", query: "q", documents: "a" })).body.error).toMatch(/^documents is required: an array/);
    expect((await post("/api/rerank", { model: "ranker", query: "q", documents: [1] })).body.error).toBe("documents[0] must be a string or an object with a text field");
    expect((await post("/api/rerank", { model: "ranker", query: "q", documents: ["a"], top_n: -1 })).status).toBe(400);
    for (const model of ["tiny", "embed"]) {
      const r = await post("/api/rerank", { model, query: "q", documents: ["a"] });
      expect(r).toEqual({ status: 400, body: { error: "reranking is not supported by this model: it needs a reranking model (a GGUF with pooling_type rank)" } });
    }
    const e = await post("/api/embed", { model: "ranker", input: "a" });
    expect(e).toEqual({ status: 400, body: { error: "embeddings are not supported by this backend: this model is a reranker (pooling_type rank); rank documents with /api/rerank" } });
  });
});

describe("/v1/rerank", () => {
  it("the list shape with usage; OpenAI's error shape", async () => {
    const r = await post("/v1/rerank", { model: "ranker", query: QUERY, documents: DOCS, top_n: 3, return_documents: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ object: "list", model: "ranker", usage: { prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) } });
    const results = r.body.results as Array<{ index: number; relevance_score: number; document: { text: string } }>;
    expect(results).toHaveLength(3);
    for (const x of results) expect(x.document.text).toBe(DOCS[x.index]);
    const bad = await post("/v1/rerank", { model: "tiny", query: "q", documents: ["a"] });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ type: "invalid_request_error", message: expect.stringMatching(/^reranking is not supported by this model/) });
  });
});
