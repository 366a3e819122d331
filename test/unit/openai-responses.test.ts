// /v1/responses without a daemon: the Responses request → native /api/chat body (Ollama's
// FromResponsesRequest, with OpenAI's error wording), and the encoders (completion events → the
// response object, and the named stream events with their order and sequence numbers).
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { flatten, ofOne, type Batches } from "../../src/backends/batches.js";
import { ApiError } from "../../src/daemon/errors.js";
import type { CompletionEvent } from "../../src/daemon/routes/openai/events.js";
import { nativeChatBody } from "../../src/daemon/routes/openai/native.js";
import {
  ResponseEncoder,
  responseEvents,
  responseObject,
  translateResponsesRequest,
  type ResponseMeta,
} from "../../src/daemon/routes/openai/responses.js";
import { KEEP_ALIVE, namedSseResponse, type NamedEvent } from "../../src/daemon/routes/openai/sse.js";
import { ResponseStore } from "../../src/daemon/services/response-store.js";
import { fails } from "../helpers/api-error.js";
import { done, from } from "../helpers/completion-events.js";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";


const messagesOf = (body: Record<string, unknown>) => translateResponsesRequest({ model: "m", ...body }).native.messages;

describe("translateResponsesRequest", () => {
  it("a string input is one user message; instructions come first as the system message", () => {
    const t = translateResponsesRequest({ model: "m", input: "Hello" });
    expect(t).toMatchObject({ model: "m", stream: false });
    expect(t.native).toEqual({ model: "m", messages: [{ role: "user", content: "Hello" }], stream: false, options: { temperature: 1 } });
    expect(messagesOf({ instructions: "Speak like a pirate.", input: "Hello" })).toEqual([
      { role: "system", content: "Speak like a pirate." },
      { role: "user", content: "Hello" },
    ]);
    // No input at all is allowed (only loads the model, as in Ollama); "" adds no message.
    expect(messagesOf({ input: "" })).toEqual([]);
    expect(messagesOf({ instructions: "Be brief." })).toEqual([{ role: "system", content: "Be brief." }]);
  });

  it("sampling: max_output_tokens → num_predict, temperature (default 1.0), top_p only when sent; stream", () => {
    const t = translateResponsesRequest({ model: "m", input: "x", max_output_tokens: 100, temperature: 0.5, top_p: 0.9, stream: true });
    expect(t.native.options).toEqual({ temperature: 0.5, top_p: 0.9, num_predict: 100 });
    expect(t.native.stream).toBe(true);
    expect(t.stream).toBe(true);
    expect(t.echo).toMatchObject({ temperature: 0.5, top_p: 0.9, max_output_tokens: 100, instructions: null, truncation: "disabled", reasoning: null });
    expect(translateResponsesRequest({ model: "m", input: "x" }).echo).toMatchObject({ temperature: 1, top_p: 1, max_output_tokens: null });
  });

  it("message items: input_text parts concatenated, images decoded, the role shorthand, developer → system, output_text", () => {
    expect(
      messagesOf({
        input: [
          { type: "message", role: "developer", content: "Be brief." },
          {
            type: "message",
            role: "user",
            content: [
              { type: "input_text", text: "What is " },
              { type: "input_text", text: "in this image?" },
              { type: "input_image", detail: "auto", image_url: `data:image/png;base64,${PNG}` },
              { type: "input_image", detail: "auto", file_id: "file-1" },
            ],
          },
          { role: "assistant", content: [{ type: "output_text", text: "A red pixel." }] },
          { role: "user", content: "Thanks" },
        ],
      }),
    ).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "What is in this image?", images: [PNG] },
      { role: "assistant", content: "A red pixel." },
      { role: "user", content: "Thanks" },
    ]);
  });

  it("function_call and function_call_output round trip to tool_calls and a tool message", () => {
    const messages = messagesOf({
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "what is the weather?" }] },
        { type: "function_call", call_id: "call_abc123", name: "get_weather", arguments: '{"city":"Paris"}' },
        { type: "function_call_output", call_id: "call_abc123", output: "sunny, 72F" },
        { type: "function_call", call_id: "call_2", name: "get_time", arguments: "" },
        { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "noon" }, { type: "output_text", text: " UTC" }] },
      ],
    });
    expect(messages).toEqual([
      { role: "user", content: "what is the weather?" },
      { role: "assistant", content: "", tool_calls: [{ id: "call_abc123", function: { name: "get_weather", arguments: { city: "Paris" } } }] },
      { role: "tool", content: "sunny, 72F", tool_call_id: "call_abc123" },
      { role: "assistant", content: "", tool_calls: [{ id: "call_2", function: { name: "get_time", arguments: {} } }] },
      { role: "tool", content: "noon UTC", tool_call_id: "call_2" },
    ]);
    // The native body is what /api/chat itself accepts.
    expect(nativeChatBody(translateResponsesRequest({ model: "m", input: [{ type: "function_call", call_id: "c", name: "f", arguments: "{}" }] }).native).messages).toHaveLength(1);
  });

  it("merging: calls join the assistant message before them, reasoning goes to the next assistant message", () => {
    expect(
      messagesOf({
        input: [
          { role: "user", content: "think and act" },
          { type: "reasoning", id: "rs_1", encrypted_content: "Let me think...", summary: [] },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "I'll check both." }] },
          { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "function_call", call_id: "call_2", name: "get_time", arguments: "{}" },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "Second batch." }] },
          { type: "function_call", call_id: "call_3", name: "func_c", arguments: "{}" },
        ],
      }),
    ).toEqual([
      { role: "user", content: "think and act" },
      {
        role: "assistant",
        content: "I'll check both.",
        thinking: "Let me think...",
        tool_calls: [
          { id: "call_1", function: { name: "get_weather", arguments: { city: "Paris" } } },
          { id: "call_2", function: { name: "get_time", arguments: {} } },
        ],
      },
      { role: "assistant", content: "Second batch.", tool_calls: [{ id: "call_3", function: { name: "func_c", arguments: {} } }] },
    ]);
    // An assistant message replayed between a call and its output joins the call's message;
    // replayed web_search_call items are history metadata and dropped.
    expect(
      messagesOf({
        input: [
          { role: "user", content: "Inspect the directory." },
          { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "x" } },
          { type: "function_call", call_id: "call_t", name: "exec", arguments: '{"cmd":"pwd"}' },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "Inspecting." }] },
          { type: "function_call_output", call_id: "call_t", output: "/tmp" },
        ],
      }),
    ).toEqual([
      { role: "user", content: "Inspect the directory." },
      { role: "assistant", content: "Inspecting.", tool_calls: [{ id: "call_t", function: { name: "exec", arguments: { cmd: "pwd" } } }] },
      { role: "tool", content: "/tmp", tool_call_id: "call_t" },
    ]);
    // Trailing reasoning without a following message is an assistant message of its own.
    expect(messagesOf({ input: [{ role: "user", content: "q" }, { type: "reasoning", encrypted_content: "Still thinking..." }] })).toEqual([
      { role: "user", content: "q" },
      { role: "assistant", content: "", thinking: "Still thinking..." },
    ]);
  });

  it("tools: flat function tools become native ones, namespaces expand, nameless built-ins (web_search) are dropped, tool_choice none sends none", () => {
    const params = { type: "object", properties: { command: { type: "string" } }, required: ["command"] };
    const tools = [
      { type: "function", name: "shell", description: "Runs a shell command", strict: false, parameters: params },
      { type: "web_search" },
      { type: "file_search", vector_store_ids: ["vs_1"] },
      {
        type: "namespace",
        name: "muse",
        tools: [
          { type: "function", name: "bash", description: "bash", parameters: params },
          { type: "function", name: "muse.read_file", parameters: { type: "object" } },
        ],
      },
    ];
    const t = translateResponsesRequest({ model: "m", input: "hi", tools });
    expect(t.native.tools).toEqual([
      { type: "function", function: { name: "shell", description: "Runs a shell command", parameters: params } },
      { type: "function", function: { name: "muse.bash", description: "bash", parameters: params } },
      { type: "function", function: { name: "muse.read_file", parameters: { type: "object" } } },
    ]);
    expect(t.echo.tools).toEqual(tools);
    expect(translateResponsesRequest({ model: "m", input: "hi", tools, tool_choice: "none" }).native.tools).toBeUndefined();
  });

  it("reasoning.effort → think (Ollama's mapping), echoed with the summary", () => {
    const think = (effort: string) => translateResponsesRequest({ model: "m", input: "x", reasoning: { effort } }).native.think;
    expect(think("high")).toBe("high");
    expect(think("minimal")).toBe("low");
    expect(think("xhigh")).toBe("max");
    expect(think("none")).toBe(false);
    expect(translateResponsesRequest({ model: "m", input: "x" }).native.think).toBeUndefined();
    expect(translateResponsesRequest({ model: "m", input: "x", reasoning: { effort: "low", summary: "auto" } }).echo.reasoning).toEqual({ effort: "low", summary: "auto" });
    expect(fails(() => think("extreme"))).toEqual({ status: 400, message: expect.stringContaining('invalid reasoning value: "extreme"') });
  });

  it("text.format: json_schema → the schema, json_object → json, text → nothing", () => {
    const schema = { type: "object", properties: { name: { type: "string" }, age: { type: "integer" } }, required: ["name", "age"] };
    const t = translateResponsesRequest({ model: "m", input: "x", text: { format: { type: "json_schema", name: "person", strict: true, schema } } });
    expect(t.native.format).toEqual(schema);
    expect(t.echo.text).toEqual({ format: { type: "json_schema", name: "person", schema, strict: true } });
    expect(translateResponsesRequest({ model: "m", input: "x", text: { format: { type: "json_object" } } }).native.format).toBe("json");
    expect(translateResponsesRequest({ model: "m", input: "x", text: { format: { type: "text" } } }).native.format).toBeUndefined();
    expect(translateResponsesRequest({ model: "m", input: "x" }).echo.text).toEqual({ format: { type: "text" } });
  });

  it("bad input: 400 with a message that names the problem", () => {
    const bad = (body: Record<string, unknown>) => fails(() => translateResponsesRequest({ model: "m", ...body }));
    expect(fails(() => translateResponsesRequest({ input: "x" }))).toEqual({ status: 400, message: "you must provide a model parameter" });
    expect(fails(() => translateResponsesRequest([1]))).toMatchObject({ status: 400 });
    expect(bad({ input: 42 })).toEqual({ status: 400, message: "Invalid type for 'input': expected one of a string or array of input items, but got an integer instead." });
    expect(bad({ input: [{ content: "no role, no type" }] }).message).toBe("Missing required parameter: 'input[0].type'.");
    expect(bad({ input: [{ type: "unknown_type" }] }).message).toBe(
      "Invalid value: 'unknown_type'. Supported values are: 'message', 'function_call', 'function_call_output', 'reasoning', 'web_search_call', and 'item_reference'.",
    );
    expect(bad({ input: [{ role: "wizard", content: "hi" }] }).message).toBe("Invalid value: 'wizard'. Supported values are: 'user', 'assistant', 'system', and 'developer'.");
    expect(bad({ input: [{ role: "user", content: 5 }] }).message).toBe(
      "Invalid type for 'input[0].content': expected one of a string or array of content parts, but got an integer instead.",
    );
    expect(bad({ input: [{ role: "user", content: [{ type: "unknown" }] }] }).message).toMatch(/^Invalid value: 'unknown'\. Supported values are: 'input_text'/);
    expect(bad({ input: [{ role: "user", content: [{ type: "input_file", file_data: "x" }] }] }).message).toBe("file inputs are not currently supported");
    expect(bad({ input: [{ role: "user", content: [{ type: "input_image", image_url: "https://example.com/a.png" }] }] }).message).toBe(
      "image URLs are not currently supported, please use base64 encoded data instead",
    );
    expect(bad({ input: [{ type: "function_call", call_id: "c", name: "f", arguments: "{nope" }] }).message).toBe("invalid tool call arguments");
    expect(bad({ input: [{ type: "function_call", call_id: "c", arguments: "{}" }] }).message).toBe("Missing required parameter: 'input[0].name'.");
    expect(bad({ input: "x", tools: [{ type: "function", description: "no name" }] }).message).toBe("Missing required parameter: 'tools[0].name'.");
    expect(bad({ input: "x", max_output_tokens: "ten" }).message).toBe("Invalid type for 'max_output_tokens': expected an integer, but got a string instead.");
    expect(bad({ input: "x", text: { format: { type: "yaml" } } }).message).toBe("Invalid value: 'yaml'. Supported values are: 'text', 'json_schema', and 'json_object'.");
    expect(bad({ input: "x", previous_response_id: "resp_1" }).message).toMatch(/^Previous response with id 'resp_1' not found \(stored responses are kept in this daemon's memory/);
    expect(bad({ input: [{ type: "item_reference", id: "msg_1" }] }).message).toMatch(/^Item with id 'msg_1' not found/);
    expect(bad({ input: "x", conversation: "conv_1" }).message).toMatch(/^'conversation' is not supported/);
  });

  it("continues a stored response: previous_response_id brings its conversation (not its instructions), item_reference an item of it", () => {
    const store = new ResponseStore();
    const first = translateResponsesRequest({ model: "m", instructions: "Be brief", input: "What is 2+2?" }, store);
    expect(first.echo).toMatchObject({ store: true, previous_response_id: null });
    const answer = { id: "msg_a", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "4" }] };
    store.save("resp_a", { response: { id: "resp_a", output: [answer] }, input: first.input, conversation: [...first.prior, ...first.input, answer] });

    const next = translateResponsesRequest({ model: "m", previous_response_id: "resp_a", input: "And 3+3?" }, store);
    expect(next.native.messages).toEqual([
      { role: "user", content: "What is 2+2?" },
      { role: "assistant", content: "4" },
      { role: "user", content: "And 3+3?" },
    ]);
    expect(next.echo.previous_response_id).toBe("resp_a");
    // the AI SDK's way: the whole history again, earlier answers by reference
    const byRef = translateResponsesRequest({ model: "m", input: [{ role: "user", content: "What is 2+2?" }, { type: "item_reference", id: "msg_a" }, { role: "user", content: "And 3+3?" }] }, store);
    expect(byRef.native.messages).toEqual(next.native.messages);
    // store: false is answered but not kept
    expect(translateResponsesRequest({ model: "m", input: "x", store: false }, store).echo.store).toBe(false);
  });
});

describe("ResponseStore", () => {
  const entry = (id: string, text: string) => ({ response: { id }, input: [], conversation: [{ id: `msg_${id}`, type: "message", role: "assistant", content: text }] });

  it("keeps the newest responses within its count and byte budget, and finds an item through an older holder", () => {
    const store = new ResponseStore(3, 1 << 20);
    for (const id of ["a", "b", "c", "d"]) store.save(id, entry(id, id));
    expect(["a", "b", "c", "d"].map((id) => store.get(id) !== undefined)).toEqual([false, true, true, true]);
    expect(store.item("msg_a")).toBeUndefined();
    expect(store.item("msg_c")).toMatchObject({ content: "c" });
    // a later turn repeats an earlier item; dropping the later one leaves the earlier one's copy
    store.save("e", { response: { id: "e" }, input: [], conversation: [{ id: "msg_c", type: "message", role: "assistant", content: "c" }, { id: "msg_e", type: "message", role: "user", content: "e" }] });
    expect(store.delete("e")).toBe(true);
    expect(store.item("msg_c")).toMatchObject({ content: "c" });
    expect(store.delete("e")).toBe(false);

    const small = new ResponseStore(100, 4000);
    for (let i = 0; i < 10; i++) small.save(`r${i}`, entry(`r${i}`, "x".repeat(500)));
    const kept = Array.from({ length: 10 }, (_, i) => small.get(`r${i}`) !== undefined);
    expect(kept.at(-1)).toBe(true);
    expect(kept.filter(Boolean).length).toBeLessThan(5);
    // one that alone exceeds the budget is not kept (nor does it push the others out)
    small.save("huge", entry("huge", "x".repeat(10_000)));
    expect(small.get("huge")).toBeUndefined();
    expect(small.get("r9")).toBeDefined();
  });
});

// ---------- encoders ----------

const meta = (stream: boolean): ResponseMeta => ({
  id: "resp_1",
  createdAt: 1700000000,
  model: "m:latest",
  stream,
  echo: translateResponsesRequest({ model: "m", input: "x" }).echo,
});

/** Each completion event a batch of its own; the stream's events, flattened. */
async function streamed(events: CompletionEvent[]): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for await (const e of flatten(responseEvents(ofOne(from(events)), new ResponseEncoder(meta(true))))) out.push(e as NamedEvent & Record<string, unknown>);
  return out;
}

const types = (events: Array<Record<string, unknown>>) => events.map((e) => e.type);

describe("response encoders", () => {
  it("stream, text: created, in_progress, item and part added, deltas, then the .done events and completed; sequence numbers count from 0", async () => {
    const events = await streamed([{ type: "content", text: "Hello" }, { type: "content", text: " World" }, done()]);
    expect(types(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0]!.response).toMatchObject({ id: "resp_1", object: "response", status: "in_progress", output: [], usage: null, created_at: 1700000000, model: "m:latest" });
    const item = (events[2]!.item as { id: string }).id;
    expect(item).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(events[4]).toEqual({ type: "response.output_text.delta", item_id: item, output_index: 0, content_index: 0, delta: "Hello", logprobs: [], sequence_number: 4 });
    expect(events[6]).toMatchObject({ text: "Hello World", item_id: item, output_index: 0 });
    const message = { id: item, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hello World", annotations: [], logprobs: [] }] };
    expect(events[8]).toMatchObject({ output_index: 0, item: message });
    const completed = events[9]!.response as Record<string, unknown>;
    expect(completed).toMatchObject({ status: "completed", output: [message] });
    expect(completed.usage).toEqual({ input_tokens: 7, output_tokens: 3, total_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } });
    expect(completed.completed_at).toEqual(expect.any(Number));
  });

  it("stream, reasoning then text: the reasoning item closes (summary and encrypted_content) before the message opens at index 1", async () => {
    const events = await streamed([{ type: "thinking", text: "Let me " }, { type: "thinking", text: "think..." }, { type: "content", text: "42" }, done()]);
    expect(types(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events[2]!.item).toEqual({ id: expect.stringMatching(/^rs_/), type: "reasoning", summary: [] });
    expect(events[5]).toMatchObject({ output_index: 0, summary_index: 0, text: "Let me think..." });
    const reasoning = { id: (events[2]!.item as { id: string }).id, type: "reasoning", summary: [{ type: "summary_text", text: "Let me think..." }], encrypted_content: "Let me think..." };
    expect(events[6]!.item).toEqual(reasoning);
    expect(events[7]).toMatchObject({ output_index: 1, item: { type: "message" } });
    const output = (events[13]!.response as { output: Array<{ type: string }> }).output;
    expect(output.map((i) => i.type)).toEqual(["reasoning", "message"]);
    expect(output[0]).toEqual(reasoning);
  });

  it("stream, a tool call: added (in_progress, empty arguments), arguments delta and done, item done; no message item", async () => {
    const events = await streamed([{ type: "tool_calls", calls: [{ id: "call_abc", function: { name: "get_weather", arguments: { city: "Paris" } } }] }, done()]);
    expect(types(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const id = (events[2]!.item as { id: string }).id;
    expect(events[2]!.item).toEqual({ id, type: "function_call", status: "in_progress", call_id: "call_abc", name: "get_weather", arguments: "" });
    expect(events[3]).toMatchObject({ item_id: id, output_index: 0, delta: '{"city":"Paris"}' });
    expect(events[4]).toMatchObject({ item_id: id, output_index: 0, arguments: '{"city":"Paris"}' });
    const call = { id, type: "function_call", status: "completed", call_id: "call_abc", name: "get_weather", arguments: '{"city":"Paris"}' };
    expect(events[5]!.item).toEqual(call);
    expect((events[6]!.response as { output: unknown[] }).output).toEqual([call]);
  });

  it("stream: text before a call is closed first; text after it is dropped (Ollama); heartbeats open the stream, then are comments", async () => {
    const events = await streamed([
      { type: "content", text: "" },
      { type: "content", text: "" },
      { type: "content", text: "Checking." },
      { type: "tool_calls", calls: [{ function: { name: "f", arguments: {} } }] },
      { type: "content", text: "ignored" },
      done(),
    ]);
    expect(events[2]).toBe(KEEP_ALIVE);
    const named = events.filter((e) => e !== (KEEP_ALIVE as object));
    expect(named.map((e) => e.sequence_number)).toEqual(named.map((_, i) => i));
    expect(types(named)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const output = (named.at(-1)!.response as { output: Array<Record<string, unknown>> }).output;
    expect(output.map((i) => i.type)).toEqual(["message", "function_call"]);
    expect(output[1]).toMatchObject({ type: "function_call", name: "f", arguments: "{}", call_id: expect.stringMatching(/^call_/) });
  });

  it("stream: a generation error after the start ends with response.failed; an input that ends without done too", async () => {
    async function* failing(): Batches<CompletionEvent> {
      yield [{ type: "content", text: "Hi" }];
      throw new Error("runner crashed");
    }
    const events: Array<Record<string, unknown>> = [];
    for await (const e of flatten(responseEvents(failing(), new ResponseEncoder(meta(true))))) events.push(e as NamedEvent & Record<string, unknown>);
    const last = events.at(-1)!;
    expect(last.type).toBe("response.failed");
    expect(last.sequence_number).toBe(events.length - 1);
    expect(last.response).toMatchObject({ id: "resp_1", status: "failed", error: { code: "api_error", message: "runner crashed" } });
    const cut = await streamed([{ type: "content", text: "Hi" }]);
    expect(cut.at(-1)).toMatchObject({ type: "response.failed", response: { error: { message: "generation ended without a final response" } } });
  });

  it("non-stream: the response object with reasoning, message, usage and the request echoed", async () => {
    const enc = new ResponseEncoder(meta(false));
    const r = await responseObject(from([{ type: "thinking", text: "Analyzing..." }, { type: "content", text: "The answer is 42" }, done()]), enc);
    expect(r).toMatchObject({
      id: "resp_1",
      object: "response",
      created_at: 1700000000,
      status: "completed",
      model: "m:latest",
      error: null,
      incomplete_details: null,
      previous_response_id: null,
      instructions: null,
      tools: [],
      tool_choice: "auto",
      text: { format: { type: "text" } },
      temperature: 1,
      top_p: 1,
      store: false,
      usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10 },
    });
    expect(r.completed_at).toBeGreaterThanOrEqual(1700000000);
    const output = r.output as Array<Record<string, unknown>>;
    expect(output).toHaveLength(2);
    expect(output[0]).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "Analyzing..." }], encrypted_content: "Analyzing..." });
    expect(output[1]).toMatchObject({ type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "The answer is 42", annotations: [], logprobs: [] }] });
  });

  it("a response cut off by max_output_tokens is incomplete: its status, incomplete_details and final event say so", async () => {
    const cut = await responseObject(from([{ type: "content", text: "Hel" }, done("length")]), new ResponseEncoder(meta(false)));
    expect(cut).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
    const events = await streamed([{ type: "content", text: "Hel" }, done("length")]);
    expect(events.at(-1)).toMatchObject({ type: "response.incomplete", response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } } });
    expect((await responseObject(from([done()]), new ResponseEncoder(meta(false)))).status).toBe("completed");
  });

  it("non-stream: an empty answer still has a (empty) message item; a tool call answer has none", async () => {
    const empty = await responseObject(from([done("length")]), new ResponseEncoder(meta(false)));
    expect(empty.output).toEqual([{ id: expect.stringMatching(/^msg_/), type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "", annotations: [], logprobs: [] }] }]);
    const call = await responseObject(from([{ type: "tool_calls", calls: [{ id: "call_1", function: { name: "f", arguments: { a: 1 } } }] }, done()]), new ResponseEncoder(meta(false)));
    expect(call.output).toEqual([{ id: expect.stringMatching(/^fc_/), type: "function_call", status: "completed", call_id: "call_1", name: "f", arguments: '{"a":1}' }]);
    await expect(responseObject(from([{ type: "content", text: "x" }]), new ResponseEncoder(meta(false)))).rejects.toThrow("generation ended without a final response");
  });

  it("on the wire: `event: <type>` then `data: <json>` per event, keep-alives as SSE comments, no [DONE]", async () => {
    const app = new Hono();
    app.get("/", (c) => namedSseResponse(c, responseEvents(ofOne(from([{ type: "content", text: "" }, { type: "content", text: "" }, { type: "content", text: "Hi" }, done()])), new ResponseEncoder(meta(true))), () => undefined));
    const r = await app.request("/");
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const text = await r.text();
    const blocks = text.split("\n\n").filter((b) => b !== "");
    expect(blocks[0]).toMatch(/^event: response\.created\ndata: \{"type":"response\.created","response":\{"id":"resp_1",/);
    expect(blocks[2]).toBe(": keep-alive");
    for (const b of blocks.filter((b) => !b.startsWith(":"))) {
      const [event, data] = b.split("\n");
      expect(event).toBe(`event: ${(JSON.parse(data!.slice("data: ".length)) as { type: string }).type}`);
    }
    expect(blocks.at(-1)).toMatch(/^event: response\.completed\n/);
    expect(text).not.toContain("[DONE]");
  });
});
