// /v1/messages without a daemon: the request → native /api/chat body (routes/anthropic/translate.ts)
// and the completion's events → Anthropic's message and its server-sent events (encode.ts).
import { describe, expect, it } from "vitest";
import type { Batches } from "../../src/backends/batches.js";
import { messageEvents, messageResponse, stopReason, type MessageEvent } from "../../src/daemon/routes/anthropic/encode.js";
import { translateMessagesRequest } from "../../src/daemon/routes/anthropic/translate.js";
import type { CompletionEvent } from "../../src/daemon/routes/openai/events.js";
import { done } from "../helpers/completion-events.js";

const base = { model: "m", max_tokens: 10 };

describe("translateMessagesRequest", () => {
  it("system blocks, text, max_tokens, sampling and stop sequences as Ollama's middleware builds them", () => {
    const t = translateMessagesRequest({
      ...base,
      system: [{ type: "text", text: "Be " }, { type: "text", text: "brief." }],
      messages: [{ role: "user", content: [{ type: "text", text: "Hi " }, { type: "text", text: "there" }] }],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      stop_sequences: ["END"],
      stream: true,
    });
    expect(t.stream).toBe(true);
    expect(t.native).toEqual({
      model: "m",
      stream: true,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi there" },
      ],
      options: { num_predict: 10, temperature: 0.2, top_p: 0.9, top_k: 5, stop: ["END"] },
    });
    expect(t.estimatedInputTokens).toBeGreaterThan(0);
  });

  it("tool use and results: the assistant's call with its id, the user's results first as tool messages", () => {
    const t = translateMessagesRequest({
      ...base,
      messages: [
        { role: "user", content: "Weather?" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "I should call it", signature: "x" },
            { type: "text", text: "Let me check." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
          ],
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }] }, { type: "text", text: "And tomorrow?" }] },
      ],
      tools: [
        { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } } } },
        { type: "web_search_20250305", name: "web_search" },
      ],
    });
    expect(t.native.messages).toEqual([
      { role: "user", content: "Weather?" },
      { role: "assistant", content: "Let me check.", thinking: "I should call it", tool_calls: [{ id: "toolu_1", function: { name: "get_weather", arguments: { city: "Paris" } } }] },
      { role: "tool", content: "sunny", tool_call_id: "toolu_1" },
      { role: "user", content: "And tomorrow?" },
    ]);
    // Server tools need Anthropic's servers: only the custom tool is offered to the model.
    expect(t.native.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }]);
    expect(translateMessagesRequest({ ...base, messages: [{ role: "user", content: "x" }], tools: [{ name: "a", input_schema: {} }], tool_choice: { type: "none" } }).native.tools).toBeUndefined();
  });

  it("a system message in the conversation (Claude Code sends them mid-conversation) stays a system message", () => {
    const t = translateMessagesRequest({ ...base, messages: [{ role: "user", content: "hi" }, { role: "system", content: "Agent types: …" }] });
    expect(t.native.messages).toEqual([
      { role: "user", content: "hi" },
      { role: "system", content: "Agent types: …" },
    ]);
  });

  it("Claude Code's thinking: adaptive with output_config.effort high thinks at high", () => {
    const t = translateMessagesRequest({ ...base, messages: [{ role: "user", content: "hi" }], thinking: { type: "adaptive" }, output_config: { effort: "high" }, context_management: { edits: [] } });
    expect(t.native.think).toBe("high");
  });

  it("images as base64; thinking, effort and structured output", () => {
    const img = translateMessagesRequest({ ...base, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "aGVsbG8=" } }, { type: "text", text: "What?" }] }] });
    expect(img.native.messages).toEqual([{ role: "user", content: "What?", images: ["aGVsbG8="] }]);
    const one = (extra: Record<string, unknown>) => translateMessagesRequest({ ...base, messages: [{ role: "user", content: "x" }], ...extra }).native;
    expect(one({ thinking: { type: "enabled", budget_tokens: 100 } }).think).toBe(true);
    expect(one({ thinking: { type: "disabled" } }).think).toBe(false);
    expect(one({ output_config: { effort: "xhigh" } }).think).toBe("high");
    expect(one({ output_config: { effort: "low" } }).think).toBe("low");
    expect(one({}).think).toBeUndefined();
    expect(one({ output_config: { format: { type: "json_schema", schema: { type: "object" } } } }).format).toEqual({ type: "object" });
  });

  it.each([
    [{ messages: [{ role: "user", content: "x" }] }, "max_tokens is required and must be positive"],
    [{ max_tokens: 0, messages: [{ role: "user", content: "x" }] }, "max_tokens is required and must be positive"],
    [{ max_tokens: 5, messages: [] }, "messages is required"],
    [{ model: "", max_tokens: 5, messages: [{ role: "user", content: "x" }] }, "model is required"],
    [{ max_tokens: 5, messages: [{ content: "x" }] }, "Missing required parameter: 'messages[0].role'."],
    [{ max_tokens: 5, messages: [{ role: "user", content: 5 }] }, "Invalid type for 'messages[0].content': expected a string or an array of content blocks, but got an integer instead."],
    [{ max_tokens: 5, messages: [{ role: "assistant", content: [{ type: "tool_use", name: "f", input: {} }] }] }, "tool_use block missing required 'id' field"],
    [{ max_tokens: 5, messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "https://x/y.png" } }] }] }, "invalid image source type: url. Only base64 images are supported."],
    [{ max_tokens: 5, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", data: "not base64!" } }] }] }, "invalid base64 image data"],
    [{ max_tokens: 5, messages: [{ role: "user", content: "x" }], stop_sequences: [1] }, "Invalid type for 'stop_sequences[0]': expected a string, but got an integer instead."],
  ])("refuses %j: %s", (body, message) => {
    expect(() => translateMessagesRequest({ model: "m", ...body })).toThrow(message);
  });
});

async function* batches(...bs: CompletionEvent[][]): Batches<CompletionEvent> {
  for (const b of bs) yield b;
}

async function collect(b: Batches<MessageEvent>): Promise<MessageEvent[]> {
  const out: MessageEvent[] = [];
  for await (const xs of b) out.push(...xs);
  return out;
}

const meta = { id: "msg_1", model: "m", estimatedInputTokens: 4 };

describe("encoding", () => {
  it("stop reasons: a tool call wins, then stop / length / anything else", () => {
    expect(stopReason("stop", true)).toBe("tool_use");
    expect(stopReason("stop", false)).toBe("end_turn");
    expect(stopReason("length", false)).toBe("max_tokens");
    expect(stopReason("unload", false)).toBe("stop_sequence");
  });

  it("a message: thinking, text, then tool_use blocks, usage from the final counts", async () => {
    const m = await messageResponse(
      (async function* () {
        yield* [
          { type: "thinking", text: "hmm" },
          { type: "content", text: "Hi" },
          { type: "tool_calls", calls: [{ id: "call_1", function: { name: "f", arguments: { a: 1 } } }] },
          done("stop"),
        ] as CompletionEvent[];
      })(),
      meta,
    );
    expect(m).toEqual({
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "m",
      content: [
        { type: "thinking", thinking: "hmm", signature: "" },
        { type: "text", text: "Hi" },
        { type: "tool_use", id: "call_1", name: "f", input: { a: 1 } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 7, output_tokens: 3 },
    });
  });

  it("events: blocks opened, grown and closed in order with their indexes; a heartbeat is a ping", async () => {
    const events = await collect(
      messageEvents(
        batches(
          [{ type: "content", text: "" }],
          [{ type: "thinking", text: "a" }, { type: "thinking", text: "b" }],
          [{ type: "content", text: "x" }],
          [{ type: "tool_calls", calls: [{ id: "t1", function: { name: "f", arguments: { k: "v" } } }] }, done("stop")],
        ),
        meta,
      ),
    );
    expect(events.map((e) => [e.type, e.index ?? null])).toEqual([
      ["message_start", null],
      ["ping", null],
      ["content_block_start", 0],
      ["content_block_delta", 0],
      ["content_block_delta", 0],
      ["content_block_stop", 0],
      ["content_block_start", 1],
      ["content_block_delta", 1],
      ["content_block_stop", 1],
      ["content_block_start", 2],
      ["content_block_delta", 2],
      ["content_block_stop", 2],
      ["message_delta", null],
      ["message_stop", null],
    ]);
    expect(events[0]).toMatchObject({ message: { id: "msg_1", content: [], usage: { input_tokens: 4, output_tokens: 0 } } });
    expect(events[2]).toMatchObject({ content_block: { type: "thinking", thinking: "" } });
    expect(events[6]).toMatchObject({ content_block: { type: "text", text: "" } });
    expect(events[9]).toMatchObject({ content_block: { type: "tool_use", id: "t1", name: "f", input: {} } });
    expect(events[10]).toMatchObject({ delta: { type: "input_json_delta", partial_json: '{"k":"v"}' } });
    expect(events[12]).toMatchObject({ delta: { stop_reason: "tool_use" }, usage: { input_tokens: 7, output_tokens: 3 } });
  });

  it("an answer that ends without text still closes the message; one cut short is an error", async () => {
    const events = await collect(messageEvents(batches([done("length")]), meta));
    expect(events.map((e) => e.type)).toEqual(["message_start", "message_delta", "message_stop"]);
    await expect(collect(messageEvents(batches([{ type: "content", text: "x" }]), meta))).rejects.toThrow("generation ended without a final response");
  });
});
