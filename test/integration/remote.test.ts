// Remote models on a real engine: a second ollamats daemon as the upstream, over Ollama's /api
// and over its OpenAI /v1. What the front daemon answers must be what the upstream answers.
import { Ollama } from "ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let up: TestDaemon; // the engine
let front: TestDaemon; // ollamats with remote models of it
let upstream: Ollama;
let client: Ollama;
const options = { seed: 5, temperature: 0.7, num_predict: 24 };

async function post(d: TestDaemon, path: string, body: unknown): Promise<Response> {
  return fetch(`${d.url}${path}`, { method: "POST", body: JSON.stringify(body) });
}

beforeAll(async () => {
  const tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  const embed = await makeTestModel({ embedding: true, type: "F32" });
  // Heartbeats first: the upstream answers headers at once, as vLLM and llama-server do.
  up = await startDaemon({ OLLAMATS_HEARTBEAT_MS: "0", OLLAMATS_HEARTBEAT_INTERVAL_MS: "500" });
  for (const [name, file] of [["tiny", tiny], ["embed", embed]] as const) {
    const r = await createModelFromFile(up.url, name, file, { parameters: { num_thread: 1 } });
    expect(r.status, await r.clone().text()).toBe(200);
  }
  front = await startDaemon({ OLLAMA_REMOTES: "127.0.0.1", OLLAMATS_REMOTE_TIMEOUT: "60s" });
  for (const [name, from, host] of [
    ["r-api", "tiny", up.url],
    ["r-v1", "tiny", `${up.url}/v1`],
    ["r-embed", "embed", up.url],
  ] as const) {
    const r = await post(front, "/api/create", { model: name, from, remote_host: host, stream: false });
    expect(r.status, await r.clone().text()).toBe(200);
  }
  upstream = new Ollama({ host: up.url });
  client = new Ollama({ host: front.url });
});

afterAll(async () => {
  await front?.stop();
  await up?.stop();
});

describe("a remote model on another ollamats (Ollama's API)", { timeout: 180_000 }, () => {
  it("generate and chat answer exactly what the upstream answers, streamed or not; generate keeps context", async () => {
    await upstream.generate({ model: "tiny", prompt: "Tell me a story", options, stream: false }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const direct = await upstream.generate({ model: "tiny", prompt: "Tell me a story", options, stream: false });
    const via = await client.generate({ model: "r-api", prompt: "Tell me a story", options, stream: false });
    expect(via.response).toBe(direct.response);
    expect(via).toMatchObject({ done: true, done_reason: direct.done_reason, eval_count: direct.eval_count, prompt_eval_count: direct.prompt_eval_count });
    expect(via.context).toEqual(direct.context);

    const messages = [{ role: "user", content: "Hello" }];
    await upstream.chat({ model: "tiny", messages, options, stream: false }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const chatDirect = await upstream.chat({ model: "tiny", messages, options, stream: false });
    let streamed = "";
    let last;
    for await (const ch of await client.chat({ model: "r-api", messages, options, stream: true })) {
      streamed += ch.message.content;
      last = ch;
    }
    expect(streamed).toBe(chatDirect.message.content);
    expect(last).toMatchObject({ done: true, eval_count: chatDirect.eval_count });
    expect(last?.total_duration).toBeGreaterThan(0);
  });

  it("format, tokenize and embed go through the upstream", async () => {
    const schema = { type: "object", properties: { color: { enum: ["red", "green"] } }, required: ["color"] };
    const r = await client.chat({ model: "r-api", messages: [{ role: "user", content: "color?" }], format: schema, options, stream: false });
    expect(JSON.parse(r.message.content)).toEqual({ color: expect.stringMatching(/^(red|green)$/) });

    const tokens = (await (await post(front, "/api/tokenize", { model: "r-api", content: "hello world" })).json()) as { tokens: number[] };
    const direct = (await (await post(up, "/api/tokenize", { model: "tiny", content: "hello world" })).json()) as { tokens: number[] };
    expect(tokens.tokens).toEqual(direct.tokens);

    const e = await client.embed({ model: "r-embed", input: ["a cat", "a dog"] });
    const de = await upstream.embed({ model: "embed", input: ["a cat", "a dog"] });
    expect(e.embeddings).toHaveLength(2);
    e.embeddings.forEach((v, i) => v.forEach((x, j) => expect(x).toBeCloseTo(de.embeddings[i]![j]!, 12)));
  });

  it("show and ps describe it as the upstream does, with its upstream and state", async () => {
    const show = await client.show({ model: "r-api" });
    expect(show).toMatchObject({ remote_model: "tiny", remote_host: up.url });
    expect(show.capabilities).toEqual((await upstream.show({ model: "tiny" })).capabilities);
    const ps = (await (await fetch(`${front.url}/api/ps`)).json()) as { models: Array<Record<string, unknown>> };
    const m = ps.models.find((x) => x.name === "r-api:latest");
    expect(m).toMatchObject({ remote_model: "tiny", upstreams: [{ url: up.url, api: "ollama", state: "healthy", outstanding: 0 }] });
    expect(m?.size).toBeGreaterThan(0); // what the model holds upstream
  });
});

describe("a remote model on another ollamats's OpenAI API (/v1)", { timeout: 180_000 }, () => {
  it("chat answers what the upstream answers to the same options", async () => {
    const messages = [{ role: "user", content: "Hello" }];
    // OpenAI's API has defaults of its own (top_p 1): the options that differ are set.
    const options = { seed: 5, temperature: 0.7, top_p: 0.9, num_predict: 24 };
    await upstream.chat({ model: "tiny", messages, options, stream: false }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const direct = await upstream.chat({ model: "tiny", messages, options, stream: false });
    const via = await client.chat({ model: "r-v1", messages, options, stream: false });
    expect(via.message.content).toBe(direct.message.content);
    expect(via).toMatchObject({ done_reason: direct.done_reason, prompt_eval_count: direct.prompt_eval_count, eval_count: direct.eval_count });
  });

  it("an upstream without /tokenize is a clear 400", async () => {
    const r = await post(front, "/api/tokenize", { model: "r-v1", content: "x" });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain("cannot tokenize");
  });
});

describe("the front daemon's /metrics", () => {
  it("counts each request to the upstream with its latency, and shows the upstream's health", async () => {
    const { Scrape } = await import("../helpers/prometheus.js");
    const s = new Scrape(await (await fetch(`${front.url}/metrics`)).text());
    expect(s.problems("ollamats_")).toEqual([]);
    const ok = s.value("ollamats_upstream_requests_total", { upstream: up.url, result: "ok" });
    expect(ok).toBeGreaterThan(0);
    expect(s.histogram("ollamats_upstream_request_duration_seconds", { upstream: up.url }).count).toBe(ok + s.value("ollamats_upstream_requests_total", { upstream: up.url, result: "error" }));
    expect(s.value("ollamats_upstream_up", { model: "r-api:latest", upstream: up.url })).toBe(1);
    expect(s.value("ollamats_generated_tokens_total", { model: "r-api:latest" })).toBeGreaterThan(0);
  });
});
