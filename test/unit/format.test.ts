// `format`: parsing, Ollama's error messages, and the rewrite of JSON Schema into the grammar
// compiler's dialect. The compiled grammars are exercised against the real engine at the end.
import { getLlama, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GrammarCache } from "../../src/backends/llamacpp/grammar.js";
import { compileLlamaFormat, normalizeSchema } from "../../src/backends/llamacpp/json-schema.js";
import { toApiError } from "../../src/daemon/errors.js";
import { parseFormat as parseShape } from "../../src/daemon/prompt/format.js";

/** What a request's `format` goes through: the daemon's shape check, then the backend's compile. */
function parseFormat(f: unknown) {
  const shape = parseShape(f);
  if (!shape) return undefined;
  try {
    return compileLlamaFormat(shape);
  } catch (err) {
    throw toApiError(err);
  }
}

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
    expect(parseFormat({ type: "object", properties: { a: { type: "string" } } })).toEqual({
      kind: "schema",
      schema: { type: "object", properties: { a: { type: "string" } } },
    });
  });
  it("anything else is Ollama's invalid format error, a 400", () => {
    expect(msg("xml")).toEqual({ status: 400, message: 'invalid format: "\\"xml\\""; expected "json" or a valid JSON Schema object' });
    expect(msg(5)).toEqual({ status: 400, message: 'invalid format: "5"; expected "json" or a valid JSON Schema object' });
    expect(msg([1])).toEqual({ status: 400, message: 'invalid format: "[1]"; expected "json" or a valid JSON Schema object' });
  });
  it("a schema that is not valid JSON Schema is a 400 naming the problem", () => {
    expect(msg({ type: "foo" })).toEqual({ status: 400, message: 'invalid JSON schema in format: invalid type "foo"' });
    expect(msg({ type: "object", properties: { a: { type: 7 } } })).toEqual({
      status: 400,
      message: "invalid JSON schema in format: .properties.a: invalid type 7",
    });
    expect(msg({ type: "object", properties: "x" })?.message).toBe("invalid JSON schema in format: properties must be an object");
    expect(msg({ $ref: "#/$defs/Missing" })?.message).toBe('invalid JSON schema in format: $ref "#/$defs/Missing" does not point to a definition');
  });
  it("keywords the grammar cannot enforce are refused rather than silently ignored", () => {
    expect(msg({ type: "string", pattern: "^a+$" })?.message).toBe(`invalid JSON schema in format: "pattern" is not supported by this backend's grammar compiler`);
    expect(msg({ type: "object", properties: { n: { type: "integer", minimum: 0 } } })?.message).toBe(
      `invalid JSON schema in format: .properties.n: "minimum" is not supported by this backend's grammar compiler`,
    );
    expect(msg({ not: { type: "null" } })?.status).toBe(400);
  });
});

describe("normalizeSchema (JSON Schema → the compiler's dialect)", () => {
  it("anyOf becomes oneOf; annotations are dropped", () => {
    expect(normalizeSchema({ title: "X", anyOf: [{ type: "string" }, { type: "null" }], default: null })).toEqual({
      oneOf: [{ type: "string" }, { type: "null" }],
    });
  });
  it("definitions/$defs are hoisted to the root and refs rewritten", () => {
    expect(
      normalizeSchema({
        definitions: { P: { type: "object", properties: { x: { type: "integer" } } } },
        type: "object",
        properties: { p: { $ref: "#/definitions/P" } },
      }),
    ).toEqual({
      oneOf: [{ type: "object", properties: { p: { $ref: "#/$defs/P" } } }],
      $defs: { P: { type: "object", properties: { x: { type: "integer" } } } },
    });
  });
  it("an object without properties, {} and true mean any", () => {
    expect(normalizeSchema({ type: "object" })).toEqual({ type: "object", additionalProperties: true });
    expect(normalizeSchema({})).toHaveProperty("oneOf");
    expect(normalizeSchema({ type: "object", properties: { a: true } }).properties).toHaveProperty("a.oneOf");
  });
  it("type lists, inferred types, single allOf, string formats", () => {
    expect(normalizeSchema({ type: ["string", "null"] })).toEqual({ type: ["string", "null"] });
    expect(normalizeSchema({ type: ["object", "null"], properties: { a: { type: "string" } } })).toEqual({
      oneOf: [{ type: "object", properties: { a: { type: "string" } } }, { type: "null" }],
    });
    expect(normalizeSchema({ properties: { a: { type: "boolean" } } })).toEqual({ type: "object", properties: { a: { type: "boolean" } } });
    expect(normalizeSchema({ allOf: [{ type: "string", maxLength: 3 }] })).toEqual({ type: "string", maxLength: 3 });
    expect(normalizeSchema({ type: "string", format: "date" })).toEqual({ type: "string", format: "date" });
    expect(normalizeSchema({ type: "string", format: "email" })).toEqual({ type: "string" }); // format is an annotation
  });
  it("draft-04 tuple items become prefixItems", () => {
    expect(normalizeSchema({ type: "array", items: [{ type: "string" }, { type: "integer" }], additionalItems: false })).toEqual({
      type: "array",
      prefixItems: [{ type: "string" }, { type: "integer" }],
      maxItems: 2,
    });
  });
});

describe("normalized schemas compile with node-llama-cpp's grammar compiler", () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ build: "never", gpu: false, maxThreads: 1 });
  });
  afterAll(async () => {
    await llama?.dispose();
  });
  const schemas: Record<string, object> = {
    object: { type: "object", properties: { name: { type: "string" }, age: { type: "integer" }, ok: { type: "boolean" } }, required: ["name"] },
    pydanticOptional: {
      title: "Person",
      type: "object",
      properties: { nick: { anyOf: [{ type: "string" }, { type: "null" }], default: null, title: "Nick" }, tags: { type: "array", items: { type: "string" } } },
    },
    nestedDefs: {
      $defs: { Pet: { type: "object", properties: { kind: { enum: ["cat", "dog"] } } } },
      type: "object",
      properties: { pets: { type: "array", items: { $ref: "#/$defs/Pet" } }, favourite: { $ref: "#/$defs/Pet" } },
    },
    recursive: { definitions: { Node: { type: "object", properties: { v: { type: "integer" }, next: { anyOf: [{ $ref: "#/definitions/Node" }, { type: "null" }] } } } }, $ref: "#/definitions/Node" },
    any: {},
    topArray: { type: "array", items: { type: ["string", "number"] }, minItems: 1, maxItems: 4 },
    date: { type: "object", properties: { when: { type: "string", format: "date-time" } } },
  };
  for (const [name, schema] of Object.entries(schemas)) {
    it(name, async () => {
      const grammar = await llama.createGrammarForJsonSchema(normalizeSchema(schema as Record<string, unknown>) as never);
      expect(grammar.grammar.length).toBeGreaterThan(0);
    });
  }
  it("integers are compiled without an exponent, other numbers with a bounded one; compiled grammars are cached", async () => {
    const cache = new GrammarCache(llama);
    const spec = { kind: "schema" as const, schema: normalizeSchema({ type: "object", properties: { i: { type: "integer" }, f: { type: "number" } } }) };
    const g = await cache.get(spec);
    expect(g.grammar.grammar).toMatch(/^integer-number-rule ::= "-"\? \("0" \| \[1-9\] \[0-9\]\{0,14\}\)$/m);
    expect(g.grammar.grammar).toMatch(/^fractional-number-rule ::= .*\[0-9\]\?\)\)\?$/m);
    expect(g.stops).toEqual(["\n\n\n\n"]);
    expect(await cache.get(spec)).toBe(g);
    expect((await cache.get({ kind: "json" })).grammar.grammar).toContain("root");
  });
});
