// JSON nesting is bounded where client JSON is parsed (issue 13, row 6): the flat depth scan, the
// body reader's 400, and the recursive walkers behind it are safe at the bound.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_JSON_DEPTH, nestsDeeperThan, parseJson } from "../../src/daemon/bounded-json.js";
import { parseBody } from "../../src/daemon/body.js";
import { ApiError } from "../../src/daemon/errors.js";
import { compileLlamaFormat } from "../../src/backends/llamacpp/json-schema.js";
import { parseFormat } from "../../src/daemon/prompt/format.js";
import { fromJSON, marshalJSON } from "../../src/template/values.js";
import { renderPrompt, selectTemplate } from "../../src/daemon/prompt/render.js";
import { validateTools } from "../../src/daemon/prompt/tool-validation.js";
import { chatSchema } from "../../src/daemon/schemas.js";

const arrays = (n: number) => "[".repeat(n) + "]".repeat(n);
const objects = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);

describe("nestsDeeperThan", () => {
  it("counts arrays and objects, not brackets inside strings", () => {
    expect(nestsDeeperThan(arrays(3), 3)).toBe(false);
    expect(nestsDeeperThan(arrays(4), 3)).toBe(true);
    expect(nestsDeeperThan(objects(4), 3)).toBe(true);
    expect(nestsDeeperThan(`["[[[[[", "{{{{"]`, 1)).toBe(false);
    // an escaped quote does not end the string; an escaped backslash does not escape the quote
    expect(nestsDeeperThan(`["\\"[[[[", "\\\\"]`, 1)).toBe(false);
    expect(nestsDeeperThan(`["\\\\", [[[]]]]`, 3)).toBe(true);
    // siblings do not add up
    expect(nestsDeeperThan(`[[1],[2],[3],{"a":[4]}]`, 3)).toBe(false);
  });
  it("scans a million levels without recursion", () => {
    expect(nestsDeeperThan(arrays(1_000_000), MAX_JSON_DEPTH)).toBe(true);
  });
});

describe("parseJson", () => {
  it("parses up to the limit and refuses past it, saying the limit", () => {
    expect(parseJson(arrays(MAX_JSON_DEPTH))).toBeInstanceOf(Array);
    expect(() => parseJson(arrays(MAX_JSON_DEPTH + 1))).toThrow(`exceeded max depth: arrays and objects nest more than ${MAX_JSON_DEPTH} levels deep`);
  });
});

describe("parseBody", () => {
  const app = new Hono();
  app.post("/", async (c) => c.json(await parseBody(c, z.record(z.string(), z.unknown()))));
  app.onError((err, c) => c.json({ error: err.message }, err instanceof ApiError ? (err.status as 400) : 500));
  const send = async (body: string) => {
    const r = await app.request("/", { method: "POST", body });
    return { status: r.status, body: (await r.json()) as { error?: string } };
  };

  it("answers 400 naming the limit for 100,000 levels in any field", async () => {
    for (const value of [arrays(100_000), objects(100_000)]) {
      const r = await send(`{"model":"m","format":${value}}`);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe(`invalid JSON in request body: exceeded max depth: arrays and objects nest more than ${MAX_JSON_DEPTH} levels deep`);
    }
  });
  it("accepts a body exactly at the limit", async () => {
    const r = await send(`{"a":${arrays(MAX_JSON_DEPTH - 1)}}`);
    expect(r.status).toBe(200);
  });
});

describe("the recursive walkers are safe at the bound", () => {
  // Each walker gets the deepest value a body can carry to it, and must answer, not overflow.
  const deepest = (inner: string, levels: number) => JSON.parse('{"type":"array","items":'.repeat(levels) + inner + "}".repeat(levels)) as unknown;

  it("format: a schema as deep as a body allows compiles or is refused with a 400", () => {
    const schema = deepest('{"type":"string"}', MAX_JSON_DEPTH - 2);
    // The daemon checks the shape; the llama.cpp backend walks the schema when it compiles it.
    expect(() => compileLlamaFormat(parseFormat(schema)!)).not.toThrow(RangeError);
  });
  it("Go template values: conversion and JSON printing", () => {
    const v = JSON.parse(arrays(MAX_JSON_DEPTH)) as unknown;
    expect(marshalJSON(fromJSON(v))).toBe(arrays(MAX_JSON_DEPTH));
  });
  it("zod: chat messages with deep tool call arguments", () => {
    const args = JSON.parse(objects(MAX_JSON_DEPTH - 6)) as unknown;
    const r = chatSchema.safeParse({ model: "m", messages: [{ role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: args } }] }] });
    expect(r.success).toBe(true);
  });
  it("tools and tool calls as deep as a body allows render through Go and Jinja templates", () => {
    // body → tools → [0] → function → parameters → properties → a → … : the rest is the bound.
    const parameters = JSON.parse('{"type":"object","properties":{"a":' + '{"type":"array","items":'.repeat(MAX_JSON_DEPTH - 8) + '{"type":"string"}' + "}".repeat(MAX_JSON_DEPTH - 8) + "}}") as unknown;
    const tools = validateTools([{ type: "function", function: { name: "f", parameters } }]);
    const args = JSON.parse(objects(MAX_JSON_DEPTH - 8)) as Record<string, unknown>;
    const messages = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: args } }] },
      { role: "tool", content: "ok" },
    ];
    const go = readFileSync(path.resolve(__dirname, "../fixtures/templates/qwen2.5.gotmpl"), "utf8");
    const jinja = "{% for m in messages %}{{ m.tool_calls | tojson }}{% endfor %}{{ tools | tojson }}";
    for (const t of [selectTemplate(go, undefined, "", ""), selectTemplate(undefined, jinja, "", "")]) {
      expect(renderPrompt(t, { messages, tools })).toContain('"a"');
    }
  });
});

describe("container count", () => {
  it("a body of more than 100,000 arrays and objects is refused before parsing (541,200 tiny objects kept 75 MB)", async () => {
    const { MAX_JSON_CONTAINERS, JsonSizeError, parseJson: parse } = await import("../../src/daemon/bounded-json.js");
    const many = JSON.stringify({ messages: [{ role: "user", content: Array.from({ length: MAX_JSON_CONTAINERS }, () => ({ a: 1 })) }] });
    expect(() => parse(many)).toThrow(JsonSizeError);
    expect(() => parse(many)).toThrow(/more than 100000 arrays and objects/);
    const fine = JSON.stringify({ input: Array.from({ length: 200_000 }, (_, i) => `s${i}`), context: Array.from({ length: 200_000 }, (_, i) => i) });
    expect((parse(fine) as { input: string[] }).input).toHaveLength(200_000);
  });
});
