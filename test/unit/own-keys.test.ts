// Names that come from outside (a request's keep_alive unit, option keys, tool_choice words, a
// Modelfile PARSER, a template's filter, an upstream's Content-Encoding, a model directory's
// architecture) are looked up in tables: an object's inherited keys ("constructor", "toString",
// "__proto__") are not entries. Before, "5constructor" was a keep_alive of NaN, tool_choice
// "constructor" forced a call, and `Content-Encoding: constructor` reached a stream pipeline.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { parseGoDurationStrict } from "../../src/cli/duration.js";
import { parseGoDuration, parseKeepAliveRequest } from "../../src/config.js";
import { resolveOptions } from "../../src/daemon/options.js";
import { renderPrompt, selectTemplate } from "../../src/daemon/prompt/render.js";
import { parseToolChoice } from "../../src/daemon/prompt/tool-choice.js";
import { decodedBody, UnknownEncodingError } from "../../src/http/content-encoding.js";
import { planConversion } from "../../src/registry/hf-convert.js";
import { jsonSchemaGrammar } from "../../src/backends/llamacpp/json-schema-grammar.js";

const INHERITED = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"];

describe("names from outside are never an object's inherited keys", () => {
  it("durations: an inherited name is an unknown unit", () => {
    for (const unit of INHERITED) {
      expect(() => parseGoDuration(`5${unit}`)).toThrow(/unknown unit/);
      expect(() => parseKeepAliveRequest(`5${unit}`)).toThrow(/unknown unit/);
      expect(() => parseGoDurationStrict(`5${unit}`)).toThrow(/unknown unit/);
    }
    expect(parseGoDuration("5m")).toBe(300_000);
  });

  it("option keys and tool_choice words", () => {
    const defaults = { numCtx: 4096, cores: 2 } as Parameters<typeof resolveOptions>[0];
    for (const key of INHERITED) {
      expect(() => resolveOptions(defaults, undefined, JSON.parse(`{"${key}": 1, "temperature": 0.5}`))).not.toThrow();
      expect(parseToolChoice(key)).toBeUndefined();
      expect(parseToolChoice({ type: key })).toBeUndefined();
    }
    expect(parseToolChoice("required")).toBe("required");
  });

  it("a string format named like an inherited key is a format the grammar does not know: any string", () => {
    for (const format of INHERITED) expect(jsonSchemaGrammar({ type: "string", format })).toBe(jsonSchemaGrammar({ type: "string" }));
  });

  it("a template's filter named like an inherited key is unknown: a 400", () => {
    for (const name of INHERITED.filter((n) => n !== "__proto__")) {
      const t = selectTemplate(undefined, `{{ messages[0].content | ${name} }}`, "", "");
      let status = 0;
      try {
        renderPrompt(t, { messages: [{ role: "user", content: "hi" }] });
      } catch (err) {
        status = (err as { status?: number }).status ?? -1;
      }
      expect(status, name).toBe(400);
    }
  });

  it("an upstream's Content-Encoding named like an inherited key is one this server cannot read", () => {
    for (const coding of INHERITED) expect(() => decodedBody(Readable.from([Buffer.from("x")]), coding)).toThrow(UnknownEncodingError);
  });

  it("a model directory whose architecture is named like an inherited key is not one ollamats converts", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-own-"));
    try {
      for (const arch of INHERITED) {
        const file = path.join(dir, "config.json");
        await writeFile(file, JSON.stringify({ architectures: [arch] }));
        await expect(planConversion(new Map([["config.json", file]]))).rejects.toThrow(/not|unsupported|cannot/i);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
