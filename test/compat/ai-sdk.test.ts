// The AI SDK (`ai`) with ollama-ai-provider-v2, with @ai-sdk/openai's Responses provider, and with
// @ai-sdk/openai-compatible (the generic provider most AI SDK users point at Ollama's /v1) against the daemon. The provider validates every
// NDJSON line with a zod schema and silently drops lines that fail it, so a wrong field shows up
// here as missing text, finishReason "other" or missing usage. Sampling goes through
// providerOptions.ollama.options (the provider's top-level temperature/max_output_tokens are
// fields Ollama ignores). Structured output and tools exercise the completion layer's event
// stream (format grammar, tool-call parser).
import { embed, embedMany, generateObject, generateText, jsonSchema, Output, stepCountIs, streamObject, streamText, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createOllama } from "ollama-ai-provider-v2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, type TestDaemon } from "../helpers/daemon.js";
import { ANSWER_SCHEMA, CALL_FORMAT, CITIES, EMBED_DIM, expectAnswer, FINITE_TOOLS, MODELS, norm, startCompatDaemon, WEATHER_TOOL } from "./helpers.js";

let d: TestDaemon;

/** A text stream's deltas joined, and how many there were. */
async function collectText(stream: AsyncIterable<string>): Promise<{ text: string; parts: number }> {
  let text = "";
  let parts = 0;
  for await (const delta of stream) {
    text += delta;
    parts++;
  }
  return { text, parts };
}
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
    const { text, parts } = await collectText(s.textStream);
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

describe("ai + ollama-ai-provider-v2, checked against the daemon's native answers", () => {
  const options = { seed: 13, num_predict: 12, temperature: 0.7 };
  const native = async (body: Record<string, unknown>) => {
    const r = await postJson(d.url, "/api/chat", { stream: false, options, ...body });
    expect(r.status, r.text).toBe(200);
    return r.json as { message: { content: string; thinking?: string; tool_calls?: Array<{ id?: string; function: { name: string; arguments: Record<string, unknown> } }> }; done_reason: string; prompt_eval_count: number; eval_count: number };
  };

  it("text, finish reason and usage are the native /api/chat answer's (think:false and top-level fields ignored)", async () => {
    const messages = [{ role: "system", content: "You are terse." }, { role: "user", content: "Hello there" }];
    await native({ model: MODELS.chat, messages }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const ref = await native({ model: MODELS.chat, messages });
    const r = await generateText({ model: ollama(MODELS.chat), system: "You are terse.", prompt: "Hello there", temperature: 0, maxOutputTokens: 1, providerOptions: { ollama: { options } }, maxRetries: 0 });
    expect(r.text).toBe(ref.message.content);
    expect([r.usage.inputTokens, r.usage.outputTokens]).toEqual([ref.prompt_eval_count, ref.eval_count]);
    expect(r.finishReason).toBe(ref.done_reason);
  });

  it("streamText with a tool: the call streamed with the daemon's id, finish tool-calls; the result goes back by tool_call_id", async () => {
    const weather = tool({
      description: WEATHER_TOOL.function.description,
      inputSchema: jsonSchema<{ city: string }>(WEATHER_TOOL.function.parameters as never),
      execute: async ({ city }) => `18 degrees in ${city}`,
    });
    const opts = { ollama: { options: { ...options, num_predict: 64 } } };
    const s = streamText({ model: ollama(MODELS.tools), prompt: "What is the weather in Paris?", tools: { get_weather: weather }, output: Output.object({ schema: jsonSchema(CALL_FORMAT) }), providerOptions: opts, maxRetries: 0 });
    const calls: Array<{ toolCallId: string; toolName: string; input: unknown }> = [];
    const results: unknown[] = [];
    for await (const part of s.fullStream) {
      if (part.type === "tool-call") calls.push(part);
      if (part.type === "tool-result") results.push(part.output);
      if (part.type === "error") throw part.error;
    }
    expect(await s.finishReason).toBe("tool-calls");
    expect(calls).toHaveLength(1);
    expect(calls[0]!.toolName).toBe("get_weather");
    const city = (calls[0]!.input as { city: string }).city;
    expect(CITIES).toContain(city);
    expect(results).toEqual([`18 degrees in ${city}`]);
    const ref = await native({ model: MODELS.tools, messages: [{ role: "user", content: "What is the weather in Paris?" }], tools: [WEATHER_TOOL], format: CALL_FORMAT, options: { ...options, num_predict: 64 } });
    expect(ref.message.tool_calls![0]!.function.arguments).toEqual(calls[0]!.input);
    expect(calls[0]!.toolCallId).toMatch(/^call_[a-z0-9]{8}$/); // the daemon's id, as Ollama's; the provider's own are different

    // two steps: the tool runs and its result is sent back with tool_call_id; the second prompt is
    // the native one of the whole conversation (Llama 3.2's template lists the tools only when a
    // user message is last, so it is shorter than the first)
    const r = await generateText({ model: ollama(MODELS.tools), prompt: "What is the weather in Paris?", tools: { get_weather: weather }, output: Output.object({ schema: jsonSchema(CALL_FORMAT) }), stopWhen: stepCountIs(2), providerOptions: opts, maxRetries: 0 });
    expect(r.steps).toHaveLength(2);
    const call = r.steps[0]!.toolCalls[0]!;
    const conversation = (result: string) => [
      { role: "user", content: "What is the weather in Paris?" },
      { role: "assistant", content: "", tool_calls: [{ id: call.toolCallId, type: "function", function: { name: call.toolName, arguments: call.input } }] },
      { role: "tool", tool_call_id: call.toolCallId, content: result },
    ];
    const expected = await native({ model: MODELS.tools, messages: conversation(`18 degrees in ${(call.input as { city: string }).city}`), tools: [WEATHER_TOOL], format: CALL_FORMAT, options: { ...options, num_predict: 64 } });
    expect(r.steps[1]!.usage.inputTokens).toBe(expected.prompt_eval_count);
    const empty = await native({ model: MODELS.tools, messages: conversation(""), tools: [WEATHER_TOOL], format: CALL_FORMAT, options: { ...options, num_predict: 1 } });
    expect(empty.prompt_eval_count).toBeLessThan(expected.prompt_eval_count);
  });

  it("streamObject: partial objects, the last the same as generateObject's", async () => {
    const opts = { ollama: { options: { ...options, num_predict: 64, temperature: 0 } } };
    const whole = await generateObject({ model: ollama(MODELS.chat), schema: jsonSchema(ANSWER_SCHEMA), prompt: "yes or no?", providerOptions: opts, maxRetries: 0 });
    const s = streamObject({ model: ollama(MODELS.chat), schema: jsonSchema(ANSWER_SCHEMA), prompt: "yes or no?", providerOptions: opts, maxRetries: 0 });
    let n = 0;
    let last: unknown;
    for await (const partial of s.partialObjectStream) {
      last = partial;
      n++;
    }
    expect(n).toBeGreaterThan(1);
    expect(last).toEqual(whole.object);
    expect(await s.object).toEqual(whole.object);
    expect((await s.usage).outputTokens).toBe(whole.usage.outputTokens);
  });

  it("think: reasoning text from message.thinking, streamed or not, as the native answer's", async () => {
    const opts = { ollama: { think: true, options } };
    const ref = await native({ model: MODELS.thinker, messages: [{ role: "user", content: "Think about it" }], think: true });
    expect(ref.message.thinking!.length).toBeGreaterThan(0);
    const r = await generateText({ model: ollama(MODELS.thinker), prompt: "Think about it", providerOptions: opts, maxRetries: 0 });
    expect(r.reasoningText).toBe(ref.message.thinking);
    expect(r.text).toBe(ref.message.content);
    const s = streamText({ model: ollama(MODELS.thinker), prompt: "Think about it", providerOptions: opts, maxRetries: 0 });
    let reasoning = "";
    for await (const part of s.fullStream) if (part.type === "reasoning-delta") reasoning += part.text;
    expect(reasoning).toBe(ref.message.thinking);
  });

  it("embed and embedMany: /api/embed's vectors, usage its prompt_eval_count", async () => {
    const values = ["hello world", "other words", "third"];
    const ref = await postJson(d.url, "/api/embed", { model: MODELS.embed, input: values });
    const many = await embedMany({ model: ollama.embedding(MODELS.embed), values, maxRetries: 0 });
    expect(many.embeddings).toEqual(ref.json.embeddings);
    expect(many.usage.tokens).toBe(ref.json.prompt_eval_count);
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

describe("ai + @ai-sdk/openai-compatible on /v1", () => {
  const compat = () => createOpenAICompatible({ name: "ollama", baseURL: `${d.url}/v1`, includeUsage: true, supportsStructuredOutputs: true });
  const greedy = { temperature: 0, maxOutputTokens: 12, seed: 3, maxRetries: 0 };
  const native = async (body: Record<string, unknown>) => {
    const r = await postJson(d.url, "/api/chat", { stream: false, options: { temperature: 0, num_predict: 12 }, ...body });
    expect(r.status, r.text).toBe(200);
    return r.json as { message: { content: string; thinking?: string }; done_reason: string; prompt_eval_count: number; eval_count: number };
  };

  it("generateText and streamText: the native answer's text, usage and finish reason", async () => {
    const messages = [{ role: "system", content: "You are terse." }, { role: "user", content: "Hello there" }];
    await native({ model: MODELS.chat, messages }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const ref = await native({ model: MODELS.chat, messages });
    const r = await generateText({ model: compat()(MODELS.chat), system: "You are terse.", prompt: "Hello there", ...greedy });
    expect(r.text).toBe(ref.message.content);
    expect([r.usage.inputTokens, r.usage.outputTokens, r.finishReason]).toEqual([ref.prompt_eval_count, ref.eval_count, ref.done_reason]);
    const s = streamText({ model: compat()(MODELS.chat), system: "You are terse.", prompt: "Hello there", ...greedy });
    const { text, parts } = await collectText(s.textStream);
    expect(parts).toBeGreaterThan(1);
    expect(text).toBe(ref.message.content);
    expect((await s.usage).inputTokens).toBe(ref.prompt_eval_count);
    expect((await s.usage).outputTokens).toBe(ref.eval_count);
    expect(await s.finishReason).toBe(ref.done_reason);
  });

  it("reasoning (reasoning_effort) from the `reasoning` field, streamed or not; sent back, it reaches the prompt", async () => {
    const opts = { ollama: { reasoningEffort: "low" } };
    const ref = await native({ model: MODELS.thinker, messages: [{ role: "user", content: "Think about it" }], think: "low" });
    expect(ref.message.thinking!.length).toBeGreaterThan(0);
    const r = await generateText({ model: compat()(MODELS.thinker), prompt: "Think about it", providerOptions: opts, ...greedy });
    expect(r.reasoningText).toBe(ref.message.thinking);
    expect(r.text).toBe(ref.message.content);
    const s = streamText({ model: compat()(MODELS.thinker), prompt: "Think about it", providerOptions: opts, ...greedy });
    let reasoning = "";
    for await (const part of s.fullStream) if (part.type === "reasoning-delta") reasoning += part.text;
    expect(reasoning).toBe(ref.message.thinking);
    // the provider sends the earlier reasoning back as reasoning_content; the template renders it
    const messages = [{ role: "user" as const, content: "Think about it" }, ...r.response.messages, { role: "user" as const, content: "And then?" }];
    const next = await generateText({ model: compat()(MODELS.thinker), messages, providerOptions: opts, ...greedy });
    const refNext = await native({ model: MODELS.thinker, think: "low", messages: [{ role: "user", content: "Think about it" }, { role: "assistant", content: r.text, thinking: r.reasoningText }, { role: "user", content: "And then?" }] });
    expect(next.usage.inputTokens).toBe(refNext.prompt_eval_count);
  });

  it("generateObject (response_format json_schema) and a streamed tool call", async () => {
    const obj = await generateObject({ model: compat()(MODELS.chat), schema: jsonSchema(ANSWER_SCHEMA), prompt: "yes or no?", ...greedy, maxOutputTokens: 64 });
    expectAnswer(obj.object);
    const tools = Object.fromEntries(FINITE_TOOLS.map((t) => [t.function.name, tool({ description: t.function.description, inputSchema: jsonSchema<Record<string, string>>(t.function.parameters as never) })]));
    const s = streamText({ model: compat()(MODELS.tools), prompt: "What time is it?", tools, toolChoice: { type: "tool", toolName: "get_time" }, ...greedy, maxOutputTokens: 128 });
    const calls: Array<{ toolCallId: string; toolName: string; input: unknown }> = [];
    for await (const part of s.fullStream) {
      if (part.type === "tool-call") calls.push(part);
      if (part.type === "error") throw part.error;
    }
    expect(calls).toEqual([{ ...calls[0], toolName: "get_time", input: { zone: expect.stringMatching(/^(UTC|CET)$/) }, toolCallId: expect.stringMatching(/^call_/) }]);
    expect(await s.finishReason).toBe("tool-calls");
  });

  it("embedMany (encoding_format float): /api/embed's vectors", async () => {
    const values = ["hello world", "other words"];
    const ref = await postJson(d.url, "/api/embed", { model: MODELS.embed, input: values });
    const many = await embedMany({ model: compat().embeddingModel(MODELS.embed), values, maxRetries: 0 });
    expect(many.embeddings).toEqual(ref.json.embeddings);
    expect(many.usage.tokens).toBe(ref.json.prompt_eval_count);
  });
});
