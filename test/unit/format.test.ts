// `format`: the daemon's check of its shape (Ollama's error message), and the runner's grammar
// cache that compiles schemas with json-schema-grammar.ts (tested on its own in
// json-schema-grammar.test.ts).
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INVALID_SCHEMA_PREFIX } from "../../src/backends/backend.js";
import { GrammarCache } from "../../src/backends/llamacpp/grammar.js";
import { parseFormat } from "../../src/daemon/prompt/format.js";

const msg = (f: unknown) => {
  try {
    parseFormat(f);
  } catch (e) {
    return { status: (e as { status?: number }).status, message: (e as Error).message };
  }
  return undefined;
};

describe("parseFormat", () => {
  it("none, json, schema", () => {
    expect(parseFormat(undefined)).toBeUndefined();
    expect(parseFormat(null)).toBeUndefined();
    expect(parseFormat("")).toBeUndefined();
    expect(parseFormat("json")).toEqual({ kind: "json" });
  });
  it("a schema object is passed on untouched, whatever keywords it uses", () => {
    const schema = { type: "object", properties: { n: { type: "integer", minimum: 0, maximum: 10 }, s: { type: "string", pattern: "^a+$" } }, not: {} };
    expect(parseFormat(schema)).toEqual({ kind: "schema", schema });
    expect((parseFormat(schema) as { schema: unknown }).schema).toBe(schema);
  });
  it("anything else is Ollama's invalid format error, a 400", () => {
    expect(msg("xml")).toEqual({ status: 400, message: 'invalid format: "\\"xml\\""; expected "json" or a valid JSON Schema object' });
    expect(msg(5)).toEqual({ status: 400, message: 'invalid format: "5"; expected "json" or a valid JSON Schema object' });
    expect(msg([1])).toEqual({ status: 400, message: 'invalid format: "[1]"; expected "json" or a valid JSON Schema object' });
    expect(msg(true)).toEqual({ status: 400, message: 'invalid format: "true"; expected "json" or a valid JSON Schema object' });
  });
});

describe("GrammarCache", () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ build: "never", gpu: false, maxThreads: 1, logLevel: LlamaLogLevel.error });
  });
  afterAll(async () => {
    await llama?.dispose();
  });

  it("compiles a schema with our compiler (no stop text: the grammar ends with the value) and caches it", async () => {
    const cache = new GrammarCache(llama);
    const spec = { kind: "schema" as const, schema: { type: "object", properties: { legs: { type: "integer", minimum: 0, maximum: 10 } }, required: ["legs"] } };
    const g = await cache.get(spec);
    expect(g.grammar.grammar).toMatch(/^root ::= /);
    expect(g.grammar.grammar).toContain('"\\"legs\\""');
    expect(g.stops).toEqual([]);
    expect(await cache.get({ kind: "schema", schema: JSON.parse(JSON.stringify(spec.schema)) })).toBe(g);
    expect((await cache.get({ kind: "json" })).grammar.grammar).toContain("root");
  });

  it("a schema no value satisfies is an error with the prefix the daemon turns into a 400", async () => {
    const cache = new GrammarCache(llama);
    await expect(cache.get({ kind: "schema", schema: { type: "integer", minimum: 3, maximum: 1 } })).rejects.toThrow(
      `${INVALID_SCHEMA_PREFIX}no integer lies between 3 and 1`,
    );
    // llama.cpp refuses left recursion: a $ref reaching itself before any text.
    await expect(cache.get({ kind: "schema", schema: { $defs: { a: { anyOf: [{ $ref: "#/$defs/a" }, { type: "null" }] } }, $ref: "#/$defs/a" } })).rejects.toThrow(
      INVALID_SCHEMA_PREFIX,
    );
  });
});
