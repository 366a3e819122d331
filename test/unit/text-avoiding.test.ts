// A raw value's grammar (text-avoiding.ts: text in which none of some patterns matches) against
// JavaScript's own regular expressions: llama.cpp's grammar engine must take a random text exactly
// when no pattern matches anywhere in it. And through the tool_choice shape of LFM2, whose reader
// ends a raw string at a quote followed by `)` or `, name=`: a value with quotes elsewhere (a
// quoted word, `' `, `',x`) is allowed and reads back whole.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { markupGrammar } from "../../src/backends/llamacpp/markup-grammar.js";
import { selectTemplate } from "../../src/daemon/prompt/render.js";
import { toolCallFormat } from "../../src/daemon/prompt/tool-choice.js";
import { RAW_STRING_ENDS } from "../../src/daemon/prompt/tool-call-syntax.js";
import { toolDialect } from "../../src/daemon/prompt/tool-dialect.js";
import { toolCallParser } from "../../src/daemon/prompt/tool-markup.js";
import { testGrammarOracle } from "../helpers/grammar-oracle.js";

const oracles = testGrammarOracle();

function lcg(seed: number) {
  let s = seed;
  return (n: number) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return (s >>> 8) % n;
  };
}

// `near`: pieces of the patterns, so that near misses are common
const CASES: Array<{ free: string[]; patterns: string[]; alphabet: string[]; near: string[] }> = [
  {
    free: ["<|tool_call_end|>"],
    patterns: [...RAW_STRING_ENDS],
    alphabet: ["'", " ", "\t", "\n", ")", ",", "=", "a", "_", "1", ".", "-", "<", "|", "t", "o", "l", "c", "e", "n", "d", ">", "é"],
    near: ["' )", "', b=", "',b ", "'  ,  x_1 =", "<|tool_call_", "_end|>"],
  },
  { free: ["</parameter>", "<parameter="], patterns: [], alphabet: ["<", "/", "p", "a", "r", "m", "e", "t", ">", "=", "x", " "], near: ["</param", "eter>", "<parameter"] },
  { free: [], patterns: ["ab*c", "x{2,3}y", "(?:q|rs)+!"], alphabet: ["a", "b", "c", "x", "y", "q", "r", "s", "!", "z", "z", "z"], near: ["ab", "bbc", "xx", "xxx", "rs", "q!"] },
];

describe("text avoiding patterns, against JavaScript's regular expressions", () => {
  it.each(CASES.map((c, i) => [i, c] as const))("case %i: llama.cpp's grammar engine takes a text exactly when no pattern matches in it", async (_i, c) => {
    const g = await oracles.oracle.grammar(markupGrammar([{ text: "<" }, { free: c.free, patterns: c.patterns }, { text: ">" }]));
    const escaped = c.free.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const any = new RegExp([...escaped, ...c.patterns].join("|"));
    const pick = lcg(7);
    let taken = 0;
    let refused = 0;
    const wrong: string[] = [];
    for (let k = 0; k < 1500; k++) {
      const pieces = [...c.free, ...c.near];
      const text = Array.from({ length: 1 + pick(8) }, () => (pick(4) === 0 ? pieces[pick(pieces.length)]! : c.alphabet[pick(c.alphabet.length)]!)).join("");
      const expected = !any.test(text);
      const got = oracles.oracle.accepts(g, `<${text}>`);
      if (got !== expected) wrong.push(`${JSON.stringify(text)}: engine ${got}, regex ${expected}`);
      if (expected) taken++;
      else refused++;
    }
    expect(wrong).toEqual([]);
    // both sides of the line were exercised
    expect(taken).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });
});

describe("LFM2's raw strings under tool_choice", () => {
  const template = selectTemplate(undefined, readFileSync(path.resolve(__dirname, "../fixtures/chat-templates/LFM2.5-8B-A1B.jinja"), "utf8"), "<s>", "</s>");
  const dialect = toolDialect(template);
  const tools = [{ type: "function", function: { name: "say", parameters: { type: "object", properties: { text: { type: "string" }, n: { type: "integer" } }, required: ["text"] } } }];

  it.each([
    ["a 'quoted' word", "a 'quoted' word"],
    ["it' s", "it' s"],
    ["x',y", "x',y"],
    ["say 'hi', ok", "say 'hi', ok"],
    ["tabs'\tand' \n lines", "tabs'\tand' \n lines"],
  ])("%j: the grammar takes it and the reader reads it back", async (value, want) => {
    const format = toolCallFormat({ name: "say" }, tools, template);
    if (format?.kind !== "markup") throw new Error("no markup shape for LFM2");
    const g = await oracles.oracle.grammar(markupGrammar(format.pieces));
    const call = `<|tool_call_start|>[say(text='${value}', n=2)]<|tool_call_end|>`;
    expect(oracles.oracle.accepts(g, call)).toBe(true);
    const parser = toolCallParser(dialect, tools);
    const a = parser.add(call);
    const b = parser.flush();
    expect([...a.calls, ...b.calls].map((c) => c.function.arguments)).toEqual([{ text: want, n: 2 }]);
    expect(a.content + b.content).toBe("");
  });

  it("a value that would end the string early is refused: a quote then `)`, or then `, name=`", async () => {
    const format = toolCallFormat({ name: "say" }, tools, template);
    if (format?.kind !== "markup") throw new Error("no markup shape for LFM2");
    const g = await oracles.oracle.grammar(markupGrammar(format.pieces));
    for (const value of ["a' )", "a', n=", "a'\n,\tx.y ="]) {
      expect(oracles.oracle.accepts(g, `<|tool_call_start|>[say(text='${value}')]<|tool_call_end|>`), value).toBe(false);
    }
  });
});
