// Rendering of tools, tool calls/results and think flags through real registry templates
// (expected texts derived by hand from Go's template semantics).
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { renderPrompt, selectTemplate, type RenderMessage } from "../../src/daemon/prompt/render.js";

const FIXTURES = path.resolve(__dirname, "../fixtures/templates");
const tmpl = (name: string) => selectTemplate(readFileSync(path.join(FIXTURES, `${name}.gotmpl`), "utf8"), undefined, "", "");

const tools = [
  {
    type: "function",
    function: { name: "get_weather", description: "Weather", parameters: { type: "object", required: ["city"], properties: { city: { type: "string", description: "City" } } } },
  },
];
// An assistant tool call with OpenAI-style string arguments, then the result by tool_name.
const conversation: RenderMessage[] = [
  { role: "user", content: "Weather in Paris?" },
  { role: "assistant", content: "", tool_calls: [{ id: "call_abc12345", function: { index: 0, name: "get_weather", arguments: '{"city":"Paris"}' } }] },
  { role: "tool", content: "18C", tool_name: "get_weather" },
];
const TOOL_JSON = '{"type": "function", "function": {"name":"get_weather","description":"Weather","parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string","description":"City"}}}}}';
const QWEN_TOOLS_HEADER =
  "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
  TOOL_JSON +
  '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n';
const QWEN_TURNS =
  '<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call><|im_end|>\n' +
  "<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>\n<|im_start|>assistant\n";

describe("tools in templates", () => {
  it("qwen2.5: tool signatures, the call (string arguments become an object) and the result", () => {
    expect(renderPrompt(tmpl("qwen2.5"), { messages: conversation, tools })).toBe("<|im_start|>system\n\n" + QWEN_TOOLS_HEADER + QWEN_TURNS);
  });
  it("qwen3: the same with its own system header", () => {
    expect(renderPrompt(tmpl("qwen3"), { messages: conversation, tools })).toBe("<|im_start|>system\n\n\n" + QWEN_TOOLS_HEADER + QWEN_TURNS);
  });
  it("llama3.2: calls as {name, parameters}, results as ipython", () => {
    expect(renderPrompt(tmpl("llama3.2"), { messages: conversation, tools })).toBe(
      "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n\n" +
        "When you receive a tool call response, use the output to format an answer to the orginal user question.\n\nYou are a helpful assistant with tool calling capabilities.<|eot_id|>" +
        "<|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>" +
        '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": {"city":"Paris"}}<|eot_id|>' +
        "<|start_header_id|>ipython<|end_header_id|>\n\n18C<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    );
  });
  it("mistral: [AVAILABLE_TOOLS] before the last user turn, [TOOL_CALLS] and [TOOL_RESULTS]", () => {
    expect(renderPrompt(tmpl("mistral"), { messages: [{ role: "user", content: "Hi" }], tools })).toBe(
      `[AVAILABLE_TOOLS] [${TOOL_JSON.replace('{"type": "function", "function": ', '{"type":"function","function":').replace(/}$/, "")}}][/AVAILABLE_TOOLS][INST] Hi[/INST]`,
    );
    expect(renderPrompt(tmpl("mistral"), { messages: conversation, tools })).toBe(
      '[INST] Weather in Paris?[/INST][TOOL_CALLS] [{"name": "get_weather", "arguments": {"city":"Paris"}}]</s>[TOOL_RESULTS] {"content": 18C} [/TOOL_RESULTS]',
    );
  });
});

describe("think flags in templates", () => {
  it("qwen3: think true/false appends /think or /no_think; false pre-fills an empty think block", () => {
    const user: RenderMessage[] = [{ role: "user", content: "hi" }];
    expect(renderPrompt(tmpl("qwen3"), { messages: user, think: true, thinkLevel: "medium", isThinkSet: true })).toBe(
      "<|im_start|>user\nhi /think<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(renderPrompt(tmpl("qwen3"), { messages: user, think: false, isThinkSet: true })).toBe(
      "<|im_start|>user\nhi /no_think<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    );
    expect(renderPrompt(tmpl("qwen3"), { messages: user })).toBe("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  });
  it("deepseek-r1: the last assistant message's thinking is rendered when think is set", () => {
    const msgs: RenderMessage[] = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "yo", thinking: "hmm" },
    ];
    expect(renderPrompt(tmpl("deepseek-r1"), { messages: msgs, think: true, isThinkSet: true })).toBe("<｜User｜>hi<｜Assistant｜><think>\nhmm\n</think>yo");
    expect(renderPrompt(tmpl("deepseek-r1"), { messages: msgs })).toBe("<｜User｜>hi<｜Assistant｜>yo");
  });
});

describe("the GGUF Jinja path", () => {
  const jinja = selectTemplate(
    undefined,
    "{% for m in messages %}<{{ m.role }}{% if m.name %}:{{ m.name }}{% endif %}>{{ m.content }}" +
      "{% if m.tool_calls %}{% for c in m.tool_calls %}{{ c.type }}:{{ c.function.name }}{{ c.function.arguments | tojson }}{% endfor %}{% endif %}" +
      "{% if m.reasoning_content %}[r:{{ m.reasoning_content }}]{% endif %}{% endfor %}" +
      "{% if tools %}T{{ tools | length }}{% endif %}{% if enable_thinking is defined %}E{{ enable_thinking }}{% endif %}{% if reasoning_effort %}/{{ reasoning_effort }}{% endif %}" +
      "{% if add_generation_prompt %}<assistant>{% endif %}",
    "<s>",
    "</s>",
  );
  // `{{ enable_thinking }}` prints Python's True, as transformers renders it.
  it("gets OpenAI-shaped messages (object arguments, tool names), tools and the think flags", () => {
    expect(renderPrompt(jinja, { messages: conversation, tools, think: true, thinkLevel: "high", isThinkSet: true })).toBe(
      '<user>Weather in Paris?<assistant>function:get_weather{"city": "Paris"}<tool:get_weather>18CT1ETrue/high<assistant>',
    );
    expect(renderPrompt(jinja, { messages: [{ role: "assistant", content: "a", thinking: "t" }] })).toBe("<assistant>a[r:t]");
    expect(renderPrompt(jinja, { messages: [{ role: "user", content: "u" }], think: false, isThinkSet: true })).toBe("<user>uEFalse<assistant>");
  });
});
