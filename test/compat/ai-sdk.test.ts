// The AI SDK (`ai`) with ollama-ai-provider-v2, and with @ai-sdk/openai's Responses provider, against the daemon. The provider validates every
// NDJSON line with a zod schema and silently drops lines that fail it, so a wrong field shows up
// here as missing text, finishReason "other" or missing usage. Sampling goes through
// providerOptions.ollama.options (the provider's top-level temperature/max_output_tokens are
// fields Ollama ignores). Structured output and tools exercise the completion layer's event
// stream (format grammar, tool-call parser).
import { embed, embedMany, generateObject, generateText, jsonSchema, Output, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createOllama } from "ollama-ai-provider-v2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDaemon } from "../helpers/daemon.js";
import { ANSWER_SCHEMA, CALL_FORMAT, CITIES, EMBED_DIM, expectAnswer, FINITE_TOOLS, MODELS, norm, startCompatDaemon, WEATHER_TOOL } from "./helpers.js";

let d: TestDaemon;
let ollama: ReturnType<typeof createOllama>;
const providerOptions = (num_predict = 12) => ({ ollama: { options: { seed: 13, num_predict, temperature: 0.7 } } });

beforeAll(async () => {
  d = await startCompatDaemon();
  ollama = createOllama({ baseURL: `${d.url}/api` });
});

afterAll(async () => {
  await d?.stop();
});

describe("ai + ollama-ai-provider-v2", () => {
  it("generateText with a system prompt: text, finishReason from done_reason, usage", async () => {
    const r = await generateText({ model: ollama(MODELS.chat), system: "You are terse.", prompt: "Hello there", providerOptions: providerOptions(), maxRetries: 0 });
    expect(r.text.length).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(r.finishReason);
    expect(r.usage.outputTokens).toBeGreaterThan(0);
    expect(r.usage.outputTokens).toBeLessThanOrEqual(12);
    expect(r.usage.inputTokens).toBeGreaterThan(0);
    const bare = await generateText({ model: ollama(MODELS.chat), prompt: "Hello there", providerOptions: providerOptions(), maxRetries: 0 });
    expect(bare.usage.inputTokens).not.toBe(r.usage.inputTokens);
  });

  it("streamText: every line passes the provider's schema (same text, a real finish reason, usage)", async () => {
    await generateText({ model: ollama(MODELS.chat), prompt: "Tell me something", providerOptions: providerOptions(), maxRetries: 0 }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const whole = await generateText({ model: ollama(MODELS.chat), prompt: "Tell me something", providerOptions: providerOptions(), maxRetries: 0 });
    const s = streamText({ model: ollama(MODELS.chat), prompt: "Tell me something", providerOptions: providerOptions(), maxRetries: 0 });
    let text = "";
    let parts = 0;
    for await (const delta of s.textStream) {
      text += delta;
      parts++;
    }
    expect(parts).toBeGreaterThan(1);
    expect(text).toBe(whole.text);
    expect(await s.finishReason).toBe(whole.finishReason);
    expect((await s.usage).outputTokens).toBe(whole.usage.outputTokens);
  });

  it("generateObject with a JSON schema (sent as format)", async () => {
    const r = await generateObject({ model: ollama(MODELS.chat), schema: jsonSchema(ANSWER_SCHEMA), prompt: "yes or no?", providerOptions: providerOptions(64), maxRetries: 0 });
    expectAnswer(r.object);
    expect(r.finishReason).toBe("stop");
  });

  it("tools: a tool call with its input parsed, finishReason tool-calls", async () => {
    const r = await generateText({
      model: ollama(MODELS.tools),
      prompt: "What is the weather in Paris?",
      tools: {
        get_weather: tool({ description: WEATHER_TOOL.function.description, inputSchema: jsonSchema<{ city: string }>(WEATHER_TOOL.function.parameters as never) }),
      },
      output: Output.object({ schema: jsonSchema(CALL_FORMAT) }),
      providerOptions: providerOptions(64),
      maxRetries: 0,
    });
    expect(r.finishReason).toBe("tool-calls");
    expect(r.toolCalls).toHaveLength(1);
    expect(r.toolCalls[0]!.toolName).toBe("get_weather");
    expect(CITIES).toContain((r.toolCalls[0]!.input as { city: string }).city);
  });

  it("abort mid-stream, then the next request is served", async () => {
    const ac = new AbortController();
    const s = streamText({ model: ollama(MODELS.chat), prompt: "Go on forever", abortSignal: ac.signal, providerOptions: { ollama: { options: { num_predict: 100000 } } }, maxRetries: 0, onError: () => {} });
    let n = 0;
    try {
      for await (const _ of s.textStream) {
        if (++n === 2) ac.abort();
      }
    } catch (err) {
      expect((err as Error).name).toMatch(/Abort/);
    }
    expect(n).toBeGreaterThanOrEqual(2);
    const next = await generateText({ model: ollama(MODELS.chat), prompt: "Next", providerOptions: providerOptions(), maxRetries: 0 });
    expect(next.text.length).toBeGreaterThan(0);
  });

  it("embed and embedMany (the provider requires all three stats)", async () => {
    const one = await embed({ model: ollama.embedding(MODELS.embed), value: "hello world", maxRetries: 0 });
    expect(one.embedding).toHaveLength(EMBED_DIM);
    expect(norm(one.embedding)).toBeCloseTo(1, 6);
    expect(one.usage.tokens).toBeGreaterThan(0);
    const many = await embedMany({ model: ollama.embedding(MODELS.embed), values: ["hello world", "other words", "third"], maxRetries: 0 });
    expect(many.embeddings).toHaveLength(3);
    for (let i = 0; i < EMBED_DIM; i++) expect(many.embeddings[0]![i]).toBeCloseTo(one.embedding[i]!, 6);
  });

  it("the completion model (/api/generate, non-streamed: it needs `context`)", async () => {
    // Its sampling fields are top-level (ignored, as by Ollama): the length comes from PARAMETERs.
    const r = await generateText({ model: ollama.completion(MODELS.short), prompt: "Once upon a time", maxRetries: 0 });
    expect(r.text.length).toBeGreaterThan(0);
  });
});

describe("ai + @ai-sdk/openai, Responses API (openai.responses)", () => {
  const openai = () => createOpenAI({ baseURL: `${d.url}/v1`, apiKey: "ollama" });

  it("a conversation as the SDK sends it by default: earlier answers by item_reference to the stored response", async () => {
    const model = openai().responses(MODELS.chat);
    const first = await generateText({ model, prompt: "Hello there", temperature: 0, maxOutputTokens: 6, maxRetries: 0 });
    expect(first.text.length).toBeGreaterThan(0);
    // the SDK stores by default, so its next request names the assistant message by id
    const messages = [{ role: "user" as const, content: "Hello there" }, ...first.response.messages, { role: "user" as const, content: "And then?" }];
    const second = await generateText({ model, messages, temperature: 0, maxOutputTokens: 6, maxRetries: 0 });
    expect(second.text.length).toBeGreaterThan(0);
    expect(second.usage.inputTokens).toBeGreaterThan(first.usage.inputTokens! + first.usage.outputTokens!);
    // …which is the same prompt as the conversation sent whole
    const whole = await generateText({ model, messages, temperature: 0, maxOutputTokens: 6, maxRetries: 0, providerOptions: { openai: { store: false } } });
    expect(whole.usage.inputTokens).toBe(second.usage.inputTokens);
  });

  it("toolChoice required / a named tool makes the answer a call (beyond Ollama, which ignores tool_choice)", async () => {
    const tools = Object.fromEntries(FINITE_TOOLS.map((t) => [t.function.name, tool({ description: t.function.description, inputSchema: jsonSchema<Record<string, string>>(t.function.parameters as never) })]));
    const model = openai().responses(MODELS.tools);
    const r = await generateText({ model, prompt: "Hello there", tools, toolChoice: "required", maxOutputTokens: 128, maxRetries: 0 });
    expect(r.finishReason).toBe("tool-calls");
    expect(["get_weather", "get_time"]).toContain(r.toolCalls[0]!.toolName);
    const named = await generateText({ model: openai().chat(MODELS.tools), prompt: "Hello there", tools, toolChoice: { type: "tool", toolName: "get_time" }, maxOutputTokens: 128, maxRetries: 0 });
    expect([named.finishReason, named.toolCalls[0]?.toolName]).toEqual(["tool-calls", "get_time"]);
    expect(["UTC", "CET"]).toContain((named.toolCalls[0]!.input as { zone: string }).zone);
  });

  it("a cut-off answer finishes with reason length, streamed or not", async () => {
    const model = openai().responses(MODELS.chat);
    const r = await generateText({ model, prompt: "Tell me a long story", temperature: 0, maxOutputTokens: 2, maxRetries: 0 });
    expect([r.finishReason, r.usage.outputTokens]).toEqual(["length", 2]);
    const s = streamText({ model, prompt: "Tell me a long story", temperature: 0, maxOutputTokens: 2, maxRetries: 0 });
    for await (const _ of s.textStream);
    expect(await s.finishReason).toBe("length");
  });
});
