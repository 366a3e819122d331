// A grammar output's trailing whitespace: held while it may be the end, sent once text follows.
import { describe, expect, it } from "vitest";
import { TrailingWhitespace } from "../../src/backends/llamacpp/trailing-whitespace.js";

describe("TrailingWhitespace", () => {
  it("sends text at once, holds whitespace after it, and sends the held run when text follows", () => {
    const t = new TrailingWhitespace();
    expect(t.push('{"a": 1')).toBe('{"a": 1');
    expect(t.push(" \n")).toBe("");
    expect(t.push("\t")).toBe("");
    expect(t.push(' , "b"  ')).toBe(' \n\t , "b"');
    expect(t.push("}\u00a0\u2028")).toBe("  }");
    expect(t.push("")).toBe("");
  });

  it("pieces of any size give the text with its final whitespace dropped, as one regex on the whole would", () => {
    const text = '{\n  "k": [ 1,\t2 ],\r\n  "s": "x y"\u3000 }\n\n  \t';
    for (const size of [1, 2, 3, 5, text.length]) {
      const t = new TrailingWhitespace();
      let out = "";
      for (let i = 0; i < text.length; i += size) out += t.push(text.slice(i, i + size));
      expect(out).toBe(text.replace(/\s+$/u, ""));
    }
  });

  it("a whitespace run without end is held in pieces, and comes out whole when text follows", () => {
    const t = new TrailingWhitespace();
    for (let i = 0; i < 200_000; i++) expect(t.push("\n ")).toBe("");
    expect(t.push("}")).toBe("\n ".repeat(200_000) + "}");
  });
});
