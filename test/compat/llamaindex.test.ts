// LlamaIndex.TS's Ollama classes (@llamaindex/ollama, with @llamaindex/core) against the daemon.
// They sit on ollama-js 0.5.x's browser build (not the 0.6 the ollama-js suite uses), always send
// options {num_ctx: 4096, top_p: 0.9, temperature: 0.7} (more context than the test model was
// trained with), send a zod responseFormat as `format`, hand tool calls' `arguments` objects on
// to tools as their input, send tool results as {role:"tool", content} with neither name nor id
// and the assistant's earlier call as plain content, and embed through the legacy
// /api/embeddings (`prompt` → `embedding`, not normalized). Answers are compared with the daemon's
// own native answers to the same requests.
import type { ChatMessage, ChatResponseChunk, ToolCallLLMMessageOptions } from "@llamaindex/core/llms";
import { Ollama, OllamaEmbedding } from "@llamaindex/ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { postJson, type TestDaemon } from "../helpers/daemon.js";
import { CITIES, EMBED_DIM, expectAnswer, MODELS, norm, startCompatDaemon, WEATHER_TOOL } from "./helpers.js";

let d: TestDaemon;
/** LlamaIndex's defaults, which it always sends, and ours on top. */
const options = { num_ctx: 4096, top_p: 0.9, temperature: 0.7, seed: 21, num_predict: 12 };
const llm = (model: string = MODELS.chat, extra: Record<string, unknown> = {}) => new Ollama({ model, config: { host: d.url }, options: { ...options, ...extra } as never });

const messages: ChatMessage[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Hello there" },
];

type Native = { message: { content: string; tool_calls?: unknown[] }; done_reason: string; prompt_eval_count: number; eval_count: number };
async function nativeChat(model: string, msgs: unknown[], extra: Record<string, unknown> = {}): Promise<Native> {
  const r = await postJson(d.url, "/api/chat", { model, messages: msgs, stream: false, options, ...extra });
  expect(r.status, r.text).toBe(200);
  return r.json as Native;
}

beforeAll(async () => {
  d = await startCompatDaemon();
});

afterAll(async () => {
  await d?.stop();
});

describe("@llamaindex/ollama Ollama (LLM)", () => {
  it("chat: the native answer to the same request, with done_reason and counts in raw", async () => {
    await nativeChat(MODELS.chat, messages); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const ref = await nativeChat(MODELS.chat, messages);
    const r = await llm().chat({ messages });
    expect(r.message.role).toBe("assistant");
    expect(r.message.content).toBe(ref.message.content);
    expect((r.message.content as string).length).toBeGreaterThan(0);
    expect(r.message.options).toBeUndefined(); // no tool_calls key on a plain answer
    expect(r.raw).toMatchObject({ model: MODELS.chat, done: true, done_reason: ref.done_reason, prompt_eval_count: ref.prompt_eval_count, eval_count: ref.eval_count });
  });

  it("chat streamed: several deltas, the same text; the last raw chunk is the done one", async () => {
    const ref = await nativeChat(MODELS.chat, messages);
    const chunks: ChatResponseChunk[] = [];
    for await (const c of await llm().chat({ messages, stream: true })) chunks.push(c);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.map((c) => c.delta).join("")).toBe(ref.message.content);
    // no chunk claims a tool call (LlamaIndex takes any tool_calls key, even an empty one, as calls)
    expect(chunks.filter((c) => c.options && "toolCall" in c.options)).toEqual([]);
    expect(chunks.at(-1)!.raw).toMatchObject({ done: true, done_reason: ref.done_reason, eval_count: ref.eval_count, prompt_eval_count: ref.prompt_eval_count });
  });

  it("complete (/api/generate), streamed or not: the same text", async () => {
    const once = await llm().complete({ prompt: "Once upon a time" });
    const again = await llm().complete({ prompt: "Once upon a time" });
    expect(again.text).toBe(once.text);
    expect(once.text.length).toBeGreaterThan(0);
    expect(once.raw).toMatchObject({ done: true, done_reason: expect.stringMatching(/^(stop|length)$/), eval_count: expect.any(Number) });
    let text = "";
    let n = 0;
    for await (const c of await llm().complete({ prompt: "Once upon a time", stream: true })) {
      text += c.text;
      n++;
    }
    expect(n).toBeGreaterThan(2);
    expect(text).toBe(once.text);
  });

  it("responseFormat (a zod schema, sent as format) gives JSON that parses into it", async () => {
    const schema = z.object({ answer: z.enum(["yes", "no"]), sure: z.boolean() });
    const r = await llm(MODELS.chat, { num_predict: 64 }).chat({ messages: [{ role: "user", content: "yes or no?" }], responseFormat: schema });
    const value = JSON.parse(r.message.content as string);
    expectAnswer(value);
    expect(schema.parse(value)).toEqual(value);
  });

  it("tools: the call's arguments arrive as the tool's input object; the tool result and the call go back", async () => {
    const callShape = z.object({ name: z.literal("get_weather"), parameters: z.object({ city: z.enum(CITIES as [string, ...string[]]) }) });
    const weather = {
      metadata: { name: WEATHER_TOOL.function.name, description: WEATHER_TOOL.function.description, parameters: WEATHER_TOOL.function.parameters },
      call: ({ city }: { city: string }) => `18 degrees in ${city}`,
    };
    const question: ChatMessage = { role: "user", content: "What is the weather in Rome?" };
    const r = await llm(MODELS.tools, { num_predict: 128 }).chat({ messages: [question], tools: [weather as never], responseFormat: callShape });
    const calls = (r.message.options as ToolCallLLMMessageOptions & { toolCall?: Array<{ name: string; input: unknown; id: string }> })?.toolCall;
    expect(calls).toHaveLength(1);
    expect(calls![0]!.name).toBe("get_weather");
    expect(calls![0]!.input).toEqual({ city: expect.stringMatching(/^(Paris|Rome)$/) });
    expect(r.raw).toMatchObject({ done_reason: "stop" });

    // What LlamaIndex sends next: the assistant turn as its (empty) content, the result as role tool.
    const answer = (result: string) =>
      llm(MODELS.tools).chat({
        messages: [question, r.message, { role: "user", content: result, options: { toolResult: { id: calls![0]!.id, result, isError: false } } }],
        tools: [weather as never],
      });
    const short = await answer(weather.call(calls![0]!.input as { city: string }));
    const long = await answer(`${weather.call(calls![0]!.input as { city: string })}, light wind from the west, clear skies all afternoon`);
    expect((short.raw as Native).prompt_eval_count).toBeLessThan((long.raw as Native).prompt_eval_count);
    // the daemon rendered the tool result as a tool message: the same count as the native request
    const ref = await nativeChat(MODELS.tools, [question, { role: "assistant", content: r.message.content }, { role: "tool", content: weather.call(calls![0]!.input as { city: string }) }], { tools: [WEATHER_TOOL] });
    expect((short.raw as Native).prompt_eval_count).toBe(ref.prompt_eval_count);
  });
});

describe("@llamaindex/ollama OllamaEmbedding (legacy /api/embeddings)", () => {
  it("one vector per text, the legacy endpoint's (not normalized), /api/embed's once normalized", async () => {
    const emb = new OllamaEmbedding({ model: MODELS.embed, config: { host: d.url } });
    const texts = ["hello world", "other words"];
    const vectors = await emb.getTextEmbeddings(texts);
    expect(vectors).toHaveLength(2);
    const ref = await postJson(d.url, "/api/embed", { model: MODELS.embed, input: texts });
    expect(ref.status, ref.text).toBe(200);
    for (const [k, v] of vectors.entries()) {
      expect(v).toHaveLength(EMBED_DIM);
      const legacy = await postJson(d.url, "/api/embeddings", { model: MODELS.embed, prompt: texts[k] });
      expect(v).toEqual(legacy.json.embedding);
      const n = norm(v);
      for (let i = 0; i < EMBED_DIM; i++) expect(v[i]! / n).toBeCloseTo(ref.json.embeddings[k][i], 6);
    }
    expect(await emb.getQueryEmbedding({ type: "text", text: texts[0]! } as never)).toEqual(vectors[0]);
  });
});
