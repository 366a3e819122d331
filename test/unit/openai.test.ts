// The /v1 translation (OpenAI request → native body, OpenAI's error wording) and the encoders
// (completion events → chat.completion / chunks / text_completion), without a daemon.
import { describe, expect, it } from "vitest";
import { flatten, ofOne, type Batches } from "../../src/backends/batches.js";
import { ApiError } from "../../src/daemon/errors.js";
import {
  chatChunks,
  chatCompletion,
  imageFromUrl,
  thinkFromEffort,
  translateChatRequest,
} from "../../src/daemon/routes/openai/chat.js";
import { textChunks, textCompletion, translateCompletionRequest } from "../../src/daemon/routes/openai/completions.js";
import { float32Base64, translateEmbeddingsRequest } from "../../src/daemon/routes/openai/embeddings.js";
import { openaiError } from "../../src/daemon/routes/openai/errors.js";
import type { CompletionEvent } from "../../src/daemon/routes/openai/events.js";
import { fails } from "../helpers/api-error.js";
import { done, from } from "../helpers/completion-events.js";

const user = [{ role: "user", content: "hi" }];



async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Each event a batch of its own, as a runner that yields one at a time gives them. */
const batched = (events: CompletionEvent[]) => ofOne(from(events));
const allFlat = <T>(b: Batches<T>) => all(flatten(b));

const meta = { id: "chatcmpl-x", created: 1700000000, model: "m:latest" };

describe("translateChatRequest", () => {
  it("maps OpenAI's fields onto options with OpenAI's defaults", () => {
    const t = translateChatRequest({ model: "m", messages: user });
    expect(t.native).toEqual({ model: "m", messages: [{ role: "user", content: "hi" }], stream: false, options: { temperature: 1, top_p: 1 } });
    const u = translateChatRequest({
      model: "m",
      messages: user,
      temperature: 0.2,
      top_p: 0.5,
      max_tokens: 5,
      max_completion_tokens: 9,
      stop: "END",
      seed: 3,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(u.native.options).toEqual({ temperature: 0.2, top_p: 0.5, num_predict: 9, stop: ["END"], seed: 3, frequency_penalty: 0.1, presence_penalty: 0.2 });
    expect(u.stream).toBe(true);
    expect(u.includeUsage).toBe(true);
    expect(translateChatRequest({ model: "m", messages: user, stop: ["a", "b"], max_tokens: 4 }).native.options).toMatchObject({ stop: ["a", "b"], num_predict: 4 });
  });

  it("response_format json_object / json_schema / text → format", () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    expect(translateChatRequest({ model: "m", messages: user, response_format: { type: "json_object" } }).native.format).toBe("json");
    expect(translateChatRequest({ model: "m", messages: user, response_format: { type: "json_schema", json_schema: { name: "x", schema, strict: true } } }).native.format).toEqual(schema);
    expect(translateChatRequest({ model: "m", messages: user, response_format: { type: "text" } }).native.format).toBeUndefined();
    expect(fails(() => translateChatRequest({ model: "m", messages: user, response_format: { type: "yaml" } })).message).toBe(
      "Invalid value: 'yaml'. Supported values are: 'json_object', 'json_schema', and 'text'.",
    );
  });

  it("messages: parts, developer, tool calls with string arguments, tool names from tool_call_id, reasoning", () => {
    const t = translateChatRequest({
      model: "m",
      messages: [
        { role: "developer", content: "be brief" },
        { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] },
        { role: "assistant", content: null, reasoning: "hmm", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
      ],
    });
    expect(t.native.messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "a\nb" },
      { role: "assistant", content: "", thinking: "hmm", tool_calls: [{ id: "call_1", function: { name: "get_weather", arguments: { city: "Paris" } } }] },
      { role: "tool", content: "sunny", tool_call_id: "call_1", tool_name: "get_weather" },
    ]);
    expect(fails(() => translateChatRequest({ model: "m", messages: [{ role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: "{" } }] }] })).message).toBe(
      "invalid tool call arguments",
    );
  });

  it("reasoning effort → think; tool_choice none drops tools", () => {
    expect(translateChatRequest({ model: "m", messages: user, reasoning_effort: "high" }).native.think).toBe("high");
    expect(translateChatRequest({ model: "m", messages: user, reasoning: { effort: "none" } }).native.think).toBe(false);
    expect(thinkFromEffort("minimal")).toBe("low");
    expect(thinkFromEffort("xhigh")).toBe("max");
    expect(fails(() => thinkFromEffort("lots")).message).toMatch(/^invalid reasoning value: "lots"/);
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } }];
    expect(translateChatRequest({ model: "m", messages: user, tools }).native.tools).toEqual(tools);
    expect(translateChatRequest({ model: "m", messages: user, tools, tool_choice: "none" }).native.tools).toBeUndefined();
    // required / a named function go on to the completion (which makes the answer a call)
    expect(translateChatRequest({ model: "m", messages: user, tools, tool_choice: "required" }).native.tool_choice).toBe("required");
    const named = { type: "function", function: { name: "f" } };
    expect(translateChatRequest({ model: "m", messages: user, tools, tool_choice: named }).native.tool_choice).toEqual(named);
    expect(fails(() => translateChatRequest({ model: "m", messages: user, tools, tool_choice: "always" })).message).toBe("Invalid value: 'always'. Supported values are: 'none', 'auto', and 'required'.");
    expect(fails(() => translateChatRequest({ model: "m", messages: user, tools, tool_choice: { type: "function" } })).message).toBe("Missing required parameter: 'tool_choice.function'.");
  });

  it("bad input gets OpenAI's status and wording", () => {
    expect(fails(() => translateChatRequest({ model: "m", messages: [] }))).toEqual({ status: 400, message: "[] is too short - 'messages'" });
    expect(fails(() => translateChatRequest({ model: "m" })).message).toBe("Missing required parameter: 'messages'.");
    expect(fails(() => translateChatRequest({ messages: user })).message).toBe("you must provide a model parameter");
    expect(fails(() => translateChatRequest({ model: "m", messages: [{ role: "wizard", content: "x" }] })).message).toBe(
      "Invalid value: 'wizard'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
    );
    expect(fails(() => translateChatRequest({ model: "m", messages: [{ content: "x" }] })).message).toBe("Missing required parameter: 'messages[0].role'.");
    expect(fails(() => translateChatRequest({ model: "m", messages: [{ role: "user", content: 5 }] })).message).toBe(
      "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an integer instead.",
    );
    expect(fails(() => translateChatRequest({ model: "m", messages: "hi" })).message).toBe("Invalid type for 'messages': expected an array, but got a string instead.");
    expect(fails(() => translateChatRequest({ model: "m", messages: user, temperature: "hot" })).message).toBe(
      "Invalid type for 'temperature': expected a number, but got a string instead.",
    );
    expect(fails(() => translateChatRequest({ model: "m", messages: user, max_tokens: 1.5 })).message).toBe(
      "Invalid type for 'max_tokens': expected an integer, but got a decimal instead.",
    );
    expect(fails(() => translateChatRequest({ model: "m", messages: user, tools: ["f"] })).message).toBe(
      "Invalid type for 'tools[0]': expected an object, but got a string instead.",
    );
    expect(fails(() => translateChatRequest({ model: "m", messages: user, top_logprobs: 50 })).message).toBe(
      "Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 50 instead.",
    );
    expect(fails(() => translateChatRequest({ model: "m", messages: user, n: 2 })).status).toBe(400);
  });

  it("images: data URIs become native images, URLs are refused", () => {
    expect(imageFromUrl("data:image/png;base64,aGVsbG8=")).toBe("aGVsbG8=");
    expect(fails(() => imageFromUrl("https://example.com/a.png")).message).toBe("image URLs are not currently supported, please use base64 encoded data instead");
    expect(fails(() => imageFromUrl("data:text/plain;base64,aGk=")).message).toBe("invalid image input");
    const t = translateChatRequest({ model: "m", messages: [{ role: "user", content: [{ type: "text", text: "what" }, { type: "image_url", image_url: { url: "data:image/jpeg;base64,AAAA" } }] }] });
    expect(t.native.messages).toEqual([{ role: "user", content: "what", images: ["AAAA"] }]);
  });
});

describe("chat encoders", () => {
  it("non-stream: content, reasoning, tool calls (string arguments), finish_reason tool_calls, usage", async () => {
    const r = (await chatCompletion(
      from([
        { type: "thinking", text: "let me see" },
        { type: "content", text: "Hel" },
        { type: "content", text: "lo" },
        { type: "tool_calls", calls: [{ id: "call_a", function: { index: 0, name: "f", arguments: { x: 1 } } }] },
        done(),
      ]),
      meta,
    )) as Record<string, unknown>;
    expect(r).toEqual({
      id: "chatcmpl-x",
      object: "chat.completion",
      created: 1700000000,
      model: "m:latest",
      system_fingerprint: "fp_ollama",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: "Hello",
            reasoning: "let me see",
            tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "f", arguments: '{"x":1}' } }],
          },
          finish_reason: "tool_calls",
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
    });
  });

  it("stream: role first, one id and created, empty-delta finish chunk, usage chunk last", async () => {
    const chunks = (await allFlat(chatChunks(batched([{ type: "content", text: "a" }, { type: "content", text: "b" }, done("length")]), meta, true))) as Array<Record<string, any>>;
    expect(chunks).toHaveLength(4);
    expect(chunks[0]!.choices[0].delta).toEqual({ role: "assistant", content: "a" });
    expect(chunks[1]!.choices[0].delta).toEqual({ content: "b" });
    expect(chunks[2]!.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: "length" });
    expect(chunks[3]!.choices).toEqual([]);
    expect(chunks[3]!.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    for (const c of chunks) {
      expect(c.id).toBe("chatcmpl-x");
      expect(c.object).toBe("chat.completion.chunk");
      expect(c.created).toBe(1700000000);
    }
    expect(chunks[0]!.usage).toBeNull();
  });

  it("stream: events that arrive together give their chunks together, in order, and nothing after done", async () => {
    const events: CompletionEvent[] = [{ type: "content", text: "a" }, { type: "thinking", text: "hm" }, { type: "content", text: "b" }, done("stop"), { type: "content", text: "late" }];
    async function* oneRead() {
      yield events;
    }
    const batches = await all(chatChunks(oneRead(), meta, true));
    expect(batches).toHaveLength(1);
    const chunks = batches[0] as Array<Record<string, any>>;
    expect(chunks.map((c) => c.choices[0]?.delta ?? "usage")).toEqual([{ role: "assistant", content: "a" }, { reasoning: "hm" }, { content: "b" }, {}, "usage"]);
    expect(chunks[3]!.choices[0].finish_reason).toBe("stop");
    expect(chunks[4]!.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    // the same events one batch each encode to the same chunks
    expect(await allFlat(chatChunks(batched(events), meta, true))).toEqual(chunks);
  });

  it("stream: tool call deltas carry index, id, type and name; an empty answer still opens with the role", async () => {
    const calls = [
      { function: { name: "f", arguments: { a: "x" } } },
      { id: "call_2", function: { name: "g", arguments: {} } },
    ];
    const chunks = (await allFlat(chatChunks(batched([{ type: "tool_calls", calls }, done()]), meta, false))) as Array<Record<string, any>>;
    const tc = chunks[0]!.choices[0].delta.tool_calls;
    expect(chunks[0]!.choices[0].delta.role).toBe("assistant");
    expect(tc[0]).toMatchObject({ index: 0, type: "function", function: { name: "f", arguments: '{"a":"x"}' } });
    expect(tc[0].id).toMatch(/^call_/);
    expect(tc[1]).toEqual({ index: 1, id: "call_2", type: "function", function: { name: "g", arguments: "{}" } });
    expect(chunks[1]!.choices[0].finish_reason).toBe("tool_calls");
    expect(chunks[1]!).not.toHaveProperty("usage");

    // Heartbeats (empty content events during a slow load) are sent as empty deltas.
    const beat = (await allFlat(chatChunks(batched([{ type: "content", text: "" }, { type: "content", text: "" }, { type: "content", text: "x" }, done()]), meta, false))) as Array<Record<string, any>>;
    expect(beat.map((c) => c.choices[0].delta)).toEqual([{ role: "assistant", content: "" }, { content: "" }, { content: "x" }, {}]);

    const empty = (await allFlat(chatChunks(batched([done()]), meta, false))) as Array<Record<string, any>>;
    expect(empty.map((c) => c.choices[0].delta)).toEqual([{ role: "assistant", content: "" }, {}]);
  });
});

describe("completions", () => {
  it("translates with Ollama's /v1/completions defaults and encodes text_completion", async () => {
    const t = translateCompletionRequest({ model: "m", prompt: "Once", max_tokens: 8, top_p: 0, stop: ["\n"], suffix: "end" });
    expect(t.native).toEqual({
      model: "m",
      prompt: "Once",
      suffix: "end",
      stream: false,
      options: { temperature: 1, top_p: 1, frequency_penalty: 0, presence_penalty: 0, num_predict: 8, stop: ["\n"] },
    });
    expect(fails(() => translateCompletionRequest({ model: "m", prompt: 3 })).message).toBe("Invalid type for 'prompt': expected a string, but got an integer instead.");
    expect(translateCompletionRequest({ model: "m", prompt: ["only"] }).native.prompt).toBe("only");
    const c = (await textCompletion(from([{ type: "content", text: "upon" }, done()]), { ...meta, id: "cmpl-1" })) as Record<string, any>;
    expect(c.object).toBe("text_completion");
    expect(c.choices).toEqual([{ text: "upon", index: 0, logprobs: null, finish_reason: "stop" }]);
    expect(c.usage.total_tokens).toBe(10);
    const chunks = (await allFlat(textChunks(batched([{ type: "content", text: "a" }, done("length")]), meta, true))) as Array<Record<string, any>>;
    expect(chunks.map((x) => (x.choices.length ? x.choices[0].finish_reason : "usage"))).toEqual([null, "length", "usage"]);
    expect(chunks[2]!.usage.prompt_tokens).toBe(7);
  });
});

describe("embeddings and errors", () => {
  it("base64 is little-endian float32", () => {
    const b = Buffer.from(float32Base64([1, -2.5, 0.125]), "base64");
    expect(b.length).toBe(12);
    expect([b.readFloatLE(0), b.readFloatLE(4), b.readFloatLE(8)]).toEqual([1, -2.5, 0.125]);
  });

  it("embedding requests: formats, empty inputs", () => {
    expect(translateEmbeddingsRequest({ model: "e", input: "hi" })).toEqual({ model: "e", inputs: ["hi"], base64: false });
    expect(translateEmbeddingsRequest({ model: "e", input: "", encoding_format: "BASE64" })).toEqual({ model: "e", inputs: [""], base64: true });
    expect(fails(() => translateEmbeddingsRequest({ model: "e", input: [] })).message).toBe("invalid input");
    expect(fails(() => translateEmbeddingsRequest({ model: "e" })).message).toBe("invalid input");
    expect(fails(() => translateEmbeddingsRequest({ model: "e", input: [1, 2] })).message).toBe("invalid input type");
    expect(fails(() => translateEmbeddingsRequest({ model: "e", input: "x", encoding_format: "int8" })).message).toBe(
      "Invalid value for 'encoding_format' = int8. Supported values: ['float', 'base64'].",
    );
  });

  it("the OpenAI error shape", () => {
    expect(openaiError(new ApiError(400, "bad"))).toEqual({ error: { message: "bad", type: "invalid_request_error", param: null, code: null } });
    expect(openaiError(new ApiError(404, "x")).error.type).toBe("not_found_error");
    expect(openaiError(new ApiError(500, "x")).error.type).toBe("api_error");
  });
});
