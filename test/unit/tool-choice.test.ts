// tool_choice (prompt/tool-choice.ts): the shapes clients send it in, and the format that makes
// an answer one call in the template's own syntax (its tag first, then JSON naming an offered
// tool with arguments that fit it), which the grammar enforces and the tool-call parser reads.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { jsonSchemaGrammar } from "../../src/backends/llamacpp/json-schema-grammar.js";
import { selectTemplate } from "../../src/daemon/prompt/render.js";
import { parseToolChoice, toolCallFormat } from "../../src/daemon/prompt/tool-choice.js";
import { toolDialect } from "../../src/daemon/prompt/tool-dialect.js";
import { toolCallParser } from "../../src/daemon/prompt/tool-markup.js";
import { fails } from "../helpers/api-error.js";
import { REPO } from "../helpers/daemon.js";
import { testGrammarOracle } from "../helpers/grammar-oracle.js";

const TOOLS = [
  { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { enum: ["Paris", "Rome"] } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", parameters: {} } },
];

const template = async (file: string) => selectTemplate(await readFile(path.join(REPO, "test/fixtures/templates", file), "utf8"), undefined, "", "");

const oracles = testGrammarOracle();

describe("tool_choice", () => {
  it("is read in the shapes of chat completions, responses and Anthropic; a shape it does not know is ignored, as Ollama ignores the field", () => {
    expect(["auto", "none", "required", "any", undefined, null].map(parseToolChoice)).toEqual(["auto", "none", "required", "required", undefined, undefined]);
    expect(parseToolChoice({ type: "function", function: { name: "f" } })).toEqual({ name: "f" });
    expect(parseToolChoice({ type: "function", name: "f" })).toEqual({ name: "f" });
    expect(parseToolChoice({ type: "tool", name: "f" })).toEqual({ name: "f" });
    expect([{ type: "any" }, { type: "none" }, { type: "auto" }].map(parseToolChoice)).toEqual(["required", "none", "auto"]);
    expect(["always", 3, [], { type: "function" }].map(parseToolChoice)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it("auto, none and no tools leave the answer free; a name not offered is a 400", async () => {
    const t = await template("llama3.2.gotmpl");
    for (const c of ["auto", "none", undefined] as const) expect(toolCallFormat(c, TOOLS, t)).toBeUndefined();
    expect(toolCallFormat("required", [], t)).toBeUndefined();
    expect(fails(() => toolCallFormat({ name: "nope" }, TOOLS, t))).toEqual({ status: 400, message: 'tool_choice names the function "nope", which is not among the request\'s tools' });
  });

  it("Llama 3.2 (bare JSON, key 'parameters'): the grammar takes exactly a call of an offered tool, which the parser reads", async () => {
    const t = await template("llama3.2.gotmpl");
    const f = toolCallFormat("required", TOOLS, t);
    expect(f).toMatchObject({ kind: "schema" });
    expect(f && "prefix" in f).toBe(false);
    if (f?.kind !== "schema") throw new Error("no format");
    const g = await oracles.oracle.grammar(jsonSchemaGrammar(f.schema, f));
    const call = '{"name": "get_weather", "parameters": {"city": "Rome"}}';
    expect(oracles.oracle.accepts(g, call)).toBe(true);
    expect(oracles.oracle.accepts(g, '{"name":"get_weather","parameters":{"city":"Rome"}}')).toBe(true);
    // Compact: one space where JSON allows whitespace, no more (a sampled model ran out of tokens
    // writing a call padded with newlines and tabs); a user's format keeps room to pretty-print.
    expect(oracles.oracle.accepts(g, '{"name":  "get_weather", "parameters": {"city": "Rome"}}')).toBe(false);
    expect(oracles.oracle.accepts(g, '{\n  "name": "get_weather", "parameters": {"city": "Rome"}}')).toBe(false);
    const pretty = await oracles.oracle.grammar(jsonSchemaGrammar(f.schema));
    expect(oracles.oracle.accepts(pretty, '{\n  "name": "get_weather", "parameters": {"city": "Rome"}}')).toBe(true);
    expect(oracles.oracle.accepts(g, '{"name": "get_time", "parameters": {}}')).toBe(true);
    expect(oracles.oracle.accepts(g, '{"name": "get_weather", "parameters": {"city": "Oslo"}}')).toBe(false);
    expect(oracles.oracle.accepts(g, '{"name": "other", "parameters": {}}')).toBe(false);
    expect(oracles.oracle.accepts(g, "Sure, let me check.")).toBe(false);
    const parser = toolCallParser(toolDialect(t), TOOLS);
    expect(parser.add(call).calls.map((c) => [c.function.name, c.function.arguments])).toEqual([["get_weather", { city: "Rome" }]]);
  });

  it("Qwen 2.5 (<tool_call> tag, key 'arguments'): the tag first, then the named function's call", async () => {
    const t = await template("qwen2.5.gotmpl");
    const f = toolCallFormat({ name: "get_weather" }, TOOLS, t);
    if (f?.kind !== "schema") throw new Error("no format");
    expect(f.prefix).toBe("<tool_call>\n");
    const g = await oracles.oracle.grammar(jsonSchemaGrammar(f.schema, f));
    const text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}';
    expect(oracles.oracle.accepts(g, text)).toBe(true);
    expect(oracles.oracle.accepts(g, '{"name": "get_weather", "arguments": {"city": "Paris"}}')).toBe(false);
    expect(oracles.oracle.accepts(g, '<tool_call>\n{"name": "get_time", "arguments": {}}')).toBe(false);
    const parser = toolCallParser(toolDialect(t), TOOLS);
    const step = parser.add(text);
    const calls = [...step.calls, ...parser.flush().calls];
    expect(calls.map((c) => c.function.name)).toEqual(["get_weather"]);
  });
});
