// Fitting a rendered prompt into the context (Ollama's truncate / shift rules, runner side).
import { describe, expect, it } from "vitest";
import type { Token } from "node-llama-cpp";
import { PROMPT_TOO_LONG } from "../../src/backends/errors.js";
import { fitPrompt } from "../../src/backends/llamacpp/generate.js";

const seq = (n: number) => Array.from({ length: n }, (_, i) => i as Token); // token 0 plays BOS

describe("fitPrompt", () => {
  it("a prompt of at most num_ctx - 1 tokens is untouched", () => {
    expect(fitPrompt(seq(255), 256)).toHaveLength(255);
  });
  it("a longer one keeps num_keep (+BOS) tokens and the newest rest, ending at num_ctx - (num_ctx - keep)/2", () => {
    const out = fitPrompt(seq(600), 256, { numKeep: 4, bos: 0 as Token });
    expect(out).toHaveLength(256 - Math.floor((256 - 5) / 2));
    expect(out.slice(0, 5)).toEqual([0, 1, 2, 3, 4]);
    expect(out.at(-1)).toBe(599);
    expect(out[5]).toBe(600 - (out.length - 5));
  });
  it("num_keep -1 keeps the beginning", () => {
    expect(fitPrompt(seq(600), 256, { numKeep: -1, bos: 0 as Token })).toEqual(seq(255));
  });
  it("with shift or truncate off a prompt that does not fit is Ollama's error", () => {
    expect(() => fitPrompt(seq(600), 256, { shift: false })).toThrow(PROMPT_TOO_LONG);
    expect(() => fitPrompt(seq(600), 256, { truncate: false })).toThrow(PROMPT_TOO_LONG);
    expect(fitPrompt(seq(100), 256, { shift: false, truncate: false })).toHaveLength(100);
  });
});
