// The JSON Schema → GBNF compiler, checked against llama.cpp's own grammar engine (the grammar
// oracle): for each keyword, the texts the grammar accepts are exactly (or, where the compiler
// narrows, a subset of) the JSON texts that validate.
import type { LlamaGrammar } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { InvalidSchemaError } from "../../src/backends/llamacpp/gbnf.js";
import { jsonSchemaGrammar } from "../../src/backends/llamacpp/json-schema-grammar.js";
import { makeValidator } from "../helpers/ajv.js";
import { testGrammarOracle } from "../helpers/grammar-oracle.js";

const oracles = testGrammarOracle();
const ajv = makeValidator();

const compile = (schema: unknown): Promise<LlamaGrammar> => oracles.oracle.grammar(jsonSchemaGrammar(schema));

/** Every text: accepted by the grammar exactly when it parses and validates. */
async function agrees(schema: object, texts: string[], check?: (value: unknown) => boolean): Promise<void> {
  const g = await compile(schema);
  const validate = check ?? ajv.compile(schema);
  const wrong: string[] = [];
  for (const t of texts) {
    let valid: boolean;
    try {
      valid = validate(JSON.parse(t)) === true;
    } catch {
      valid = false;
    }
    if (oracles.oracle.accepts(g, t) !== valid) wrong.push(`${t} (valid: ${valid})`);
  }
  expect(wrong).toEqual([]);
}

/** Accepted texts validate (the grammar may be narrower than the schema). */
async function sound(schema: object, texts: string[]): Promise<number> {
  const g = await compile(schema);
  const validate = ajv.compile(schema);
  let accepted = 0;
  for (const t of texts) {
    if (!oracles.oracle.accepts(g, t)) continue;
    accepted++;
    expect(validate(JSON.parse(t)), t).toBe(true);
  }
  return accepted;
}

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

// The grammar writes numbers one way: no "-0", no "1.0" or "1e2" for an integer, no exponent
// when bounded. Those other spellings are valid JSON Schema values it never generates.
const NON_CANONICAL = ["-0", "1.0", "1e2", "-0.0", "0.5e1", "0.50", "1.000", "0.0"];

describe("integers", () => {
  const texts = [...range(-130, 130).map(String), "007", "+5", "", "1000", "-1000", "99999999999", "-99999999999"];
  const cases: object[] = [
    { minimum: 0, maximum: 10 },
    { minimum: -3, maximum: 10 },
    { minimum: -120, maximum: -7 },
    { exclusiveMinimum: 0, exclusiveMaximum: 100 },
    { minimum: 17 },
    { maximum: -17 },
    { exclusiveMaximum: 0 },
    { minimum: 1.5, maximum: 99.5 },
    { minimum: 5, exclusiveMinimum: 9, maximum: 100, exclusiveMaximum: 50 },
    { minimum: -9007199254740991, maximum: 9007199254740991 },
  ];
  for (const c of cases) {
    it(JSON.stringify(c), async () => {
      await agrees({ type: "integer", ...c }, texts);
      expect(await sound({ type: "integer", ...c }, NON_CANONICAL)).toBe(0);
    });
  }
  it("draft-04's boolean exclusiveMinimum/exclusiveMaximum", () =>
    agrees({ type: "integer", minimum: 0, exclusiveMinimum: true, maximum: 10, exclusiveMaximum: true }, texts, (v) => Number.isInteger(v) && (v as number) > 0 && (v as number) < 10));
  it("a range without an integer is an invalid schema", () => {
    expect(() => jsonSchemaGrammar({ type: "integer", minimum: 5, maximum: 4 })).toThrow(InvalidSchemaError);
    expect(() => jsonSchemaGrammar({ type: "integer", exclusiveMinimum: 4, exclusiveMaximum: 5 })).toThrow(/no integer lies between 4 and 5/);
  });
});

describe("numbers", () => {
  const grid: string[] = [];
  for (let i = -300; i <= 300; i++) grid.push(String(i / 100), String(i / 10));
  const texts = [...new Set([...grid, "0.999999", "1.0000001", "2.", ".5", "0.333333333333333", "-0.999999999999999"])];
  const cases: object[] = [
    { exclusiveMinimum: 0, maximum: 1 },
    { minimum: -2.5, exclusiveMaximum: 3.75 },
    { exclusiveMinimum: -0.001, exclusiveMaximum: 0.001 },
    { minimum: 0.5 },
    { maximum: -0.25 },
    { minimum: -1, maximum: -1 },
    { minimum: 1.05, maximum: 1.25 },
    { exclusiveMinimum: 2, exclusiveMaximum: 2.01 },
  ];
  for (const c of cases) {
    it(JSON.stringify(c), async () => {
      await agrees({ type: "number", ...c }, texts);
      await sound({ type: "number", ...c }, NON_CANONICAL);
    });
  }
  it("multipleOf 0.01 (money): at most two decimals, bounds kept", async () => {
    await agrees({ type: "number", multipleOf: 0.01, minimum: 0, maximum: 3 }, texts);
    // Other multiples: only the decimal places are enforced (0.7 is accepted, not a multiple of 0.5).
    await agrees({ type: "number", multipleOf: 0.5 }, ["0", "0.5", "1.25", "-2.5", "3"]);
    expect(await sound({ type: "number", multipleOf: 0.1 }, ["0.1", "0.12", "1e1"])).toBe(1);
  });
  it("multipleOf within bounds: the multiples (integer and decimal steps, exclusive bounds)", async () => {
    // Few decimals: the validator checks multipleOf with a tolerance.
    const short = texts.filter((t) => !/\.\d{4}/.test(t));
    await agrees({ type: "number", multipleOf: 0.5, minimum: 1, maximum: 5 }, short);
    await agrees({ type: "number", multipleOf: 0.25, exclusiveMinimum: -1, exclusiveMaximum: 1 }, [...short, "0.25", "-0.75", "0.75"]);
    await agrees({ type: "integer", multipleOf: 5, minimum: -12, maximum: 100 }, range(-130, 130).map(String));
    await agrees({ type: "number", multipleOf: 0.1, minimum: 0.05, maximum: 0.35 }, short);
    expect(() => jsonSchemaGrammar({ type: "integer", multipleOf: 10, minimum: 1, maximum: 9 })).toThrow(/no multiple of 10 lies between 1 and 9/);
  });
  it("without bounds any JSON number, with a short exponent", async () => {
    const g = await compile({ type: "number" });
    for (const t of ["0", "-1.5", "1e10", "2.5E-3", "123456789012345.5"]) expect(oracles.oracle.accepts(g, t), t).toBe(true);
    for (const t of ["01", "1e400", "NaN", "1.", "-"]) expect(oracles.oracle.accepts(g, t), t).toBe(false);
  });
  it("an empty range is an invalid schema", () => {
    expect(() => jsonSchemaGrammar({ type: "number", minimum: 1, exclusiveMaximum: 1 })).toThrow(/no number lies between 1 and 1/);
  });
});

describe("strings", () => {
  const samples = ["", "a", "ab", "abc", "abcd", "abcde", "abcdefghij", 'q"uote', "back\\slash", "new\nline", "tab\t", "é", "😀😀", "\u0001"];
  it("minLength/maxLength count characters (an emoji is one)", () =>
    agrees({ type: "string", minLength: 2, maxLength: 4 }, samples.map((s) => JSON.stringify(s))));
  it("large lengths compile to grammars llama.cpp parses", async () => {
    const g = await compile({ type: "string", minLength: 1200, maxLength: 100_000 });
    expect(oracles.oracle.accepts(g, JSON.stringify("x".repeat(1199)))).toBe(false);
    expect(oracles.oracle.accepts(g, JSON.stringify("x".repeat(1200)))).toBe(true);
    expect(oracles.oracle.accepts(g, JSON.stringify("y".repeat(5000)))).toBe(true);
  });
  it("contradictory lengths are an invalid schema", () => {
    expect(() => jsonSchemaGrammar({ type: "string", minLength: 3, maxLength: 2 })).toThrow(/minLength 3 is greater than maxLength 2/);
  });
});

describe("patterns", () => {
  // Random strings over characters the patterns use, JSON-encoded; the grammar accepts exactly
  // those the pattern matches.
  const alphabet = ["a", "b", "c", "x", "0", "1", "9", "-", "_", ".", "@", " ", '"', "\\", "\n", "é", "😀", "A", "Z", "/"];
  let seed = 7;
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const randomStrings = (n: number, maxLen: number) =>
    Array.from({ length: n }, () => Array.from({ length: Math.floor(rand() * (maxLen + 1)) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join(""));
  const cases: Array<[string, string[]]> = [
    ["^[a-c]+$", ["abc", "a", "cab"]],
    ["^a.c$", ["abc", 'a"c', "a\\c", "aéc", "a😀c"]],
    ["^\\d{3}-\\d{2,4}$", ["123-45", "000-9999"]],
    ["^(ab|c)*x?$", ["", "ab", "cabx", "x"]],
    ["ab", ["ab", "xxabyy", "\nab"]],
    ["^[^a-c]{2}$", ["xx", '""', "\\\\", "é😀"]],
    ["^\\w+@\\w+\\.com$", ["a@b.com", "x_1@y9.com"]],
    ["^(?:[A-Z][a-z]*\\s?)+$", ["Abc", "A B", "Ab Cd "]],
    ["^(?<year>\\d{4})/(0[1-9]|1[0-2])$", ["2024/01", "1999/12"]],
    ["^\\u00e9\\x41\\u{1F600}$", ["éA😀"]],
    ["^[\\s\\S]{0,3}$", ["", "a\nb", '"\\"']],
    ["^a{2,}b{0,1}$", ["aa", "aaab"]],
    ["c$", ["c", "abc"]],
    ["^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\$", [".*+?()[]{}|\\"]],
  ];
  for (const [pattern, positives] of cases) {
    it(pattern, async () => {
      const strings = [...positives, ...randomStrings(300, 6)];
      for (const p of positives) expect(new RegExp(pattern, "u").test(p), p).toBe(true);
      await agrees({ type: "string", pattern }, strings.map((s) => JSON.stringify(s)));
    });
  }
  it("with lengths: accepted strings match the pattern and the lengths, and some are accepted", async () => {
    const schema = { type: "string", pattern: "^[a-c]+x*$", minLength: 3, maxLength: 5 };
    const all = randomStrings(3000, 7).filter((s) => /^[a-cx]*$/.test(s));
    const extra = ["abc", "abx", "aaaaa", "abxxx", "ab", "abcabc", "axxxxx"];
    expect(await sound(schema, [...all, ...extra].map((s) => JSON.stringify(s)))).toBeGreaterThan(3);
  });
  it("an unanchored pattern with a maxLength still finds room for its match", async () => {
    const g = await compile({ type: "string", pattern: "needle", maxLength: 8 });
    expect(oracles.oracle.accepts(g, '"needle"')).toBe(true);
    expect(oracles.oracle.accepts(g, '"a needle"')).toBe(false); // 8 characters, but the grammar narrows
  });
  it("unsupported constructs (lookaround, backreferences, \\b, \\p) are ignored: any string", async () => {
    for (const pattern of ["^(?=a)a$", "^(a)\\1$", "\\bword\\b", "^\\p{L}+$"]) {
      const g = await compile({ type: "string", pattern, maxLength: 4 });
      expect(oracles.oracle.accepts(g, '"zz"'), pattern).toBe(true);
      expect(oracles.oracle.accepts(g, '"zzzzz"'), pattern).toBe(false);
    }
  });
  it("a pattern that is not a regular expression is an invalid schema", () => {
    expect(() => jsonSchemaGrammar({ type: "string", pattern: "^(a$" })).toThrow(/invalid pattern "\^\(a\$"/);
    expect(() => jsonSchemaGrammar({ type: "string", pattern: "[z-a]" })).toThrow(InvalidSchemaError);
  });
});

describe("formats", () => {
  const days: string[] = [];
  for (const y of [1900, 2000, 2023, 2024]) {
    for (let m = 1; m <= 12; m++) for (let d = 0; d <= 32; d++) days.push(`${y}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`);
  }
  it("date: the days of each month, February 29 only in leap years", () => agrees({ type: "string", format: "date" }, days.map((d) => JSON.stringify(d))));
  it("time and date-time need a time zone", async () => {
    const texts = ["2024-02-29T23:59:59Z", "2024-02-29T23:59:59+01:00", "2024-02-29T23:59:59.123456-11:30", "2024-02-29T23:59:59", "2023-02-29T10:00:00Z", "2024-01-01T24:00:00Z"];
    await agrees({ type: "string", format: "date-time" }, texts.map((s) => JSON.stringify(s)));
    await agrees({ type: "string", format: "time" }, ["23:59:59Z", "00:00:00.5+14:00", "12:00:00", "24:00:00Z"].map((s) => JSON.stringify(s)));
    expect(await sound({ type: "string", format: "date-time" }, ['"2024-01-01t10:00:00z"'])).toBe(0); // valid, not generated
  });
  it("uuid, email and ipv4 generate only valid values", async () => {
    expect(await sound({ type: "string", format: "uuid" }, ['"123e4567-e89b-12d3-a456-426614174000"', '"123e4567e89b12d3a456426614174000"'])).toBe(1);
    expect(await sound({ type: "string", format: "email" }, ['"a.b@c.io"', '"a..b@c.io"', '"a@-c.io"', '"x@y"', '"first_last+tag@mail.example.org"'])).toBe(2);
    expect(await sound({ type: "string", format: "ipv4" }, ['"192.168.0.1"', '"256.1.1.1"', '"01.2.3.4"', '"0.0.0.0"'])).toBe(2);
  });
  it("a pattern and a format both hold (zod's email: a pattern that alone allows a label ending in -)", async () => {
    const zodEmail = {
      type: "string",
      format: "email",
      pattern: "^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$",
    };
    const g = await compile(zodEmail);
    expect(oracles.oracle.accepts(g, '"ab@cd.org"')).toBe(true);
    expect(oracles.oracle.accepts(g, '"ab@c-.org"')).toBe(false); // the pattern allows it, the format does not
    expect(oracles.oracle.accepts(g, '"ab@cd.o"')).toBe(false); // the format allows it, the pattern does not
  });
  it("uri, hostname, ipv6 and duration generate only valid values", async () => {
    expect(await sound({ type: "string", format: "uri" }, ['"https://example.com"', '"http://a.example.org/path/to?q=1&r=x"', '"https://example.com/"', '"not a uri"', '"https://"', '"ftp://x.org"'])).toBe(3);
    expect(await sound({ type: "string", format: "uri-reference" }, ['"https://example.com/a"'])).toBe(1);
    expect(await sound({ type: "string", format: "hostname" }, ['"localhost"', '"a.example.com"', '"-bad.com"', '"a..b"'])).toBe(2);
    expect(await sound({ type: "string", format: "ipv6" }, ['"2001:db8:0:0:0:0:0:1"', '"fe80:0:0:0:1:2:3:4"', '"::1"', '"1:2:3:4:5:6:7"', '"12345::"'])).toBe(2);
    expect(await sound({ type: "string", format: "duration" }, ['"P1D"', '"PT1S"', '"P3DT4H5M6S"', '"PT2H30S"', '"P"', '"PT"', '"1D"'])).toBe(4);
  });
  it("unknown formats are not enforced", async () => {
    const g = await compile({ type: "string", format: "iri" });
    expect(oracles.oracle.accepts(g, '"not an iri"')).toBe(true);
  });
});

describe("objects", () => {
  const schema = {
    type: "object",
    properties: { a: { type: "integer" }, b: { type: "boolean" }, c: { type: "null" } },
    required: ["b"],
  };
  it("optional properties may be left out, in the schema's order, commas right", () =>
    agrees(schema, [
      '{"b":true}',
      '{"a":1,"b":false}',
      '{"a":1,"b":true,"c":null}',
      '{"b":true,"c":null}',
      '{ "b" : true }',
      '{"a":1}',
      '{}',
      '{"a":1,,"b":true}',
      '{"b":true,}',
      '{,"b":true}',
    ]));
  it("additionalProperties: other keys (never a declared name again) with the given values", async () => {
    const s = { type: "object", properties: { ab: { type: "integer" } }, additionalProperties: { type: "string" } };
    const g = await compile(s);
    expect(oracles.oracle.accepts(g, '{"ab":1,"x":"y","abc":"z","a":"w"}')).toBe(true);
    expect(oracles.oracle.accepts(g, '{"ab":1,"ab":"again"}')).toBe(false);
    expect(oracles.oracle.accepts(g, '{"x":1}')).toBe(false);
    expect(oracles.oracle.accepts(g, '{"x":"1"}')).toBe(true);
  });
  it("required keys without a declared schema are generated; additionalProperties false closes the object", async () => {
    const g = await compile({ type: "object", required: ["id"], properties: { n: { type: "integer" } } });
    expect(oracles.oracle.accepts(g, '{"n":1,"id":"anything"}')).toBe(true);
    expect(oracles.oracle.accepts(g, '{"n":1}')).toBe(false);
    const closed = await compile({ type: "object", properties: {}, additionalProperties: false });
    expect(oracles.oracle.accepts(closed, "{}")).toBe(true);
    expect(oracles.oracle.accepts(closed, '{"a":1}')).toBe(false);
  });
  it("propertyNames: keys of additional properties follow it (zod's record)", async () => {
    await agrees({ type: "object", propertyNames: { type: "string", maxLength: 2 }, additionalProperties: { type: "integer" } }, ['{"ab":1}', '{"abc":1}', '{"a":1,"b":2}', "{}"]);
    await agrees({ type: "object", propertyNames: { pattern: "^x" }, additionalProperties: true }, ['{"xy":1}', '{"yx":1}']);
    await agrees({ type: "object", properties: { xa: { type: "string" } }, propertyNames: { enum: ["xa", "xb"] }, additionalProperties: { type: "integer" } }, [
      '{"xa":"s","xb":1}',
      '{"xb":1}',
      '{"xa":"s","xc":1}',
      '{"xa":"s","xa":1}',
    ]);
  });
  it("declared names that need escapes are never repeated as additional keys", async () => {
    const g = await compile({ type: "object", properties: { 'q"k': { type: "integer" } }, additionalProperties: { type: "string" } });
    expect(oracles.oracle.accepts(g, '{"q\\"k":1,"x":"y"}')).toBe(true);
    expect(oracles.oracle.accepts(g, '{"q\\"k":1,"q\\"k":"y"}')).toBe(false);
  });
  it("minProperties/maxProperties bound the additional properties", async () => {
    const texts = ["{}", '{"a":1}', '{"a":1,"b":2}', '{"a":1,"b":2,"c":3}', '{"a":1,"b":2,"c":3,"d":4}'];
    await agrees({ type: "object", additionalProperties: { type: "integer" }, minProperties: 1, maxProperties: 3 }, texts);
    await agrees({ type: "object", maxProperties: 2 }, texts);
    await agrees({ type: "object", properties: { a: { type: "integer" } }, required: ["a"], additionalProperties: { type: "integer" }, minProperties: 2, maxProperties: 3 }, texts);
    expect(() => jsonSchemaGrammar({ type: "object", minProperties: 3, maxProperties: 2 })).toThrow(/minProperties 3/);
  });
  it("a map (additionalProperties only) and a bare object", async () => {
    await agrees({ type: "object", additionalProperties: { type: "number" } }, ['{"a":1,"b":2.5}', '{"a":"x"}', "{}"]);
    const any = await compile({ type: "object" });
    expect(oracles.oracle.accepts(any, '{"a":[1,{"b":null}],"c":"d"}')).toBe(true);
  });
});

describe("arrays", () => {
  it("minItems/maxItems", () => agrees({ type: "array", items: { type: "integer" }, minItems: 1, maxItems: 3 }, ["[]", "[1]", "[1,2]", "[1, 2, 3]", "[1,2,3,4]", '["a"]']));
  it("prefixItems and items: false (zod's tuple)", () =>
    agrees({ type: "array", prefixItems: [{ type: "string" }, { type: "boolean" }], items: false, minItems: 2, maxItems: 2 }, ['["a",true]', '["a"]', '["a",true,1]', "[true,\"a\"]"]));
  it("prefixItems then more items", () =>
    agrees({ type: "array", prefixItems: [{ const: "x" }], items: { type: "integer" }, minItems: 2 }, ['["x",1]', '["x",1,2,3]', '["x"]', '["y",1]']));
  it("draft-04 tuples", () =>
    agrees({ type: "array", items: [{ type: "integer" }], additionalItems: false }, ["[1]", "[1,2]", '["a"]'], (v) => Array.isArray(v) && v.length === 1 && Number.isInteger(v[0])));
  it("large maxItems", async () => {
    const g = await compile({ type: "array", items: { const: 0 }, maxItems: 5000 });
    expect(oracles.oracle.accepts(g, `[${Array(1200).fill(0).join(",")}]`)).toBe(true);
  });
});

describe("combinations", () => {
  it("$ref/$defs, recursion, definitions and refs with keywords beside them", async () => {
    await agrees(
      {
        $defs: { node: { type: "object", properties: { v: { type: "integer" }, next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] } }, required: ["v", "next"] } },
        $ref: "#/$defs/node",
      },
      ['{"v":1,"next":null}', '{"v":1,"next":{"v":2,"next":null}}', '{"v":1,"next":{"v":2}}'],
    );
    await agrees({ definitions: { n: { type: "integer" } }, type: "object", properties: { x: { $ref: "#/definitions/n", minimum: 3 } }, required: ["x"] }, ['{"x":3}', '{"x":2}']);
  });
  it("anyOf/oneOf with keywords around them, allOf merged, nullable, type lists", async () => {
    await agrees({ type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, anyOf: [{ required: ["a"] }, { required: ["b"] }] }, ['{"a":1}', '{"b":1}', "{}"]);
    await agrees({ allOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { properties: { b: { type: "integer", maximum: 3 } }, required: ["b"] }] }, [
      '{"a":"x","b":3}',
      '{"a":"x","b":4}',
      '{"a":"x"}',
    ]);
    await agrees({ type: "string", nullable: true, maxLength: 1 }, ["null", '"a"', '"ab"']);
    await agrees({ type: ["integer", "null"], minimum: 2 }, ["null", "2", "1"]);
  });
  it("a property named __proto__ is a property like any other, merged too", async () => {
    const schema = JSON.parse('{"allOf":[{"type":"object","properties":{"__proto__":{"type":"integer"}},"required":["__proto__"]},{"properties":{"__proto__":{"maximum":3}}}]}');
    const g = await compile(schema);
    expect(oracles.oracle.accepts(g, '{"__proto__":3}')).toBe(true);
    expect(oracles.oracle.accepts(g, '{"__proto__":4}')).toBe(false);
    expect(oracles.oracle.accepts(g, "{}")).toBe(false);
  });
  it("enum and const (any JSON value), the enum filtered by type", async () => {
    await agrees({ enum: ["a", 1, null, { k: [1] }] }, ['"a"', "1", "null", '{"k":[1]}', '"b"']);
    await agrees({ type: "string", enum: ["a", 1] }, ['"a"', "1"]);
    await agrees({ const: "x" }, ['"x"', '"y"']);
  });
  it("keywords that cannot be enforced are ignored", async () => {
    const g = await compile({ type: "array", items: { type: "integer", multipleOf: 3 }, uniqueItems: true, contains: { const: 1 }, not: { const: [] } });
    expect(oracles.oracle.accepts(g, "[1,1,2]")).toBe(true);
  });
  it("any value: {}, true, annotations only", async () => {
    for (const s of [{}, true, { description: "anything", title: "x" }]) {
      const g = await compile(s);
      for (const t of ['"s"', "1", "null", "[true]", '{"a":{}}']) expect(oracles.oracle.accepts(g, t), `${JSON.stringify(s)} ${t}`).toBe(true);
    }
  });
  it("schemas that are not schemas, or that no value satisfies, are InvalidSchemaError", () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ type: "nope" }, /invalid type "nope"/],
      [{ type: "object", properties: 5 }, /properties must be an object/],
      [{ $ref: "#/$defs/missing" }, /\$ref "#\/\$defs\/missing" does not point into the schema/],
      [{ enum: [] }, /enum must be a non-empty array/],
      [{ type: "string", enum: [1] }, /no enum value has the type "string"/],
      [false, /the schema false accepts no value/],
      [{ allOf: [{ type: "string" }, { type: "integer" }] }, /no value has/],
      [{ type: "array", minItems: 3, maxItems: 2 }, /minItems 3/],
      [{ anyOf: [] }, /anyOf must be a non-empty array/],
      [5, /a schema must be an object or a boolean/],
    ];
    for (const [schema, msg] of bad) expect(() => jsonSchemaGrammar(schema), JSON.stringify(schema)).toThrow(msg);
  });
  it("a schema nested deeper than the compiler goes is an error, not a crash", () => {
    let s: object = { type: "integer" };
    for (let i = 0; i < 300; i++) s = { type: "array", items: s };
    expect(() => jsonSchemaGrammar(s)).toThrow(/nested too deeply/);
    // A $ref whose target refers to itself with keywords beside it: merging never ends.
    const loop = { $defs: { a: { $ref: "#/$defs/a", minimum: 1 } }, $ref: "#/$defs/a", minimum: 2 };
    expect(() => jsonSchemaGrammar(loop)).toThrow(InvalidSchemaError);
    // Patterns nested thousands of groups deep are ignored, huge counts refused or ignored.
    expect(jsonSchemaGrammar({ type: "string", pattern: `${"(".repeat(5000)}a${")".repeat(5000)}` })).toContain("root");
    expect(() => jsonSchemaGrammar({ type: "string", minLength: 1e300 })).toThrow(InvalidSchemaError);
    expect(jsonSchemaGrammar({ type: "string", pattern: "^a{999999}$", format: "date" })).toContain("root");
    expect(() => jsonSchemaGrammar({ type: "number", minimum: 1e308 })).toThrow(InvalidSchemaError);
    expect(jsonSchemaGrammar({ type: "number", minimum: -1e308, maximum: 5e-324, multipleOf: 1e-300 })).toContain("root");
  });
});
