// Registry TEMPLATE layers rendered through Ollama's template semantics with a realistic chat
// (system, tools, a tool call, a tool result). Expected strings derived by hand from Go's
// text/template rules. Template files are byte-exact copies of the registry blobs (see README).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OllamaTemplate, type ApiMessage, type ApiTool, type OllamaValues } from "../../src/template/ollama.js";

const dir = join(import.meta.dirname, "../fixtures/templates");
const load = (name: string): OllamaTemplate => OllamaTemplate.parse(readFileSync(join(dir, name), "utf8"));

const tools: ApiTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Get the current weather",
      parameters: {
        type: "object",
        required: ["city"],
        properties: {
          city: { type: "string", description: "City name" },
          unit: { type: "string", description: "Temperature unit", enum: ["celsius", "fahrenheit"] },
        },
      },
    },
  },
];

const PARAMS =
  '{"type":"object","required":["city"],"properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","description":"Temperature unit","enum":["celsius","fahrenheit"]}}}';
const FUNC = `{"name":"get_weather","description":"Get the current weather","parameters":${PARAMS}}`;
const TOOL = `{"type":"function","function":${FUNC}}`;
const ARGS = '{"city":"Paris","unit":"celsius"}';

const SYSTEM = "You are a helpful assistant.";
const toolChat: ApiMessage[] = [
  { role: "system", content: SYSTEM },
  { role: "user", content: "What is the weather in Paris?" },
  { role: "assistant", content: "", tool_calls: [{ function: { index: 0, name: "get_weather", arguments: { unit: "celsius", city: "Paris" } } }] },
  { role: "tool", content: '{"temp": 22}', tool_name: "get_weather" },
];
const askWithTools: ApiMessage[] = [
  { role: "system", content: SYSTEM },
  { role: "user", content: "Hi" },
  { role: "assistant", content: "Hello! How can I help?" },
  { role: "user", content: "What is the weather in Paris?" },
];

const LLAMA_SYSTEM =
  "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n\n" +
  "You are a helpful assistant.When you receive a tool call response, use the output to format an answer to the orginal user question.\n\n" +
  "You are a helpful assistant with tool calling capabilities.<|eot_id|>";

describe("llama3.2 (registry 966de95ca8a6)", () => {
  const t = load("llama3.2.gotmpl");
  it("detects capabilities", () => {
    expect(t.vars()).toContain("tools");
    expect(t.vars()).toContain("messages");
    expect(t.template.references(".ToolCalls")).toBe(true);
  });
  it("tool call and tool result", () => {
    expect(t.execute({ messages: toolChat, tools })).toBe(
      LLAMA_SYSTEM +
        "<|start_header_id|>user<|end_header_id|>\n\nWhat is the weather in Paris?<|eot_id|>" +
        `<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "get_weather", "parameters": ${ARGS}}<|eot_id|>` +
        '<|start_header_id|>ipython<|end_header_id|>\n\n{"temp": 22}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });
  it("tools injected into the last user turn", () => {
    expect(t.execute({ messages: [toolChat[0]!, toolChat[1]!], tools })).toBe(
      LLAMA_SYSTEM +
        "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
        'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.\n\n' +
        `${TOOL}\n\nWhat is the weather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n`,
    );
  });
  it("no system, no tools", () => {
    expect(t.execute({ messages: [{ role: "user", content: "Hi" }] })).toBe(
      "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n\n<|eot_id|>" +
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    );
  });
});

describe("mistral v0.3 (registry 1ff5b64b61b9)", () => {
  const t = load("mistral.gotmpl");
  it("[AVAILABLE_TOOLS] before the last user turn, system with it", () => {
    expect(t.execute({ messages: askWithTools, tools })).toBe(
      `[INST] Hi[/INST]Hello! How can I help?</s>[AVAILABLE_TOOLS] [${TOOL}][/AVAILABLE_TOOLS]` +
        "[INST] You are a helpful assistant.\n\nWhat is the weather in Paris?[/INST]",
    );
  });
  it("[TOOL_CALLS] and [TOOL_RESULTS]", () => {
    expect(t.execute({ messages: toolChat, tools })).toBe(
      `[INST] What is the weather in Paris?[/INST][TOOL_CALLS] [{"name": "get_weather", "arguments": ${ARGS}}]</s>` +
        '[TOOL_RESULTS] {"content": {"temp": 22}} [/TOOL_RESULTS]',
    );
  });
});

describe("qwen2.5 (registry eb4402837c78)", () => {
  const t = load("qwen2.5.gotmpl");
  it("tools in the system turn, <tool_call>, <tool_response>", () => {
    expect(t.execute({ messages: toolChat, tools })).toBe(
      "<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
        `{"type": "function", "function": ${FUNC}}\n</tools>\n\n` +
        "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n" +
        `<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": ${ARGS}}\n</tool_call><|im_end|>\n` +
        '<|im_start|>user\n<tool_response>\n{"temp": 22}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });
  it("fill-in-middle data has no .Messages: the legacy branch renders", () => {
    expect(t.execute({ prompt: "def add(", suffix: "return x" })).toBe("<|im_start|>user\ndef add(<|im_end|>\n<|im_start|>assistant\n");
  });
});

describe("qwen3 (think)", () => {
  const t = load("qwen3.gotmpl");
  const chat: ApiMessage[] = [
    { role: "user", content: "What is 2+2?" },
    { role: "assistant", thinking: "2+2 is 4.", content: "4" },
    { role: "user", content: "And 3+3?" },
  ];
  it("think on: /think on the last user turn, old thinking dropped", () => {
    expect(t.execute({ messages: chat, isThinkSet: true, think: true })).toBe(
      "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n" +
        "<|im_start|>user\nAnd 3+3? /think<|im_end|>\n<|im_start|>assistant\n",
    );
  });
  it("think off: /no_think and an empty think block", () => {
    const v: OllamaValues = { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }], isThinkSet: true, think: false };
    expect(t.execute(v)).toBe(
      "<|im_start|>system\n\nBe brief.<|im_end|>\n<|im_start|>user\nHi /no_think<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    );
  });
  it("think unset: no markers", () => {
    expect(t.execute({ messages: [{ role: "user", content: "Hi" }] })).toBe("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  });
  it("thinking after the last user turn is kept", () => {
    const v: OllamaValues = {
      messages: [...toolChat.slice(1, 3).map((m) => ({ ...m, thinking: m.role === "assistant" ? "Need weather." : undefined })), toolChat[3]!],
      tools,
      isThinkSet: true,
      think: true,
    };
    expect(t.execute(v)).toBe(
      "<|im_start|>system\n\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
        `{"type": "function", "function": ${FUNC}}\n</tools>\n\n` +
        "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\nWhat is the weather in Paris? /think<|im_end|>\n" +
        `<|im_start|>assistant\n<think>Need weather.</think>\n<tool_call>\n{"name": "get_weather", "arguments": ${ARGS}}\n</tool_call><|im_end|>\n` +
        '<|im_start|>user\n<tool_response>\n{"temp": 22}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
  });
});

describe("deepseek-r1 (registry, sha256 c5ad996b)", () => {
  const t = load("deepseek-r1.gotmpl");
  const chat: ApiMessage[] = [
    { role: "user", content: "What is 2+2?" },
    { role: "assistant", thinking: "simple", content: "4" },
    { role: "user", content: "And 3+3?" },
  ];
  it("multi-turn", () => {
    expect(t.execute({ messages: chat, isThinkSet: true, think: true })).toBe(
      "<｜User｜>What is 2+2?<｜Assistant｜>4<｜end▁of▁sentence｜><｜User｜>And 3+3?<｜Assistant｜>",
    );
  });
  it("think off adds an empty think block", () => {
    expect(t.execute({ messages: chat, isThinkSet: true, think: false })).toBe(
      "<｜User｜>What is 2+2?<｜Assistant｜>4<｜end▁of▁sentence｜><｜User｜>And 3+3?<｜Assistant｜><think>\n\n</think>\n\n",
    );
  });
  it("assistant prefill with thinking", () => {
    const v: OllamaValues = { messages: [{ role: "user", content: "Hi" }, { role: "assistant", thinking: "Greet.", content: "Hel" }], isThinkSet: true, think: true };
    expect(t.execute(v)).toBe("<｜User｜>Hi<｜Assistant｜><think>\nGreet.\n</think>Hel");
  });
  it("system prompt first", () => {
    expect(t.execute({ messages: [{ role: "system", content: SYSTEM }, { role: "user", content: "Hi" }] })).toBe(
      "You are a helpful assistant.<｜User｜>Hi<｜Assistant｜>",
    );
  });
});

describe("gemma3 (registry e0a42594d802)", () => {
  const t = load("gemma3.gotmpl");
  it("system as a user turn, assistant as model", () => {
    expect(t.execute({ messages: askWithTools.map((m, i) => (i === 3 ? { ...m, content: "Bye" } : m)) })).toBe(
      "<start_of_turn>user\nYou are a helpful assistant.<end_of_turn>\n<start_of_turn>user\nHi<end_of_turn>\n" +
        "<start_of_turn>model\nHello! How can I help?<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n",
    );
  });
  it("consecutive user messages are collated", () => {
    expect(t.execute({ messages: [{ role: "user", content: "A" }, { role: "user", content: "B" }] })).toBe(
      "<start_of_turn>user\nA\n\nB<end_of_turn>\n<start_of_turn>model\n",
    );
  });
});

describe("legacy templates (.System/.Prompt/.Response)", () => {
  const history: ApiMessage[] = [
    { role: "system", content: "Be nice." },
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello!" },
    { role: "user", content: "Bye" },
  ];
  it("gemma2 (registry 109037bec39c): one execution per turn, last one cut after .Response", () => {
    expect(load("gemma2.gotmpl").execute({ messages: history })).toBe(
      "<start_of_turn>user\nBe nice. Hi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n" +
        "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n",
    );
  });
  it("llama2 (registry 2e0493f67d0c): {{ .Response }} is appended", () => {
    const t = load("llama2.gotmpl");
    expect(t.vars()).toEqual(["prompt", "response", "system"]);
    expect(t.execute({ messages: history })).toBe(
      "[INST] <<SYS>>Be nice.<</SYS>>\n\nHi [/INST]\nHello![INST] <<SYS>><</SYS>>\n\nBye [/INST]\n",
    );
  });
  it("trailing assistant message is a prefill", () => {
    expect(load("llama2.gotmpl").execute({ messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hel" }] })).toBe(
      "[INST] <<SYS>><</SYS>>\n\nHi [/INST]\nHel",
    );
  });
});

describe("phi-3 and chatml (ollama template/)", () => {
  it("phi-3", () => {
    expect(load("ollama-repo/phi-3.gotmpl").execute({ messages: toolChat, tools })).toBe(
      "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nWhat is the weather in Paris?<|end|>\n" +
        '<|assistant|>\n<|end|>\n<|tool|>\n{"temp": 22}<|end|>\n<|assistant|>\n',
    );
  });
  it("chatml", () => {
    expect(load("ollama-repo/chatml.gotmpl").execute({ messages: toolChat })).toBe(
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n" +
        '<|im_start|>assistant\n<|im_end|>\n<|im_start|>tool\n{"temp": 22}<|im_end|>\n<|im_start|>assistant\n',
    );
  });
});

describe("legacy .Response cut quirks (as in Ollama)", () => {
  it("branch pipelines don't trigger the cut; everything after the first .Response field goes", () => {
    const t = OllamaTemplate.parse("{{ if .Response }}R{{ end }}{{ .Prompt }}|{{ .Response }}|END");
    expect(t.execute({ messages: [{ role: "user", content: "hi" }] })).toBe("hi|");
  });
  it("the final turn runs without Ollama's funcs", () => {
    const t = OllamaTemplate.parse("{{ json .Prompt }}{{ .Response }}");
    expect(() => t.execute({ messages: [{ role: "user", content: "hi" }] })).toThrow(
      'template: :1:3: executing "" at <json>: "json" is not a defined function',
    );
  });
});
