// ollama-js (the `ollama` npm package) against the daemon: every call it makes, as applications
// use it. Tools, structured output and thinking exercise the completion layer's event stream
// (format grammar, tool-call parser, thinking parser).
import { Ollama } from "ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDaemon } from "../helpers/daemon.js";
import {
  ANSWER_SCHEMA,
  CALL_FORMAT,
  CITIES,
  EMBED_DIM,
  expectAnswer,
  LONG_TEXT,
  MODELS,
  norm,
  startCompatDaemon,
  SYSTEM,
  WEATHER_TOOL,
} from "./helpers.js";

let d: TestDaemon;
let ollama: Ollama;
const options = { seed: 3, num_predict: 12, temperature: 0.7 };

beforeAll(async () => {
  d = await startCompatDaemon();
  ollama = new Ollama({ host: d.url });
});

afterAll(async () => {
  await d?.stop();
});

describe("ollama-js: generation", () => {
  it("generate: non-streamed and streamed give the same text; final object has the stats and context", async () => {
    await ollama.generate({ model: MODELS.chat, prompt: "Tell me a story", options, stream: false }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const whole = await ollama.generate({ model: MODELS.chat, prompt: "Tell me a story", options, stream: false });
    expect(whole.model).toBe(MODELS.chat);
    expect(whole.response?.length).toBeGreaterThan(0);
    expect(whole.done).toBe(true);
    expect(["stop", "length"]).toContain(whole.done_reason);
    expect(whole.eval_count).toBeGreaterThan(0);
    expect(whole.context.length).toBeGreaterThan(whole.prompt_eval_count);
    const stream = await ollama.generate({ model: MODELS.chat, prompt: "Tell me a story", options, stream: true });
    let text = "";
    let last;
    for await (const part of stream) {
      text += part.response;
      last = part;
    }
    expect(text).toBe(whole.response);
    expect(last?.done).toBe(true);
    expect(last?.total_duration).toBeGreaterThan(0);
  });

  it("chat: the system prompt reaches the model; streamed chunks all carry an assistant message", async () => {
    const messages = [{ role: "user", content: "Hello there" }];
    const withModelSystem = await ollama.chat({ model: MODELS.chat, messages, options, stream: false });
    const withOwn = await ollama.chat({ model: MODELS.chat, messages: [{ role: "system", content: "Answer in one word, always, whatever happens." }, ...messages], options, stream: false });
    expect(withModelSystem.message.content.length).toBeGreaterThan(0);
    expect(withOwn.prompt_eval_count).toBeGreaterThan(withModelSystem.prompt_eval_count);
    const shown = await ollama.show({ model: MODELS.chat });
    expect(shown.system).toBe(SYSTEM);

    const stream = await ollama.chat({ model: MODELS.chat, messages, options, stream: true });
    let text = "";
    let chunks = 0;
    let final;
    for await (const part of stream) {
      expect(part.message.role).toBe("assistant");
      expect(typeof part.message.content).toBe("string");
      text += part.message.content;
      chunks++;
      final = part;
    }
    expect(chunks).toBeGreaterThan(1);
    expect(text).toBe(withModelSystem.message.content);
    expect(final?.done_reason).toMatch(/^(stop|length)$/);
    expect(final?.eval_count).toBe(withModelSystem.eval_count);
  });

  it("chat: format 'json' constrains the output to JSON; a JSON schema gives an object that validates", async () => {
    const json = await ollama.chat({ model: MODELS.chat, messages: [{ role: "user", content: "JSON please" }], format: "json", options: { ...options, num_predict: 48 }, stream: false });
    expect(json.message.content.trimStart().startsWith("{")).toBe(true);
    if (json.done_reason === "stop") expect(() => JSON.parse(json.message.content)).not.toThrow();
    const schema = await ollama.chat({ model: MODELS.chat, messages: [{ role: "user", content: "yes or no?" }], format: ANSWER_SCHEMA, options: { ...options, num_predict: 64 }, stream: false });
    expect(schema.done_reason).toBe("stop");
    expectAnswer(JSON.parse(schema.message.content));
  });

  it("chat: tools on a tools template give tool_calls with object arguments; the tool result is accepted", async () => {
    const messages = [{ role: "user", content: "What is the weather in Paris?" }];
    const r = await ollama.chat({ model: MODELS.tools, messages, tools: [WEATHER_TOOL], format: CALL_FORMAT, options: { ...options, num_predict: 64 }, stream: false });
    const calls = r.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    expect(calls[0]!.function.name).toBe("get_weather");
    expect(CITIES).toContain(calls[0]!.function.arguments.city);
    expect(r.message.content).toBe("");

    const followUp = await ollama.chat({
      model: MODELS.tools,
      messages: [...messages, r.message, { role: "tool", content: "22 degrees and sunny", tool_name: "get_weather" }],
      tools: [WEATHER_TOOL],
      options,
      stream: false,
    });
    expect(followUp.message.role).toBe("assistant");
    expect(followUp.eval_count).toBeGreaterThan(0);

    const stream = await ollama.chat({ model: MODELS.tools, messages, tools: [WEATHER_TOOL], format: CALL_FORMAT, options: { ...options, num_predict: 64 }, stream: true });
    const streamed = [];
    for await (const part of stream) streamed.push(...(part.message.tool_calls ?? []));
    expect(streamed.map((c) => c.function.name)).toEqual(["get_weather"]);
  });

  it("chat: thinking goes to message.thinking on a thinking template", async () => {
    const r = await ollama.chat({ model: MODELS.thinker, messages: [{ role: "user", content: "Think first" }], think: true, options, stream: false });
    expect(r.message.thinking?.length).toBeGreaterThan(0);
    const off = await ollama.chat({ model: MODELS.thinker, messages: [{ role: "user", content: "Think first" }], think: false, options, stream: false });
    expect(off.message.thinking).toBeUndefined();
    expect(off.message.content.length).toBeGreaterThan(0);
  });

  it("abort mid-stream, then the next request is served", async () => {
    const stream = await ollama.generate({ model: MODELS.chat, prompt: "Go on forever", options: { num_predict: 100000 }, stream: true });
    let got = 0;
    await expect(
      (async () => {
        for await (const _ of stream) {
          if (++got === 2) stream.abort();
        }
      })(),
    ).rejects.toThrow(/abort/i);
    expect(got).toBeGreaterThanOrEqual(2);
    const next = await ollama.generate({ model: MODELS.chat, prompt: "Next", options, stream: false });
    expect(next.response?.length).toBeGreaterThan(0);
  });
});

describe("ollama-js: embeddings", () => {
  it("embed: one input and a batch, unit vectors, all stats present", async () => {
    const one = await ollama.embed({ model: MODELS.embed, input: "hello world" });
    expect(one.model).toBe(MODELS.embed);
    expect(one.embeddings).toHaveLength(1);
    expect(one.embeddings[0]).toHaveLength(EMBED_DIM);
    expect(norm(one.embeddings[0]!)).toBeCloseTo(1, 6);
    expect(one.total_duration).toBeGreaterThan(0);
    expect(one.load_duration).toBeGreaterThan(0);
    expect(one.prompt_eval_count).toBeGreaterThan(0);

    const batch = await ollama.embed({ model: MODELS.embed, input: ["hello world", "something else"] });
    expect(batch.embeddings).toHaveLength(2);
    for (let i = 0; i < EMBED_DIM; i++) expect(batch.embeddings[0]![i]).toBeCloseTo(one.embeddings[0]![i]!, 6);
    expect(batch.embeddings[1]).not.toEqual(batch.embeddings[0]);
    expect(batch.prompt_eval_count).toBeGreaterThan(one.prompt_eval_count);
  });

  it("legacy embeddings: the raw vector; empty input loads the model", async () => {
    const r = await ollama.embeddings({ model: MODELS.embed, prompt: "hello world" });
    expect(r.embedding).toHaveLength(EMBED_DIM);
    expect(Math.abs(norm(r.embedding) - 1)).toBeGreaterThan(1e-3); // not normalised
    const unit = (await ollama.embed({ model: MODELS.embed, input: "hello world" })).embeddings[0]!;
    const n = norm(r.embedding);
    for (let i = 0; i < EMBED_DIM; i++) expect(r.embedding[i]! / n).toBeCloseTo(unit[i]!, 6);
    expect(await ollama.embed({ model: MODELS.embed, input: [] })).toEqual({ model: MODELS.embed, embeddings: [] });
    expect(await ollama.embeddings({ model: MODELS.embed, prompt: "" })).toEqual({ embedding: [] });
  });

  it("embedding errors: a completion model, a missing model, a bad input type", async () => {
    await expect(ollama.embed({ model: MODELS.chat, input: "x" })).rejects.toMatchObject({ status_code: 400, error: `"${MODELS.chat}" does not support embeddings` });
    await expect(ollama.embed({ model: "missing", input: "x" })).rejects.toMatchObject({ status_code: 404 });
    const r = await fetch(`${d.url}/api/embed`, { method: "POST", body: JSON.stringify({ model: MODELS.embed, input: ["a", 3] }) });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ error: "invalid input type" });
  });

  // last: num_ctx 64 reloads the embedding runner
  it("embed: dimensions truncates and renormalises; truncate:false refuses an input over the context", async () => {
    const full = await ollama.embed({ model: MODELS.embed, input: "hello world" });
    const cut = await ollama.embed({ model: MODELS.embed, input: "hello world", dimensions: 16 });
    expect(cut.embeddings[0]).toHaveLength(16);
    expect(norm(cut.embeddings[0]!)).toBeCloseTo(1, 6);
    const scale = norm(full.embeddings[0]!.slice(0, 16));
    for (let i = 0; i < 16; i++) expect(cut.embeddings[0]![i]).toBeCloseTo(full.embeddings[0]![i]! / scale, 6);

    const small = { num_ctx: 64 };
    const truncated = await ollama.embed({ model: MODELS.embed, input: LONG_TEXT, options: small });
    expect(truncated.embeddings[0]).toHaveLength(EMBED_DIM);
    expect(truncated.prompt_eval_count).toBeLessThanOrEqual(64);
    await expect(ollama.embed({ model: MODELS.embed, input: LONG_TEXT, truncate: false, options: small })).rejects.toMatchObject({
      status_code: 400,
      error: "the input length exceeds the context length",
    });
  });

});

describe("ollama-js: model management", () => {
  it("list, show, ps", async () => {
    const names = (await ollama.list()).models.map((m) => m.name);
    for (const m of Object.values(MODELS)) expect(names).toContain(`${m}:latest`);
    const show = await ollama.show({ model: MODELS.tools });
    expect(show.capabilities).toEqual(expect.arrayContaining(["completion", "tools"]));
    expect(show.template).toContain(".ToolCalls");
    expect((await ollama.show({ model: MODELS.embed })).capabilities).toContain("embedding");
    await ollama.generate({ model: MODELS.chat, prompt: "load", options: { num_predict: 1 }, stream: false });
    const ps = await ollama.ps();
    expect(ps.models.map((m) => m.name)).toContain(`${MODELS.chat}:latest`);
    expect(ps.models.find((m) => m.name === `${MODELS.chat}:latest`)?.size).toBeGreaterThan(0);
  });

  it("create from a model, copy, delete", async () => {
    const progress = await ollama.create({ model: "derived", from: MODELS.chat, system: "You are derived." });
    expect(progress.status).toBe("success");
    expect((await ollama.show({ model: "derived" })).system).toBe("You are derived.");
    const answer = await ollama.generate({ model: "derived", prompt: "Hi", options, stream: false });
    expect(answer.response?.length).toBeGreaterThan(0);

    expect((await ollama.copy({ source: "derived", destination: "derived-copy" })).status).toBe("success");
    expect((await ollama.list()).models.map((m) => m.name)).toEqual(expect.arrayContaining(["derived:latest", "derived-copy:latest"]));
    expect((await ollama.delete({ model: "derived" })).status).toBe("success");
    expect((await ollama.delete({ model: "derived-copy" })).status).toBe("success");
    const names = (await ollama.list()).models.map((m) => m.name);
    expect(names).not.toContain("derived:latest");
    expect(names).not.toContain("derived-copy:latest");
    await expect(ollama.show({ model: "derived" })).rejects.toMatchObject({ status_code: 404 });
  });
});
