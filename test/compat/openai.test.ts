// The openai SDK pointed at /v1: chat completions (stream and not, the .stream() helper that
// checks role / finish_reason / tool call fields, usage, JSON formats, tools, reasoning),
// completions, embeddings (base64 by default), models; bad input with OpenAI's statuses and
// messages. Tools, response_format and reasoning exercise the completion layer's event stream.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDaemon } from "../helpers/daemon.js";
import { ANSWER_SCHEMA, CALL_FORMAT, CITIES, EMBED_DIM, expectAnswer, FINITE_TOOLS, MODELS, norm, startCompatDaemon, WEATHER_TOOL } from "./helpers.js";

let d: TestDaemon;
let client: OpenAI;
const sampling = { seed: 5, max_tokens: 12 } as const;
const hello: OpenAI.ChatCompletionMessageParam[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Hello!" },
];

beforeAll(async () => {
  d = await startCompatDaemon();
  client = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "ollama", maxRetries: 0 });
});

afterAll(async () => {
  await d?.stop();
});

describe("openai: chat completions", () => {
  it("non-streamed: a chat.completion with content, finish_reason and usage", async () => {
    const r = await client.chat.completions.create({ model: MODELS.chat, messages: hello, ...sampling });
    expect(r.object).toBe("chat.completion");
    expect(r.id).toMatch(/^chatcmpl-/);
    expect(r.model).toBe(MODELS.chat);
    expect(Number.isInteger(r.created)).toBe(true);
    const choice = r.choices[0]!;
    expect(choice.message.role).toBe("assistant");
    expect(choice.message.content?.length).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(choice.finish_reason);
    expect(r.usage?.completion_tokens).toBeGreaterThan(0);
    expect(r.usage?.completion_tokens).toBeLessThanOrEqual(12);
    expect(r.usage?.total_tokens).toBe((r.usage?.prompt_tokens ?? 0) + (r.usage?.completion_tokens ?? 0));
    // The system message is part of the prompt.
    const bare = await client.chat.completions.create({ model: MODELS.chat, messages: [{ role: "user", content: "Hello!" }], ...sampling });
    expect(bare.usage?.prompt_tokens).not.toBe(r.usage?.prompt_tokens);
  });

  it("streamed: SSE chunks with one id, the role first, a finish chunk, a usage chunk; same text as non-streamed", async () => {
    await client.chat.completions.create({ model: MODELS.chat, messages: hello, ...sampling }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const whole = await client.chat.completions.create({ model: MODELS.chat, messages: hello, ...sampling });
    const stream = await client.chat.completions.create({ model: MODELS.chat, messages: hello, ...sampling, stream: true, stream_options: { include_usage: true } });
    let text = "";
    const ids = new Set<string>();
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      ids.add(chunk.id);
      expect(chunk.object).toBe("chat.completion.chunk");
      text += chunk.choices[0]?.delta.content ?? "";
    }
    expect(ids.size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(text).toBe(whole.choices[0]!.message.content);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish?.choices[0]?.finish_reason).toBe(whole.choices[0]!.finish_reason);
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual(whole.usage);
  });

  it("the .stream() helper assembles a final completion (it checks role and finish_reason)", async () => {
    const runner = client.chat.completions.stream({ model: MODELS.chat, messages: hello, ...sampling });
    let deltas = "";
    runner.on("content", (delta) => (deltas += delta));
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(deltas);
    expect(deltas.length).toBeGreaterThan(0);
  });

  it("response_format json_schema gives a validating object; json_object gives JSON", async () => {
    const r = await client.chat.completions.create({
      model: MODELS.chat,
      messages: [{ role: "user", content: "yes or no?" }],
      response_format: { type: "json_schema", json_schema: { name: "answer", schema: ANSWER_SCHEMA, strict: true } },
      seed: 5,
      max_tokens: 64,
    });
    expect(r.choices[0]!.finish_reason).toBe("stop");
    expectAnswer(JSON.parse(r.choices[0]!.message.content ?? ""));
    const j = await client.chat.completions.create({ model: MODELS.chat, messages: [{ role: "user", content: "JSON" }], response_format: { type: "json_object" }, seed: 5, max_tokens: 48 });
    expect(j.choices[0]!.message.content?.trimStart().startsWith("{")).toBe(true);
  });

  it("tools: tool_calls with JSON-string arguments and finish_reason tool_calls; streamed as deltas the helper accepts", async () => {
    const params = {
      model: MODELS.tools,
      messages: [{ role: "user" as const, content: "What is the weather in Paris?" }],
      tools: [WEATHER_TOOL],
      response_format: { type: "json_schema" as const, json_schema: { name: "call", schema: CALL_FORMAT } },
      seed: 5,
      max_tokens: 128, // JSON whitespace may be newlines and indentation, as in Ollama
    };
    const r = await client.chat.completions.create(params);
    const choice = r.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    const call = choice.message.tool_calls?.[0];
    expect(call?.type).toBe("function");
    expect(call?.id).toMatch(/^call_[a-z0-9]{8}$/);
    if (call?.type !== "function") throw new Error("no function call");
    expect(call.function.name).toBe("get_weather");
    expect(CITIES).toContain((JSON.parse(call.function.arguments) as { city: string }).city);

    // The tool result goes back with tool_call_id (the name is looked up from the assistant's
    // call) and reaches the prompt: a longer result, a longer prompt.
    const answer = (result: string) =>
      client.chat.completions.create({
        model: MODELS.tools,
        messages: [...params.messages, choice.message, { role: "tool", tool_call_id: call.id, content: result }],
        tools: [WEATHER_TOOL],
        ...sampling,
      });
    const short = await answer("22 degrees");
    const long = await answer("22 degrees and sunny, light wind from the west, clear skies all afternoon");
    expect(short.choices[0]!.message.role).toBe("assistant");
    expect(long.usage?.prompt_tokens).toBeGreaterThan(short.usage?.prompt_tokens ?? 0);

    const final = await client.chat.completions.stream(params).finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    const streamed = final.choices[0]!.message.tool_calls?.[0];
    expect(streamed?.type === "function" && streamed.function.name).toBe("get_weather");
  });

  it("tool_choice (beyond Ollama, which ignores it): required makes the answer a call, a named function that one; none sends no tools", async () => {
    const ask = (tool_choice: OpenAI.ChatCompletionToolChoiceOption, seed: number) =>
      client.chat.completions.create({ model: MODELS.tools, messages: [{ role: "user", content: "Hello there" }], tools: FINITE_TOOLS, tool_choice, seed, temperature: 1, max_tokens: 128 });
    const names = new Set<string>();
    for (const seed of [1, 2, 3]) {
      const r = await ask("required", seed);
      expect(r.choices[0]!.finish_reason).toBe("tool_calls");
      const call = r.choices[0]!.message.tool_calls?.[0];
      if (call?.type !== "function") throw new Error("no function call");
      names.add(call.function.name);
      const args = JSON.parse(call.function.arguments) as Record<string, string>;
      expect(call.function.name === "get_weather" ? CITIES : ["UTC", "CET"]).toContain(Object.values(args)[0]);
      const named = await ask({ type: "function", function: { name: "get_time" } }, seed);
      const namedCall = named.choices[0]!.message.tool_calls?.[0];
      expect(namedCall?.type === "function" && namedCall.function.name).toBe("get_time");
    }
    expect([...names].every((n) => n === "get_weather" || n === "get_time")).toBe(true);
    // streamed, the helper assembles the forced call
    const final = await client.chat.completions.stream({ model: MODELS.tools, messages: [{ role: "user", content: "Hello there" }], tools: FINITE_TOOLS, tool_choice: "required", max_tokens: 128 }).finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    const none = await client.chat.completions.create({ model: MODELS.tools, messages: [{ role: "user", content: "Hello there" }], tools: FINITE_TOOLS, tool_choice: "none", max_tokens: 8 });
    expect(none.choices[0]!.message.tool_calls ?? []).toEqual([]);
    await expect(ask({ type: "function", function: { name: "nope" } }, 1)).rejects.toMatchObject({ status: 400, message: expect.stringContaining('tool_choice names the function "nope"') });
  });

  it("reasoning: a thinking model's thinking comes back as message.reasoning; reasoning_effort none turns it off", async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Think first" }];
    const r = await client.chat.completions.create({ model: MODELS.thinker, messages, reasoning_effort: "high", ...sampling });
    const message = r.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning?: string };
    expect(message.reasoning?.length).toBeGreaterThan(0);
    const off = await client.chat.completions.create({ model: MODELS.thinker, messages, reasoning_effort: "none" as never, ...sampling });
    expect((off.choices[0]!.message as { reasoning?: string }).reasoning).toBeUndefined();
    expect(off.choices[0]!.message.content?.length).toBeGreaterThan(0);
    const stream = await client.chat.completions.create({ model: MODELS.thinker, messages, reasoning_effort: "low", ...sampling, stream: true });
    let reasoning = "";
    for await (const chunk of stream) reasoning += (chunk.choices[0]?.delta as { reasoning?: string } | undefined)?.reasoning ?? "";
    expect(reasoning.length).toBeGreaterThan(0);
  });

  it("abort mid-stream, then the next request is served", async () => {
    const ac = new AbortController();
    const stream = await client.chat.completions.create({ model: MODELS.chat, messages: hello, max_tokens: 100000, stream: true }, { signal: ac.signal });
    let got = 0;
    try {
      for await (const _ of stream) {
        if (++got === 2) ac.abort();
      }
    } catch (err) {
      expect((err as Error).name).toMatch(/Abort/);
    }
    expect(got).toBeGreaterThanOrEqual(2);
    const next = await client.chat.completions.create({ model: MODELS.chat, messages: hello, ...sampling });
    expect(next.choices[0]!.message.content?.length).toBeGreaterThan(0);
  });
});

describe("openai: completions, embeddings, models", () => {
  it("completions: text_completion, streamed and not", async () => {
    await client.completions.create({ model: MODELS.chat, prompt: "Once upon a time", ...sampling }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const r = await client.completions.create({ model: MODELS.chat, prompt: "Once upon a time", ...sampling });
    expect(r.object).toBe("text_completion");
    expect(r.choices[0]!.text.length).toBeGreaterThan(0);
    expect(["stop", "length"]).toContain(r.choices[0]!.finish_reason);
    expect(r.usage?.completion_tokens).toBeGreaterThan(0);
    const stream = await client.completions.create({ model: MODELS.chat, prompt: "Once upon a time", ...sampling, stream: true });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(text).toBe(r.choices[0]!.text);
    expect(finish).toBe(r.choices[0]!.finish_reason);
  });

  it("embeddings: base64 (the SDK default) decodes to the model's dimension and matches float", async () => {
    const b64 = await client.embeddings.create({ model: MODELS.embed, input: ["hello world", "another text"] });
    expect(b64.object).toBe("list");
    expect(b64.data).toHaveLength(2);
    const v = b64.data[0]!.embedding;
    expect(v).toHaveLength(EMBED_DIM);
    expect(norm(v)).toBeCloseTo(1, 5);
    expect(b64.data[1]!.index).toBe(1);
    expect(b64.usage.prompt_tokens).toBeGreaterThan(0);
    const float = await client.embeddings.create({ model: MODELS.embed, input: "hello world", encoding_format: "float" });
    for (let i = 0; i < EMBED_DIM; i++) expect(float.data[0]!.embedding[i]).toBeCloseTo(v[i]!, 6);
    // "" is one input (Ollama's /v1 turns it into [""]): the embedding of the BOS token alone.
    const empty = await client.embeddings.create({ model: MODELS.embed, input: "" });
    expect(empty.data[0]!.embedding).toHaveLength(EMBED_DIM);
    expect(norm(empty.data[0]!.embedding)).toBeCloseTo(1, 5);
    const cut = await client.embeddings.create({ model: MODELS.embed, input: "hello world", dimensions: 8 });
    expect(cut.data[0]!.embedding).toHaveLength(8);
    expect(norm(cut.data[0]!.embedding)).toBeCloseTo(1, 5);
  });

  it("_debug_render_only shows the rendered prompt; an empty completions prompt only loads the model", async () => {
    const r = await fetch(`${d.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: MODELS.chat, messages: [{ role: "developer", content: "Be brief." }, { role: "user", content: "Render me" }], _debug_render_only: true }),
    });
    const body = (await r.json()) as { object: string; _debug_info: { rendered_template: string } };
    expect(body.object).toBe("chat.completion");
    expect(body._debug_info.rendered_template).toBe("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nRender me<|im_end|>\n<|im_start|>assistant\n");
    const load = await client.completions.create({ model: MODELS.chat, prompt: "" });
    expect(load.choices[0]).toMatchObject({ text: "", finish_reason: "load" });
  });

  it("models: list and retrieve; a missing model is a NotFoundError", async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) {
      expect(m.object).toBe("model");
      expect(m.owned_by).toBe("library");
      ids.push(m.id);
    }
    expect(ids).toEqual(expect.arrayContaining(Object.values(MODELS).map((m) => `${m}:latest`)));
    const one = await client.models.retrieve(MODELS.chat);
    expect(one.id).toBe(MODELS.chat);
    expect(one.created).toBeGreaterThan(0);
    await expect(client.models.retrieve("missing")).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe("openai: bad input gets OpenAI's status and message", () => {
  const bad = async (body: unknown, path = "/v1/chat/completions") => {
    const r = await fetch(`${d.url}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    return { status: r.status, type: r.headers.get("content-type"), body: (await r.json()) as { error: Record<string, unknown> } };
  };

  it("empty messages, unknown role, wrong types, top_logprobs out of range", async () => {
    await expect(client.chat.completions.create({ model: MODELS.chat, messages: [] })).rejects.toMatchObject({
      status: 400,
      message: "400 [] is too short - 'messages'",
    });
    const role = await bad({ model: MODELS.chat, messages: [{ role: "wizard", content: "hi" }] });
    expect(role.status).toBe(400);
    expect(role.type).toMatch(/application\/json/);
    expect(role.body).toEqual({
      error: {
        message: "Invalid value: 'wizard'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });
    expect((await bad({ model: MODELS.chat, messages: [{ role: "user", content: 42 }] })).body.error.message).toBe(
      "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an integer instead.",
    );
    expect((await bad({ model: MODELS.chat, messages: [{ role: "user", content: "hi" }], max_tokens: "ten" })).body.error.message).toBe(
      "Invalid type for 'max_tokens': expected an integer, but got a string instead.",
    );
    expect((await bad({ model: MODELS.chat, messages: [{ role: "user", content: "hi" }], top_logprobs: 50 })).body.error.message).toBe(
      "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 50 instead.",
    );
    expect((await bad({ model: MODELS.chat, messages: [{ role: "user", content: "hi" }], tools: [5] })).body.error.message).toBe(
      "Invalid type for 'tools[0]': expected an object, but got an integer instead.",
    );
  });

  it("missing model, malformed JSON, wrong encoding_format, models that cannot do the job", async () => {
    await expect(client.chat.completions.create({ model: "missing", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({
      status: 404,
      type: "not_found_error",
    });
    const malformed = await fetch(`${d.url}/v1/chat/completions`, { method: "POST", body: "{nope" });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    expect((await bad({ model: MODELS.embed, input: "x", encoding_format: "int8" }, "/v1/embeddings")).body.error.message).toBe(
      "Invalid value for 'encoding_format' = int8. Supported values: ['float', 'base64'].",
    );
    await expect(client.embeddings.create({ model: MODELS.chat, input: "x" })).rejects.toMatchObject({ status: 400 });
    await expect(client.chat.completions.create({ model: MODELS.chat, messages: [{ role: "user", content: "x" }], tools: [WEATHER_TOOL] })).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/does not support tools$/),
    });
  });
});
