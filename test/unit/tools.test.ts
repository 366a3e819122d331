import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/api/types.js";
import { OllamaTemplate } from "../../src/template/ollama.js";
import { selectTemplate } from "../../src/daemon/prompt/render.js";
import { toolDialect } from "../../src/daemon/prompt/tool-dialect.js";
import {
  ToolCallParser,
  ToolValidationError,
  parsePythonCalls,
  toolCallId,
  toolCallTagFromTree,
  validateTools,
} from "../../src/daemon/prompt/tools.js";

const FIXTURES = path.resolve(__dirname, "../fixtures/templates");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, `${name}.gotmpl`), "utf8");
const tagOf = (src: string) => toolCallTagFromTree(OllamaTemplate.parse(src).template.root);

const TOOLS = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } },
  { type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } },
];

/** Streams `text` in pieces of `size` characters; returns the joined content and every call. */
function parse(tag: string, text: string, size: number) {
  const p = new ToolCallParser(tag, TOOLS);
  let content = "";
  const calls: ToolCall[] = [];
  const chunksWithCalls: number[] = [];
  let i = 0;
  for (let k = 0; k < text.length; k += size, i++) {
    const s = p.add(text.slice(k, k + size));
    content += s.content;
    if (s.calls.length > 0) chunksWithCalls.push(i);
    calls.push(...s.calls);
  }
  const f = p.flush();
  content += f.content;
  calls.push(...f.calls);
  return { content, calls, chunksWithCalls };
}
const fns = (calls: ToolCall[]) => calls.map((c) => c.function);

describe("tool-call tag inferred from templates (tools/template.go)", () => {
  it("reads the first text of the {{ if .ToolCalls }} block", () => {
    expect(tagOf(fixture("qwen2.5"))).toBe("<tool_call>");
    expect(tagOf(fixture("qwen3"))).toBe("<tool_call>");
    expect(tagOf(fixture("mistral"))).toBe("[TOOL_CALLS] [");
    expect(tagOf(fixture("llama3.2"))).toBe("{"); // JSON right after the header
    expect(tagOf(fixture("gemma3"))).toBe("{"); // no .ToolCalls at all
  });
  it("a Jinja template that shows no calls is read by its text", () => {
    expect(toolDialect(selectTemplate(undefined, "{% if tools %}<tool_call>{% endif %}", "", ""))).toEqual({ kind: "json", tag: "<tool_call>" });
    expect(toolDialect(selectTemplate(undefined, "{{ m }}", "", ""))).toEqual({ kind: "json", tag: "{" });
  });
});

describe("ToolCallParser on realistic outputs", () => {
  const qwen = 'Let me check.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
  it("qwen2.5/qwen3 <tool_call> tags, at every split point", () => {
    for (const size of [1, 2, 3, 7, 1000]) {
      const r = parse("<tool_call>", qwen, size);
      expect(r.content).toBe("Let me check.");
      expect(fns(r.calls)).toEqual([{ index: 0, name: "get_weather", arguments: { city: "Paris" } }]);
    }
  });
  it("emits each call in the chunk where it completes, with ids call_ + 8 [a-z0-9] and increasing index", () => {
    const two = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>';
    const r = parse("<tool_call>", two, 5);
    expect(fns(r.calls)).toEqual([
      { index: 0, name: "get_weather", arguments: { city: "Oslo" } },
      { index: 1, name: "get_time", arguments: {} },
    ]);
    expect(r.chunksWithCalls.length).toBe(2);
    for (const c of r.calls) expect(c.id).toMatch(/^call_[a-z0-9]{8}$/);
    expect(r.content).toBe("");
  });
  it("Llama 3.x JSON with parameters (tag {) and arguments given as a JSON string", () => {
    const r = parse("{", '{"name": "get_weather", "parameters": {"city": "Rome"}}', 3);
    expect(fns(r.calls)).toEqual([{ index: 0, name: "get_weather", arguments: { city: "Rome" } }]);
    const s = parse("{", '  {"name":"get_weather","arguments":"{\\"city\\": \\"Bern\\"}"}', 1);
    expect(fns(s.calls)).toEqual([{ index: 0, name: "get_weather", arguments: { city: "Bern" } }]);
    expect(s.content).toBe("  ");
  });
  it("Llama 3.x python-style lists of calls", () => {
    const r = parse("{", '[get_weather(city="San Francisco"), get_time()]', 2);
    expect(fns(r.calls)).toEqual([
      { index: 0, name: "get_weather", arguments: { city: "San Francisco" } },
      { index: 1, name: "get_time", arguments: {} },
    ]);
    expect(r.content).toBe("");
    expect(parsePythonCalls("[get_weather(city='Paris', days=3, metric=True, extra=None, tags=['a', \"b\"])]", new Set(["get_weather"]))).toEqual([
      { name: "get_weather", arguments: { city: "Paris", days: 3, metric: true, extra: null, tags: ["a", "b"] } },
    ]);
    expect(parsePythonCalls("[unknown(x=1)]", new Set(["get_weather"]))).toBeNull();
  });
  it("a long call whose arguments hold braces, brackets, quotes and escapes comes out whole at every split", () => {
    const code = Array.from({ length: 300 }, (_, i) => `function f${i}() { return "}{\\"" + [${i}] + '}'; }\n`).join("");
    const text = `<tool_call>\n${JSON.stringify({ name: "get_weather", arguments: { city: code } })}\n</tool_call>`;
    for (const size of [1, 3, 64, text.length]) {
      const r = parse("<tool_call>", text, size);
      expect(fns(r.calls)).toEqual([{ index: 0, name: "get_weather", arguments: { city: code } }]);
      expect(r.chunksWithCalls).toEqual([Math.floor((text.lastIndexOf("}") ) / size)]);
      expect(r.content).toBe("");
    }
    const list = `[get_weather(city="a ] b ) c \\" d"), get_time()]`;
    const p = parse("{", list, 1);
    expect(fns(p.calls)).toEqual([
      { index: 0, name: "get_weather", arguments: { city: 'a ] b ) c " d' } },
      { index: 1, name: "get_time", arguments: {} },
    ]);
  });
  it("a JSON list of calls", () => {
    const r = parse("{", '[{"name": "get_weather", "arguments": {"city": "Lima"}}, {"name": "get_time", "arguments": {}}]', 4);
    expect(fns(r.calls).map((f) => f.name)).toEqual(["get_weather", "get_time"]);
  });
  it("Mistral [TOOL_CALLS] (the template's tag matches on its first word)", () => {
    for (const out of ['[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Nice"}}]', '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Nice"}}]']) {
      const r = parse("[TOOL_CALLS] [", out, 3);
      expect(fns(r.calls)).toEqual([{ index: 0, name: "get_weather", arguments: { city: "Nice" } }]);
      expect(r.content).toBe("");
    }
  });
  it("OpenAI-shaped calls nested in an object, and {\"<tool>\": {args}}", () => {
    expect(fns(parse("{", '{"type":"function","function":{"name":"get_time","arguments":{}}}', 1).calls)).toEqual([{ index: 0, name: "get_time", arguments: {} }]);
    expect(fns(parse("{", '{"get_weather": {"city": "Kyiv"}}', 1).calls)).toEqual([{ index: 0, name: "get_weather", arguments: { city: "Kyiv" } }]);
  });
  it("plain text and non-call JSON stay content (tag {)", () => {
    expect(parse("{", "The weather is fine. {not json}", 1)).toMatchObject({ content: "The weather is fine. {not json}", calls: [] });
    expect(parse("{", '{"answer": 42} and more', 1)).toMatchObject({ content: '{"answer": 42} and more', calls: [] });
    expect(parse("{", "[1] is a citation", 1)).toMatchObject({ content: "[1] is a citation", calls: [] });
    expect(parse("{", "[get_weather is a tool]", 1)).toMatchObject({ content: "[get_weather is a tool]", calls: [] });
  });
  it("text before a real tag is content; a call to an unknown tool is given back as content", () => {
    const r = parse("<tool_call>", 'Hmm <tool_call>{"name": "nope", "arguments": {}}</tool_call>', 2);
    expect(r.calls).toEqual([]);
    expect(r.content).toBe('Hmm <tool_call>{"name": "nope", "arguments": {}}</tool_call>');
  });
  it("an unfinished call (num_predict hit) is given back as content", () => {
    const r = parse("<tool_call>", '<tool_call>{"name": "get_weather", "argu', 3);
    expect(r.calls).toEqual([]);
    expect(r.content).toBe('<tool_call>{"name": "get_weather", "argu');
  });
  it("a partial tag at the end of the output is content", () => {
    expect(parse("<tool_call>", "Done <tool_", 1)).toMatchObject({ content: "Done <tool_", calls: [] });
  });
  it("ids are call_ + 8 chars of [a-z0-9]", () => {
    for (let i = 0; i < 50; i++) expect(toolCallId()).toMatch(/^call_[a-z0-9]{8}$/);
  });
});

describe("validateTools (Ollama's JSON decoding errors)", () => {
  const err = (raw: unknown) => {
    try {
      validateTools(raw);
    } catch (e) {
      expect(e).toBeInstanceOf(ToolValidationError);
      return (e as Error).message;
    }
    return "";
  };
  it("a tool that is not an object", () => {
    expect(err(["get_weather"])).toBe("json: cannot unmarshal string into Go struct field ChatRequest.tools of type api.Tool");
    expect(err([5])).toBe("json: cannot unmarshal number into Go struct field ChatRequest.tools of type api.Tool");
    expect(err([[1]])).toBe("json: cannot unmarshal array into Go struct field ChatRequest.tools of type api.Tool");
    expect(err({})).toBe("json: cannot unmarshal object into Go struct field ChatRequest.tools of type api.Tools");
  });
  it("wrong field types inside a tool", () => {
    expect(err([{ function: "f" }])).toBe("json: cannot unmarshal string into Go struct field Tool.tools.function of type api.ToolFunction");
    expect(err([{ function: { name: 3 } }])).toBe("json: cannot unmarshal number into Go struct field ToolFunction.tools.function.name of type string");
    expect(err([{ function: { name: "f", parameters: [] } }])).toBe(
      "json: cannot unmarshal array into Go struct field ToolFunction.tools.function.parameters of type api.ToolFunctionParameters",
    );
  });
  it("valid tools pass (nulls skipped, a missing function becomes an empty one)", () => {
    expect(validateTools(undefined)).toEqual([]);
    expect(validateTools([null, ...TOOLS]).length).toBe(2);
    expect(validateTools([{ type: "function" }])).toEqual([{ type: "function", function: { name: "" } }]);
  });
});
