// Conversations adapted to what a chat template can render (jinja-polyfills.ts), and the 400 a
// template's own refusal becomes.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ALL_CAPABILITIES } from "../../src/daemon/prompt/jinja-capabilities.js";
import { polyfillMessages, type JinjaMessage } from "../../src/daemon/prompt/jinja-polyfills.js";
import { renderPrompt, selectTemplate } from "../../src/daemon/prompt/render.js";

const call = (id?: string) => ({ ...(id ? { id } : {}), type: "function", function: { name: "f", arguments: { a: 1 } } });
const conversation: JinjaMessage[] = [
  { role: "system", content: "S" },
  { role: "user", content: "U" },
  { role: "assistant", content: "", tool_calls: [call("call_abc"), call()] },
  { role: "tool", content: "R1", tool_call_id: "call_abc" },
  { role: "tool", content: "R2" },
  { role: "assistant", content: "", tool_calls: [call("call_abc"), call("abcdefgh9")] },
];

describe("polyfillMessages", () => {
  it("leaves a conversation the template renders untouched (same array)", () => {
    expect(polyfillMessages(conversation, ALL_CAPABILITIES)).toBe(conversation);
  });
  it("maps ids to 9 alphanumerics consistently, keeps well-formed ones, answers id-less results in order", () => {
    const out = polyfillMessages(conversation, { ...ALL_CAPABILITIES, anyToolCallIds: false });
    expect(out[2]!.tool_calls!.map((c) => c.id)).toEqual(["call00001", "call00002"]);
    expect([out[3]!.tool_call_id, out[4]!.tool_call_id]).toEqual(["call00001", "call00002"]);
    expect(out[5]!.tool_calls!.map((c) => c.id)).toEqual(["call00001", "abcdefgh9"]);
    expect(conversation[2]!.tool_calls![0]!.id).toBe("call_abc"); // the caller's messages are not changed
  });
  it("gives arguments as a JSON string to a template that shows only strings", () => {
    const out = polyfillMessages(conversation, { ...ALL_CAPABILITIES, objectArguments: false });
    expect(out[2]!.tool_calls![0]!.function.arguments).toBe('{"a":1}');
  });
  it("splits parallel calls into one call a turn, each followed by its result (by id, else in order), for a template that takes one at a time", () => {
    const out = polyfillMessages(
      [
        { role: "user", content: "U" },
        { role: "assistant", content: "Checking both.", tool_calls: [call("c1"), call("c2"), call()] },
        { role: "tool", content: "R2", tool_call_id: "c2" },
        { role: "tool", content: "R1", tool_call_id: "c1" },
        { role: "tool", content: "R3" },
        { role: "assistant", content: "", tool_calls: [call("c4"), call("c5")] },
      ],
      { ...ALL_CAPABILITIES, parallelToolCalls: false },
    );
    expect(out.map((m) => [m.role, m.content, m.tool_calls?.map((c) => c.id ?? "-").join(",") ?? m.tool_call_id ?? ""])).toEqual([
      ["user", "U", ""],
      ["assistant", "Checking both.", "c1"],
      ["tool", "R1", "c1"],
      ["assistant", "", "c2"],
      ["tool", "R2", "c2"],
      ["assistant", "", "-"],
      ["tool", "R3", ""],
      // calls not answered yet: one a turn, in a row
      ["assistant", "", "c4"],
      ["assistant", "", "c5"],
    ]);
  });

  it("joins a calling message's text to its thinking for a template that takes one or the other; a split message's thinking stays with its first call", () => {
    const m: JinjaMessage = { role: "assistant", content: "Checking.", thinking: "Two cities.", reasoning_content: "Two cities.", tool_calls: [call("c1"), call("c2")] };
    const out = polyfillMessages([{ role: "user", content: "U" }, m], { ...ALL_CAPABILITIES, callTextAndThinking: false, parallelToolCalls: false });
    expect(out.slice(1).map((x) => [x.content, x.thinking, x.reasoning_content])).toEqual([
      ["", "Two cities.\n\nChecking.", "Two cities.\n\nChecking."],
      ["", undefined, undefined],
    ]);
  });

  it("gpt-oss: a message as Ollama answers it (text, thinking and two calls) and its results render, both calls shown, each as harmony writes a call", () => {
    const t = selectTemplate(undefined, readFileSync(path.resolve(__dirname, "../fixtures/chat-templates/openai-gpt-oss-120b.jinja"), "utf8"), "", "");
    const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const weather = (id: string, city: string) => ({ id, function: { name: "get_weather", arguments: { city } } });
    const out = renderPrompt(t, {
      tools,
      messages: [
        { role: "user", content: "Weather in Paris and Lyon?" },
        { role: "assistant", content: "Let me check both.", thinking: "Two cities, two calls.", tool_calls: [weather("c1", "Paris"), weather("c2", "Lyon")] },
        { role: "tool", content: "18C", tool_name: "get_weather", tool_call_id: "c1" },
        { role: "tool", content: "21C", tool_name: "get_weather", tool_call_id: "c2" },
      ],
      think: true,
      isThinkSet: true,
      thinkLevel: "medium",
    });
    expect(out).toContain('<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"18C"<|end|>');
    expect(out).toContain('<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Lyon"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"21C"<|end|>');
    expect(out.split("Two cities, two calls.")).toHaveLength(2);
  });

  it("joins opening system messages and folds later ones into the next user message, for a template that takes one system message, first", () => {
    const out = polyfillMessages(
      [
        { role: "system", content: "A" },
        { role: "system", content: "B" },
        { role: "user", content: "U" },
        { role: "assistant", content: "ok" },
        { role: "system", content: "Be brief." },
        { role: "user", content: "U2" },
      ],
      { ...ALL_CAPABILITIES, laterSystem: false },
    );
    expect(out.map((m) => `${m.role}: ${m.content}`)).toEqual(["system: A\n\nB", "user: U", "assistant: ok", "user: Be brief.\n\nU2"]);
  });

  it("puts an empty user turn before the assistant's opening greeting, for a template that must open with the user", () => {
    const out = polyfillMessages([{ role: "system", content: "S" }, { role: "assistant", content: "Hi! How can I help?" }, { role: "user", content: "U" }], { ...ALL_CAPABILITIES, assistantFirst: false });
    expect(out.map((m) => `${m.role}: ${m.content}`)).toEqual(["system: S", "user: ", "assistant: Hi! How can I help?", "user: U"]);
  });

  it("an empty answer goes between tool results and the next user message, for a template that wants the model's answer there; an empty answer is a space where empty is refused", () => {
    const messages: JinjaMessage[] = [
      { role: "user", content: "U" },
      { role: "assistant", content: "", tool_calls: [call("c1")] },
      { role: "tool", content: "R1", tool_call_id: "c1" },
      { role: "user", content: "U2" },
      { role: "assistant", content: "" },
      { role: "user", content: "U3" },
    ];
    const out = polyfillMessages(messages, { ...ALL_CAPABILITIES, userAfterTool: false });
    expect(out.map((m) => `${m.role}: ${m.content}`)).toEqual(["user: U", "assistant: ", "tool: R1", "assistant: ", "user: U2", "assistant: ", "user: U3"]);
    const spaced = polyfillMessages(messages, { ...ALL_CAPABILITIES, userAfterTool: false, emptyAssistant: false });
    expect(spaced.map((m) => m.content)).toEqual(["U", "", "R1", " ", "U2", " ", "U3"]); // a call keeps its empty text
    // a tool result that answers no call is left as it is
    expect(polyfillMessages([{ role: "tool", content: "R" }, { role: "user", content: "U" }], { ...ALL_CAPABILITIES, userAfterTool: false }).map((m) => m.role)).toEqual(["tool", "user"]);
  });

  it("real templates that refused them render these conversations: Qwen3.5 two system messages or a system prompt alone, Gemma 2 and Mistral a greeting first", () => {
    const load = (f: string) => selectTemplate(undefined, readFileSync(path.resolve(__dirname, "../fixtures/chat-templates", f), "utf8"), "<s>", "</s>");
    const systems = [{ role: "system", content: "You are terse." }, { role: "system", content: "Answer in French." }, { role: "user", content: "hi" }];
    expect(renderPrompt(load("Qwen3.5-4B.jinja"), { messages: systems })).toContain("You are terse.\n\nAnswer in French.");
    const greeting = [{ role: "assistant", content: "Hi! How can I help?" }, { role: "user", content: "hi" }];
    for (const f of ["google-gemma-2-2b-it.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja"]) expect(renderPrompt(load(f), { messages: greeting }), f).toContain("Hi! How can I help?");
    // Mistral's: a question right after a tool's result; Ministral 3's: an empty answer too
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { a: { type: "integer" } } } } }];
    const afterTool = [
      { role: "user", content: "q" },
      { role: "assistant", content: "", tool_calls: [{ id: "abcdefgh1", function: { name: "f", arguments: { a: 1 } } }] },
      { role: "tool", content: "r", tool_name: "f", tool_call_id: "abcdefgh1" },
      { role: "user", content: "and then?" },
    ];
    for (const f of ["mistralai-Mistral-Nemo-Instruct-2407.jinja", "Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistralai-Ministral-3-14B-Reasoning-2512.jinja"]) {
      expect(renderPrompt(load(f), { messages: afterTool, tools }), f).toMatch(/\[\/TOOL_RESULTS\] ?<\/s>.*\[INST\]and then\?\[\/INST\]$/s);
    }
    // Qwen3.5's: a system prompt alone ("No user query found in messages") gets an empty question
    expect(renderPrompt(load("Qwen3.5-4B.jinja"), { messages: [{ role: "system", content: "Write a haiku." }] })).toBe(
      "<|im_start|>system\nWrite a haiku.<|im_end|>\n<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<think>\n",
    );
  });

  it("folds system text into the next user message, tool results into user messages, and joins runs", () => {
    const out = polyfillMessages(conversation, { ...ALL_CAPABILITIES, systemRole: false, toolRole: false, consecutiveRoles: false });
    expect(out.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(out[0]!.content).toBe("S\n\nU");
    expect(JSON.parse(out[2]!.content.split("\n\n")[0]!)).toEqual({ tool_response: { tool_call_id: "call_abc", content: "R1" } });
  });
});

describe("a template's refusal", () => {
  it("is a 400 quoting what the template raised", () => {
    const t = selectTemplate(undefined, "{{ raise_exception('Only user messages, please') }}", "", "");
    expect(() => renderPrompt(t, { messages: [{ role: "user", content: "hi" }] })).toThrow(
      expect.objectContaining({ status: 400, message: "template error: the model's chat template refused the conversation: Only user messages, please" }),
    );
  });
});
