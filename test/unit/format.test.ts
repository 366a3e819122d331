// `format`: the daemon's check of its shape (Ollama's error message), the llama.cpp backend's
// compile (our JSON Schema → GBNF compiler, tested on its own in json-schema-grammar.test.ts)
// with its 400s, and the runner's grammar cache.
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INVALID_SCHEMA_PREFIX } from "../../src/backends/errors.js";
import { GrammarCache } from "../../src/backends/llamacpp/grammar.js";
import { compileLlamaFormat } from "../../src/backends/llamacpp/json-schema.js";
import { toApiError } from "../../src/daemon/errors.js";
import { parseFormat } from "../../src/daemon/prompt/format.js";

/** What a request's `format` goes through: the daemon's shape check, then the backend's compile. */
function compiled(f: unknown) {
  const shape = parseFormat(f);
  if (!shape) return undefined;
  try {
    return compileLlamaFormat(shape);
  } catch (err) {
    throw toApiError(err);
  }
}

const msg = (f: unknown) => {
  try {
    compiled(f);
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

describe("the llama.cpp backend's compile", () => {
  it("ordinary keywords compile (the issue: minimum/maximum, pattern, lengths); unenforceable ones are ignored", () => {
    const g = compiled({ type: "object", properties: { legs: { type: "integer", minimum: 0, maximum: 10 }, s: { type: "string", pattern: "^a+$", maxLength: 4 } }, not: {}, required: ["legs"] });
    expect(g).toMatchObject({ kind: "gbnf" });
    expect((g as { grammar: string }).grammar).toMatch(/^root ::= /);
    expect(compiled("json")).toEqual({ kind: "json" });
  });
  it("a schema no value satisfies, or that is not a schema, is a 400 before anything loads", () => {
    expect(msg({ type: "foo" })).toEqual({ status: 400, message: `${INVALID_SCHEMA_PREFIX}invalid type "foo"` });
    expect(msg({ type: "integer", minimum: 3, maximum: 1 })).toEqual({ status: 400, message: `${INVALID_SCHEMA_PREFIX}no integer lies between 3 and 1` });
    expect(msg({ type: "object", properties: "x" })?.message).toBe(`${INVALID_SCHEMA_PREFIX}properties must be an object`);
    expect(msg({ $ref: "#/$defs/Missing" })?.message).toBe(`${INVALID_SCHEMA_PREFIX}$ref "#/$defs/Missing" does not point into the schema`);
    expect(msg({ type: "string", pattern: "(" })?.status).toBe(400);
  });
});

describe("GrammarCache (runner)", () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ build: "never", gpu: false, maxThreads: 1, logLevel: LlamaLogLevel.error });
  });
  afterAll(async () => {
    await llama?.dispose();
  });

  it("parses the backend's GBNF (no stop text: the grammar ends with the value) and caches it", async () => {
    const cache = new GrammarCache(llama);
    const spec = compiled({ type: "object", properties: { legs: { type: "integer", minimum: 0, maximum: 10 } }, required: ["legs"] })!;
    const g = await cache.get(spec);
    expect(g.grammar.grammar).toContain('"\\"legs\\""');
    expect(g.stops).toEqual([]);
    expect(await cache.get(compiled({ type: "object", properties: { legs: { type: "integer", minimum: 0, maximum: 10 } }, required: ["legs"] })!)).toBe(g);
    expect((await cache.get({ kind: "json" })).grammar.grammar).toContain("root");
  });

  it("a grammar llama.cpp refuses (left recursion through $refs) is an invalid_schema error", async () => {
    const cache = new GrammarCache(llama);
    const spec = compiled({ $defs: { a: { anyOf: [{ $ref: "#/$defs/a" }, { type: "null" }] } }, $ref: "#/$defs/a" })!;
    await expect(cache.get(spec)).rejects.toMatchObject({ code: "invalid_schema", message: expect.stringContaining(INVALID_SCHEMA_PREFIX) });
  });
});
