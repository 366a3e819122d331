// The openai SDK's Responses API (client.responses.create / .stream, what Codex CLI speaks) against
// /v1/responses: the response object and its usage, the named stream events (same text as the
// non-streamed answer, the SDK's own accumulator satisfied), a function call and its output sent
// back, reasoning items from a thinking model and sent back, text.format json_schema, and bad
// input with OpenAI's statuses and error shape.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDaemon } from "../helpers/daemon.js";
import { ANSWER_SCHEMA, CALL_FORMAT, CITIES, expectAnswer, MODELS, startCompatDaemon, WEATHER_TOOL } from "./helpers.js";

let d: TestDaemon;
let client: OpenAI;
// Greedy sampling: the same prompt gives the same text, streamed or not.
const sampling = { temperature: 0, max_output_tokens: 12 } as const;
const weatherTool: OpenAI.Responses.FunctionTool = { type: "function", strict: null, ...WEATHER_TOOL.function };

beforeAll(async () => {
  d = await startCompatDaemon();
  client = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "ollama", maxRetries: 0 });
});

afterAll(async () => {
  await d?.stop();
});

/** The rendered prompt (ollamats' _debug_render_only) of a Responses request, nothing generated. */
async function rendered(body: Record<string, unknown>): Promise<string> {
  const r = await fetch(`${d.url}/v1/responses`, { method: "POST", body: JSON.stringify({ ...body, _debug_render_only: true }) });
  expect(r.status).toBe(200);
  return ((await r.json()) as { _debug_info: { rendered_template: string } })._debug_info.rendered_template;
}

/** Finished one way or the other, consistently: cut off at `max` tokens is "incomplete" (reason
 *  max_output_tokens), a natural end "completed". */
function expectFinished(r: OpenAI.Responses.Response, max: number): void {
  if (r.status === "incomplete") {
    expect(r.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(r.usage?.output_tokens).toBe(max);
  } else {
    expect(r.status).toBe("completed");
    expect(r.incomplete_details).toBeNull();
  }
}

describe("openai: responses", () => {
  it("non-streamed: a response with one message item, output_text and usage; instructions are the system prompt", async () => {
    const r = await client.responses.create({ model: MODELS.chat, instructions: "You are terse.", input: "Hello!", ...sampling });
    expect(r.object).toBe("response");
    expect(r.id).toMatch(/^resp_[0-9a-f]+$/);
    expectFinished(r, 12);
    expect(r.model).toBe(MODELS.chat);
    expect(r.instructions).toBe("You are terse.");
    expect(r.max_output_tokens).toBe(12);
    expect(r.output).toHaveLength(1);
    const item = r.output[0]!;
    expect(item.type).toBe("message");
    if (item.type !== "message") throw new Error("no message");
    expect(item.role).toBe("assistant");
    expect(item.id).toMatch(/^msg_/);
    const part = item.content[0]!;
    expect(part.type).toBe("output_text");
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(part.type === "output_text" && part.text).toBe(r.output_text);
    expect(r.usage?.output_tokens).toBeGreaterThan(0);
    expect(r.usage?.output_tokens).toBeLessThanOrEqual(12);
    expect(r.usage?.total_tokens).toBe((r.usage?.input_tokens ?? 0) + (r.usage?.output_tokens ?? 0));
    // The instructions are the prompt's system message (in place of the model's SYSTEM).
    const bare = await client.responses.create({ model: MODELS.chat, input: "Hello!", ...sampling });
    expect(bare.usage?.input_tokens).not.toBe(r.usage?.input_tokens);
    expect(await rendered({ model: MODELS.chat, instructions: "Be brief.", input: [{ role: "user", content: [{ type: "input_text", text: "Render me" }] }] })).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nRender me<|im_end|>\n<|im_start|>assistant\n",
    );
  });

  it("streamed: named events in order with sequence numbers, the same text as non-streamed, and response.completed", async () => {
    const params = { model: MODELS.chat, input: [{ role: "user" as const, content: "Hello!" }], ...sampling };
    await client.responses.create(params); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const whole = await client.responses.create(params);
    const stream = await client.responses.create({ ...params, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const kinds = events.map((e) => e.type);
    expect(kinds.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
    expect(kinds.slice(-4, -1)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done"]);
    let deltas = "";
    for (const e of events) if (e.type === "response.output_text.delta") deltas += e.delta;
    expect(deltas).toBe(whole.output_text);
    const done = events.find((e) => e.type === "response.output_text.done");
    expect(done?.type === "response.output_text.done" && done.text).toBe(whole.output_text);
    expectFinished(whole, 12);
    const completed = events.at(-1)!;
    expect(completed.type).toBe(whole.status === "incomplete" ? "response.incomplete" : "response.completed");
    if (completed.type !== "response.completed" && completed.type !== "response.incomplete") throw new Error("no final event");
    const final = completed.response;
    expect([final.status, final.incomplete_details]).toEqual([whole.status, whole.incomplete_details]);
    expect(final.id).toBe((events[0] as OpenAI.Responses.ResponseCreatedEvent).response.id);
    const message = final.output[0];
    expect(message?.type === "message" && message.content[0]?.type === "output_text" && message.content[0].text).toBe(whole.output_text);
    expect(final.usage).toEqual(whole.usage);

    // The SDK's stream helper rebuilds the response from the events (it checks every output_index).
    const helper = client.responses.stream(params);
    let helped = "";
    helper.on("response.output_text.delta", (e) => (helped += e.delta));
    const rebuilt = await helper.finalResponse();
    expect(helped).toBe(whole.output_text);
    // (the SDK's helper takes its final snapshot from response.completed only)
    if (whole.status === "completed") expect(rebuilt.status).toBe("completed");
    const rebuiltMessage = rebuilt.output[0];
    expect(rebuiltMessage?.type === "message" && rebuiltMessage.content[0]?.type === "output_text" && rebuiltMessage.content[0].text).toBe(whole.output_text);
  });

  it("function calls: a function_call item with JSON arguments; its function_call_output sent back reaches the prompt", async () => {
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: "What is the weather in Paris?" }];
    const params = {
      model: MODELS.tools,
      input,
      tools: [weatherTool],
      // Shaped like a Llama 3.2 tool call, so the daemon's tool-call parser sees a real call.
      text: { format: { type: "json_schema" as const, name: "call", schema: CALL_FORMAT } },
      temperature: 0,
      max_output_tokens: 128,
    };
    const r = await client.responses.create(params);
    const calls = r.output.filter((i): i is OpenAI.Responses.ResponseFunctionToolCall => i.type === "function_call");
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call.name).toBe("get_weather");
    expect(call.status).toBe("completed");
    expect(call.id).toMatch(/^fc_/);
    expect(call.call_id).toMatch(/^call_/);
    expect(CITIES).toContain((JSON.parse(call.arguments) as { city: string }).city);
    expect(r.output.some((i) => i.type === "message")).toBe(false);

    // Streamed: the same call as events.
    const stream = await client.responses.create({ ...params, stream: true });
    let args = "";
    let added: OpenAI.Responses.ResponseOutputItem | undefined;
    for await (const e of stream) {
      if (e.type === "response.output_item.added" && e.item.type === "function_call") added = e.item;
      if (e.type === "response.function_call_arguments.done") args = e.arguments;
    }
    expect(added?.type === "function_call" && added.name).toBe("get_weather");
    expect(args).toBe(call.arguments);

    // The result goes back as a function_call_output after the call item, as Codex sends it.
    const followUp = (result: string): OpenAI.Responses.ResponseInputItem[] => [...input, call, { type: "function_call_output", call_id: call.call_id, output: result }];
    const answer = await client.responses.create({ model: MODELS.tools, input: followUp("22 degrees"), tools: [weatherTool], ...sampling });
    expect(answer.output.at(-1)?.type).toBe("message");
    const long = await client.responses.create({ model: MODELS.tools, input: followUp("22 degrees and sunny, light wind from the west, clear skies all afternoon"), tools: [weatherTool], ...sampling });
    expect(long.usage?.input_tokens).toBeGreaterThan(answer.usage?.input_tokens ?? 0);
    const prompt = await rendered({ model: MODELS.tools, input: followUp("22 degrees"), tools: [weatherTool] });
    const city = (JSON.parse(call.arguments) as { city: string }).city;
    expect(prompt).toMatch(new RegExp(`\\{"name": "get_weather", "parameters": \\{"city": ?"${city}"\\}\\}`));
    expect(prompt).toContain("<|start_header_id|>ipython<|end_header_id|>\n\n22 degrees<|eot_id|>");
  });

  it("reasoning: a thinking model's thinking is a reasoning item (summary, streamed as summary deltas); effort none turns it off; sent back it is history thinking", async () => {
    const input = "Think first";
    const r = await client.responses.create({ model: MODELS.thinker, input, reasoning: { effort: "high" }, ...sampling });
    const reasoning = r.output[0];
    if (reasoning?.type !== "reasoning") throw new Error(`expected a reasoning item, got ${reasoning?.type}`);
    const thought = reasoning.summary[0]?.text ?? "";
    expect(thought.length).toBeGreaterThan(0);
    expect(reasoning.encrypted_content).toBe(thought);
    expect(r.reasoning?.effort).toBe("high");

    const stream = await client.responses.create({ model: MODELS.thinker, input, reasoning: { effort: "high" }, ...sampling, stream: true });
    let summary = "";
    let doneText = "";
    for await (const e of stream) {
      if (e.type === "response.reasoning_summary_text.delta") summary += e.delta;
      if (e.type === "response.reasoning_summary_text.done") doneText = e.text;
    }
    expect(summary).toBe(thought);
    expect(doneText).toBe(thought);

    const off = await client.responses.create({ model: MODELS.thinker, input, reasoning: { effort: "none" }, ...sampling });
    expect(off.output.map((i) => i.type)).toEqual(["message"]);
    expect(off.output_text.length).toBeGreaterThan(0);

    // Sent back, the reasoning item becomes the next assistant message's thinking.
    const prompt = await rendered({
      model: MODELS.thinker,
      input: [
        { role: "user", content: input },
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "T" }], encrypted_content: "Because." },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Yes." }] },
        { role: "user", content: "Again" },
      ],
    });
    expect(prompt).toContain("<|im_start|>assistant\n<think>Because.</think>Yes.<|im_end|>");
  });

  it("abort mid-stream, then the next request is served", async () => {
    const ac = new AbortController();
    const stream = await client.responses.create({ model: MODELS.chat, input: "Hello!", max_output_tokens: 100000, stream: true }, { signal: ac.signal });
    let got = 0;
    try {
      for await (const e of stream) {
        if (e.type === "response.output_text.delta" && ++got === 2) ac.abort();
      }
    } catch (err) {
      expect((err as Error).name).toMatch(/Abort/);
    }
    expect(got).toBeGreaterThanOrEqual(2); // events the SDK had already read still come out
    const next = await client.responses.create({ model: MODELS.chat, input: "Hello!", ...sampling });
    expect(next.output_text.length).toBeGreaterThan(0);
  });

  it("text.format json_schema gives JSON that validates", async () => {
    const r = await client.responses.create({
      model: MODELS.chat,
      input: "yes or no?",
      text: { format: { type: "json_schema", name: "answer", schema: ANSWER_SCHEMA, strict: true } },
      temperature: 0,
      max_output_tokens: 64,
    });
    expectAnswer(JSON.parse(r.output_text));
    expect(r.text?.format).toEqual({ type: "json_schema", name: "answer", schema: ANSWER_SCHEMA, strict: true });
  });

  it("a compressed body (the Codex CLI sends zstd; gzip here, which every Node has) answers as the plain one", async () => {
    const { gzipSync } = await import("node:zlib");
    const body = JSON.stringify({ model: MODELS.chat, input: "Hello!", temperature: 0, max_output_tokens: 8 });
    const ask = async (init: RequestInit) => ((await (await fetch(`${d.url}/v1/responses`, { method: "POST", ...init })).json()) as { output_text?: string; output: Array<{ type: string; content?: Array<{ text: string }> }> });
    const text = (r: Awaited<ReturnType<typeof ask>>) => r.output.find((i) => i.type === "message")?.content?.[0]?.text;
    const plain = await ask({ body });
    const gzipped = await ask({ body: gzipSync(body), headers: { "content-encoding": "gzip" } });
    expect(text(gzipped)).toBe(text(plain));
    expect(text(plain)?.length).toBeGreaterThan(0);
  });
});

describe("openai: responses, stored and cut off", () => {
  it("a response cut off by max_output_tokens is incomplete, streamed (response.incomplete) or not", async () => {
    const r = await client.responses.create({ model: MODELS.chat, input: "Tell me a long story.", temperature: 0, max_output_tokens: 2 });
    expect([r.status, r.incomplete_details, r.usage?.output_tokens]).toEqual(["incomplete", { reason: "max_output_tokens" }, 2]);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of await client.responses.create({ model: MODELS.chat, input: "Tell me a long story.", temperature: 0, max_output_tokens: 2, stream: true })) events.push(e);
    expect(events.at(-1)).toMatchObject({ type: "response.incomplete", response: { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } } });
  });

  it("stored responses: previous_response_id goes on from one, item_reference names its items, retrieve / input items / delete", async () => {
    const first = await client.responses.create({ model: MODELS.chat, instructions: "You are terse.", input: "Hello!", ...sampling });
    expect([(first as unknown as { store: boolean }).store, first.previous_response_id]).toEqual([true, null]);
    const next = { model: MODELS.chat, input: "And again?", ...sampling };
    // the same conversation three ways: continued, sent whole, sent with the answer by reference
    const continued = await rendered({ ...next, previous_response_id: first.id });
    const whole = await rendered({ ...next, input: [{ role: "user", content: "Hello!" }, { role: "assistant", content: first.output_text }, { role: "user", content: "And again?" }] });
    const byRef = await rendered({ ...next, input: [{ role: "user", content: "Hello!" }, { type: "item_reference", id: first.output[0]!.id }, { role: "user", content: "And again?" }] });
    expect(continued).toBe(whole);
    expect(byRef).toBe(whole);
    expect(whole).not.toContain("You are terse."); // instructions are not carried over
    const second = await client.responses.create({ ...next, previous_response_id: first.id });
    expect(second.previous_response_id).toBe(first.id);
    // a chain: the third turn sees the first two
    expect(await rendered({ ...next, input: "Third", previous_response_id: second.id })).toContain(`${second.output_text}<|im_end|>\n<|im_start|>user\nThird`);

    expect((await client.responses.retrieve(first.id)).output_text).toBe(first.output_text);
    const items = await client.responses.inputItems.list(first.id);
    expect(items.data).toHaveLength(1);
    expect(items.data[0]).toMatchObject({ type: "message", role: "user", id: expect.stringMatching(/^msg_/) });
    expect(await client.responses.delete(first.id)).toEqual({ id: first.id, object: "response", deleted: true });
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.responses.create({ ...next, previous_response_id: first.id })).rejects.toMatchObject({ status: 400, message: expect.stringContaining(`Previous response with id '${first.id}' not found`) });
    // store: false is answered, not kept
    const unstored = await client.responses.create({ model: MODELS.chat, input: "Hello!", store: false, ...sampling });
    expect((unstored as unknown as { store: boolean }).store).toBe(false);
    await expect(client.responses.retrieve(unstored.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe("openai: responses, bad input", () => {
  it("an unknown model is a 404 NotFoundError with OpenAI's error shape", async () => {
    await expect(client.responses.create({ model: "missing", input: "hi" })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const r = await fetch(`${d.url}/v1/responses`, { method: "POST", body: JSON.stringify({ model: "missing", input: "hi", stream: true }) });
    expect(r.status).toBe(404);
    expect(r.headers.get("content-type")).toMatch(/application\/json/);
    expect(await r.json()).toEqual({ error: { message: expect.stringContaining("not found"), type: "not_found_error", param: null, code: null } });
  });

  it("invalid input is a 400 BadRequestError with the reason", async () => {
    await expect(client.responses.create({ model: MODELS.chat, input: [{ type: "bogus" } as never] })).rejects.toMatchObject({
      status: 400,
      type: "invalid_request_error",
      message: expect.stringContaining("Invalid value: 'bogus'"),
    });
    await expect(client.responses.create({ model: MODELS.chat, input: "hi", reasoning: { effort: "extreme" as never } })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    const r = await fetch(`${d.url}/v1/responses`, { method: "POST", body: JSON.stringify({ model: MODELS.chat, input: 42 }) });
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({
      error: {
        message: "Invalid type for 'input': expected one of a string or array of input items, but got an integer instead.",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });
    const malformed = await fetch(`${d.url}/v1/responses`, { method: "POST", body: "{nope" });
    expect(malformed.status).toBe(400);
    // Tools on a model whose template has none: refused before anything is generated.
    await expect(client.responses.create({ model: MODELS.chat, input: "x", tools: [weatherTool] })).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/does not support tools$/),
    });
  });
});
