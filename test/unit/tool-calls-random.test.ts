// Tool calls with random tools and values through every real chat template: the call a template
// writes (what its model was trained to write) must read back as the same arguments, typed as
// sent, whatever the values hold (quotes, apostrophes, line breaks at either end, brackets, tags'
// characters, lists and dicts); and on a model whose calls are markup, the tool_choice grammar
// must take that same call. Seeded: the same cases on every run (TOOL_CALLS_SEED and
// TOOL_CALLS_ROUNDS run others, and more of them).
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/api/types.js";
import { compileLlamaFormat } from "../../src/backends/llamacpp/json-schema.js";
import { markupGrammar } from "../../src/backends/llamacpp/markup-grammar.js";
import { renderPrompt, selectTemplate, type PromptTemplate, type RenderMessage } from "../../src/daemon/prompt/render.js";
import { toolCallFormat } from "../../src/daemon/prompt/tool-choice.js";
import { afterPrompt, toolDialect, type ToolDialect } from "../../src/daemon/prompt/tool-dialect.js";
import { toolCallParser } from "../../src/daemon/prompt/tool-markup.js";
import { testGrammarOracle } from "../helpers/grammar-oracle.js";

const oracles = testGrammarOracle();
const DIR = process.env.JINJA_TEMPLATES_DIR ? path.resolve(process.env.JINJA_TEMPLATES_DIR) : path.resolve(__dirname, "../fixtures/chat-templates");
const TEMPLATES = readdirSync(DIR)
  .filter((f) => f.endsWith(".jinja"))
  .sort()
  .map((f) => {
    const t = selectTemplate(undefined, readFileSync(path.join(DIR, f), "utf8"), "<s>", "</s>");
    return { f, t, d: toolDialect(t) };
  });

/** A linear congruential generator's high bits: the same cases on every run. */
function random(seed: number) {
  let s = seed;
  const next = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) >>> 8) / (1 << 23);
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(a: readonly T[]): T => a[int(a.length)]!;
  return { next, int, pick };
}
type Rng = ReturnType<typeof random>;

// what values hold in real calls: code, paths, prose with apostrophes, markup's own characters
const CHARS = ["a", "Z", " ", "é", "日", "😀", '"', "'", "\\", "\n", "\t", "{", "}", "[", "]", ",", ":", "=", "<", ">", "/", "&", "0", "-", ".", "_"];
const word = (r: Rng) => r.pick(["a", "b", "x"]) + Array.from({ length: r.int(7) }, () => r.pick(["a", "c", "_", "1", "Z"])).join("");
const text = (r: Rng) => Array.from({ length: r.int(12) }, () => r.pick(CHARS)).join("");

type Schema = Record<string, unknown>;
function valueOf(r: Rng, depth: number): [Schema, unknown] {
  switch (r.int(depth > 1 ? 6 : 8)) {
    case 0:
      return [{ type: "string" }, text(r)];
    case 1:
      return [{ type: "integer" }, r.int(2000) - 1000];
    case 2:
      return [{ type: "number" }, Math.round(r.next() * 20000 - 10000) / 100];
    case 3:
      return [{ type: "boolean" }, r.next() < 0.5];
    case 4: {
      const e = [word(r), word(r), "two words"];
      return [{ type: "string", enum: e }, r.pick(e)];
    }
    case 5:
      return [{ type: "string" }, word(r)];
    case 6: {
      const [items, v] = valueOf(r, depth + 1);
      return [{ type: "array", items }, r.int(3) === 0 ? [] : [v]];
    }
    default:
      return objectOf(r, depth + 1);
  }
}
function objectOf(r: Rng, depth: number): [Schema, Record<string, unknown>] {
  const properties: Record<string, Schema> = {};
  const value: Record<string, unknown> = {};
  const required: string[] = [];
  for (let i = 1 + r.int(3); i > 0; i--) {
    const k = word(r);
    if (Object.hasOwn(properties, k)) continue;
    [properties[k], value[k]] = valueOf(r, depth);
    if (r.next() < 0.6) required.push(k);
  }
  return [{ type: "object", properties, required }, value];
}

/** The template's text for the assistant's call, past the generation prompt. */
function written(t: PromptTemplate, tools: unknown[], name: string, args: Record<string, unknown>): string | undefined {
  const user: RenderMessage = { role: "user", content: "What is the weather?" };
  const call: RenderMessage = { role: "assistant", content: "", tool_calls: [{ id: "abcdefgh0", function: { name, arguments: args } }] };
  try {
    const asked = renderPrompt(t, { messages: [user], tools });
    const answered = renderPrompt(t, { messages: [user, call], tools });
    const u = user.content;
    return afterPrompt(asked.slice(asked.indexOf(u) + u.length), answered.slice(answered.indexOf(u) + u.length)).replace(/^\s*(?:<think>[\s\S]*?<\/think>|<\/think>)/, "");
  } catch {
    return undefined;
  }
}

/** `text` streamed through the dialect's parser in pieces of 1–5 characters: the calls, and the content. */
function stream(d: ToolDialect, tools: unknown[], text: string, r: Rng): { calls: ToolCall[]; content: string } {
  const p = toolCallParser(d, tools as never);
  const calls: ToolCall[] = [];
  let content = "";
  const take = (step: { calls: ToolCall[]; content: string }) => {
    calls.push(...step.calls);
    content += step.content;
  };
  for (let i = 0; i < text.length; ) {
    const n = 1 + r.int(5);
    take(p.add(text.slice(i, i + n)));
    i += n;
  }
  take(p.flush());
  return { calls, content };
}
const readBack = (d: ToolDialect, tools: unknown[], text: string, r: Rng): ToolCall[] => stream(d, tools, text, r).calls;

/** JSON with objects' keys sorted: a template may write them in its own order (Gemma 4 sorts). */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));

describe("tool calls with random tools and values, in every template's syntax", () => {
  it("read back as sent, and a markup model's tool_choice grammar takes the call its template writes", async () => {
    const r = random(Number(process.env.TOOL_CALLS_SEED ?? 20261204));
    const unread: string[] = [];
    const refused: string[] = [];
    let read = 0;
    let taken = 0;
    for (let round = 0; round < Number(process.env.TOOL_CALLS_ROUNDS ?? 12); round++) {
      for (const { f, t, d } of TEMPLATES) {
        const [parameters, args] = objectOf(r, 0);
        const name = `${word(r)}_${round}`;
        const tools = [
          { type: "function", function: { name, description: "a tool", parameters } },
          { type: "function", function: { name: "other_tool", parameters: { type: "object", properties: { q: { type: "string" } } } } },
        ];
        const call = written(t, tools, name, args);
        if (call === undefined || !call.includes(name)) continue; // a template that shows no calls
        const got = readBack(d, tools, call, r).map((c) => [c.function.name, c.function.arguments]);
        if (canonical(got) !== canonical([[name, args]])) {
          unread.push(`${f}: sent ${JSON.stringify(args)}, read ${JSON.stringify(got)} from ${JSON.stringify(call)}`);
          continue;
        }
        read++;
        // the call exactly as the template writes it, nested values in its own syntax too
        if (d.kind === "json" || d.kind === "named-json") continue;
        const format = toolCallFormat({ name }, tools, t);
        if (format?.kind !== "markup") throw new Error(`${f}: no markup shape`);
        const g = await oracles.oracle.grammar(markupGrammar(format.pieces));
        const section = d.kind === "recipient" ? call : call.slice(call.indexOf(d.start));
        const took = oracles.oracle.longestAccepted(g, section);
        if (took === undefined || section.slice(took.length).includes(name)) refused.push(`${f}: ${JSON.stringify(section)}`);
        else taken++;
      }
    }
    expect(unread).toEqual([]);
    expect(refused).toEqual([]);
    expect(read).toBeGreaterThan(600);
    expect(taken).toBeGreaterThan(150);
  });
});

// what mutations insert: the characters markup and values are made of
const MUT = ["\n", " ", "'", '"', ",", ")", "(", "=", "<", ">", "/", "]", "[", "}", "{", ":", "\\", "x", "\t", "</", "<|", "|>", "\n\n"];

/** Whether `v` is a value of `schema` (the schemas objectOf makes). */
function typed(schema: Schema, v: unknown): boolean {
  if (Array.isArray(schema.enum)) return schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v));
  switch (schema.type) {
    case "string":
      return typeof v === "string";
    case "integer":
      return typeof v === "number" && Number.isInteger(v);
    case "number":
      return typeof v === "number";
    case "boolean":
      return typeof v === "boolean";
    case "array":
      return Array.isArray(v) && v.every((x) => typed(schema.items as Schema, x));
    case "object": {
      if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const req = (schema.required ?? []) as string[];
      return Object.entries(v).every(([k, x]) => Object.hasOwn(props, k) && typed(props[k]!, x)) && req.every((k) => Object.hasOwn(v, k));
    }
    default:
      return true;
  }
}

describe("what a tool_choice grammar lets a model write, the reader reads", () => {
  // The other direction of the test above: the grammar must take nothing the reader misreads.
  // Calls as templates write them (as compact JSON where the call is JSON), mutated (structure
  // characters inserted, spans cut or repeated); each mutant llama.cpp's grammar engine takes
  // under tool_choice "required" must read back as one call of an offered tool, its arguments
  // typed by that tool's schema, and no content. Found: MiniMax-M3's value holding `<key>` text
  // lost every argument; Seed-OSS's enum word read back as "\nword".
  it("mutated calls the grammar takes read back as one call, typed by the schema", async () => {
    const r = random(Number(process.env.TOOL_CALLS_SEED ?? 20261204) + 1);
    const bad: string[] = [];
    let taken = 0;
    let tried = 0;
    for (let round = 0; round < Number(process.env.TOOL_CALLS_ROUNDS ?? 12); round++) {
      for (const { f, t, d } of TEMPLATES) {
        if (d.kind === "named-json" || d.kind === "recipient") continue;
        const [parameters, args] = objectOf(r, 0);
        const name = `${word(r)}_${round}`;
        const [p2] = objectOf(r, 0); // a second tool: "required" lets the model pick either
        const tools = [{ type: "function", function: { name, description: "a tool", parameters } }, { type: "function", function: { name: "zz_other", description: "another", parameters: p2 } }];
        const call = written(t, tools, name, args);
        if (call === undefined || !call.includes(name)) continue;
        const format = toolCallFormat("required", tools, t);
        if (format === undefined) continue;
        const spec = compileLlamaFormat(format);
        if (spec.kind !== "gbnf") continue;
        const g = await oracles.oracle.grammar(spec.grammar);
        let took: string | undefined;
        if (d.kind === "json") {
          const pre = format.kind === "schema" ? (format.prefix ?? "") : "";
          for (const key of ["arguments", "parameters"]) {
            const text = pre + JSON.stringify({ name, [key]: args });
            if (oracles.oracle.accepts(g, text)) took = text;
          }
        } else {
          const section = call.slice(call.indexOf(d.start));
          took = oracles.oracle.longestAccepted(g, section);
        }
        if (took === undefined) continue;
        for (let m = 0; m < 40; m++) {
          let s = took;
          for (let k = 1 + (r.int(4) === 0 ? 1 : 0); k > 0; k--) {
            const at = r.int(s.length + 1);
            const op = r.int(5) < 3 ? 0 : r.int(2) + 1;
            if (op === 0) s = s.slice(0, at) + r.pick(MUT) + s.slice(at);
            else if (op === 1) s = s.slice(0, at) + s.slice(at + 1 + r.int(3));
            else s = s.slice(0, at) + s.slice(at, at + 1 + r.int(6)) + s.slice(at);
          }
          tried++;
          if (!oracles.oracle.accepts(g, s)) continue;
          taken++;
          const got = stream(d, tools, s, r);
          const c = got.calls[0]?.function;
          const fits = c !== undefined && (c.name === name ? typed(parameters, c.arguments) : c.name === "zz_other" && typed(p2, c.arguments));
          const ok = got.calls.length === 1 && fits && got.content.trim() === "";
          if (!ok) bad.push(`${f}: ${JSON.stringify(s)} → ${JSON.stringify(got)}`);
        }
      }
    }
    expect(bad).toEqual([]);
    expect(tried).toBeGreaterThan(5000);
    expect(taken).toBeGreaterThan(250); // mutants inside values, mostly: the grammar refuses the rest
  });
});

describe("values as templates write them", () => {
  const load = (f: string) => TEMPLATES.find((x) => x.f === f)!;
  const TOOL = (properties: Record<string, Schema>) => [{ type: "function", function: { name: "write_file", parameters: { type: "object", properties } } }];
  const roundTrip = (f: string, properties: Record<string, Schema>, args: Record<string, unknown>) => {
    const { t, d } = load(f);
    const tools = TOOL(properties);
    const call = written(t, tools, "write_file", args)!;
    return { call, got: readBack(d, tools, call, random(1)).map((c) => c.function.arguments) };
  };

  it("a file's last line break, written through GLM's, DeepSeek's and Laguna's tags, is kept; Qwen3-Coder's padding is not the value's", () => {
    const content = "line one\nline two\n";
    for (const f of ["GLM-4.7-Flash.jinja", "deepseek-ai-DeepSeek-V4.jinja", "poolside-Laguna-S-2.1.jinja", "tencent-Hy3.jinja", "MiniMax-M2.jinja"]) {
      expect(roundTrip(f, { content: { type: "string" } }, { content }).got, f).toEqual([{ content }]);
      expect(roundTrip(f, { content: { type: "string" } }, { content: "\nindented" }).got, f).toEqual([{ content: "\nindented" }]);
    }
    const q = roundTrip("Qwen3-Coder.jinja", { content: { type: "string" } }, { content });
    expect(q.call).toContain(`<parameter=content>\n${content}\n</parameter>`);
    expect(q.got).toEqual([{ content }]);
  });

  it("a list or dict a template prints with {{ value }} (Seed-OSS, MiniCPM) is read as a Python literal", () => {
    const props = { paths: { type: "array", items: { type: "string" } }, opts: { type: "object" }, force: { type: "boolean" } };
    const args = { paths: ["a.txt", "it's.md"], opts: { mode: "w", lines: [1, 2], ok: true, none: null }, force: false };
    for (const f of ["ByteDance-Seed-OSS.jinja", "openbmb-MiniCPM5-1B.jinja"]) {
      const { call, got } = roundTrip(f, props, args);
      expect(call, f).toContain("['a.txt', \"it's.md\"]");
      expect(got, f).toEqual([args]);
    }
  });

  it("MiniCPM's CDATA around a value with <, & or a line break is not the value's", () => {
    const { call, got } = roundTrip("openbmb-MiniCPM5-1B.jinja", { content: { type: "string" } }, { content: "a < b && c\n" });
    expect(call).toContain("<![CDATA[a < b && c\n]]>");
    expect(got).toEqual([{ content: "a < b && c\n" }]);
  });

  it("LFM2 writes strings raw between single quotes: apostrophes, backslashes and line breaks read back", () => {
    const props = { message: { type: "string" }, path: { type: "string" }, n: { type: "integer" } };
    const args = { message: "It's done, isn't it?\nYes, n=3)", path: "C:\\new\\table", n: 2 };
    const { call, got } = roundTrip("LFM2.5-8B-A1B.jinja", props, args);
    expect(call).toContain("message='It's done, isn't it?\nYes, n=3)'");
    expect(got).toEqual([args]);
  });

  it("text written around the calls is content: before them in most templates, after them in Gemma 4's", () => {
    const content = "I'll look <that> up: [now] {ok}";
    const args = { path: "a.txt" };
    for (const f of ["google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it-interleaved.jinja", "Qwen3-Coder.jinja", "GLM-4.7-Flash.jinja", "MiniMax-M2.jinja", "LFM2.5-8B-A1B.jinja"]) {
      const { t, d } = load(f);
      const tools = TOOL({ path: { type: "string" } });
      const user: RenderMessage = { role: "user", content: "What is the weather?" };
      const call: RenderMessage = { role: "assistant", content, tool_calls: [{ id: "abcdefgh0", function: { name: "write_file", arguments: args } }] };
      const asked = renderPrompt(t, { messages: [user], tools });
      const answered = renderPrompt(t, { messages: [user, call], tools });
      // up to the end of the turn, as generation stops there
      const text = afterPrompt(asked.slice(asked.indexOf(user.content) + user.content.length), answered.slice(answered.indexOf(user.content) + user.content.length));
      const { calls, content: got } = stream(d, tools, text, random(2));
      expect(calls.map((c) => c.function.arguments), f).toEqual([args]);
      expect(got, f).toContain(content);
      expect(got, f).not.toMatch(/tool_call|write_file/);
    }
  });

  it("MiniMax-M3's empty list and nested values are typed by their schemas", () => {
    const props = { tags: { type: "array", items: { type: "string" } }, opts: { type: "object", properties: { ids: { type: "array", items: { type: "integer" } }, name: { type: "string" } } } };
    const args = { tags: [], opts: { ids: [], name: "42" } };
    expect(roundTrip("MiniMax-M3.jinja", props, args).got).toEqual([args]);
  });

  it("MiniMax-M3's text holding tags of its own (HTML, its parameter's name) is text: tags count only after the separator token", () => {
    const props = { html: { type: "string" }, n: { type: "integer" } };
    const args = { html: "<html><p>x</p></html> and <html> again", n: 3 };
    const { call, got } = roundTrip("MiniMax-M3.jinja", props, args);
    expect(call).toContain("<html><p>x</p></html> and <html> again]<]minimax[>[</html>");
    expect(got).toEqual([args]);
    // a model that left the token out before some tags is read by the tags alone
    const { d } = load("MiniMax-M3.jinja");
    const ns = "]<]minimax[>[";
    const mixed = `${ns}<tool_call>\n${ns}<invoke name="write_file">${ns}<html>x${ns}</html><n>3</n>${ns}</invoke>\n${ns}</tool_call>`;
    expect(stream(d, TOOL(props), mixed, random(1)).calls.map((c) => c.function.arguments)).toEqual([{ html: "x", n: 3 }]);
  });
});

describe("tool_choice's nested values in each template's own syntax", () => {
  const PARAMS = {
    type: "object",
    properties: { opts: { type: "object", properties: { mode: { type: "string", enum: ["r", "w"] }, lines: { type: "array", items: { type: "integer" } }, on: { type: "boolean" } }, required: ["mode"] } },
    required: ["opts"],
  };
  const tools = [{ type: "function", function: { name: "f", parameters: PARAMS } }];
  const grammarOf = async (f: string) => {
    const format = toolCallFormat({ name: "f" }, tools, TEMPLATES.find((x) => x.f === f)!.t);
    if (format?.kind !== "markup") throw new Error(`${f}: no markup shape`);
    return oracles.oracle.grammar(markupGrammar(format.pieces));
  };

  it("Gemma 4's own objects (bare keys, sorted, <|\"|> strings) and compact JSON; nothing else", async () => {
    const g = await grammarOf("google-gemma-4-31B-it.jinja");
    const call = (opts: string) => `<|tool_call>call:f{opts:${opts}}<tool_call|>`;
    expect(oracles.oracle.accepts(g, call('{lines:[1,2],mode:<|"|>w<|"|>,on:true}'))).toBe(true);
    expect(oracles.oracle.accepts(g, call('{"mode":"w","lines":[1, 2]}'))).toBe(true);
    expect(oracles.oracle.accepts(g, call('{mode:<|"|>w<|"|>,lines:[1,2]}'))).toBe(false); // unsorted
    expect(oracles.oracle.accepts(g, call('{lines:[1,2]}'))).toBe(false); // mode is required
    expect(oracles.oracle.accepts(g, call('{mode:<|"|>x<|"|>}'))).toBe(false); // not in the enum
  });

  it("a Python literal where the template prints {{ value }} (Seed-OSS), escapes and all", async () => {
    const g = await grammarOf("ByteDance-Seed-OSS.jinja");
    const call = (opts: string) => `<seed:tool_call>\n<function=f>\n<parameter=opts>${opts}</parameter>\n</function>\n</seed:tool_call>`;
    expect(oracles.oracle.accepts(g, call("{'mode': 'r', 'lines': [1, 2], 'on': True}"))).toBe(true);
    expect(oracles.oracle.accepts(g, call('{"mode": "r", "on": true}'))).toBe(true);
    expect(oracles.oracle.accepts(g, call("{'mode': 'r', 'on': true}"))).toBe(false); // Python's True
    const text = TOOL_ARRAY("ByteDance-Seed-OSS.jinja", ["it's", "a\\b", "line\nbreak"]);
    const gs = await oracles.oracle.grammar(markupGrammar(piecesOf(toolCallFormat({ name: "g" }, text.tools, text.t))));
    expect(text.call).toContain(`['it\\'s', 'a\\\\b', 'line\\nbreak']`.replace("'it\\'s'", `"it's"`));
    expect(oracles.oracle.longestAccepted(gs, text.section)?.length).toBe(text.section.indexOf("<seed:eos>"));
  });

  it("no newline around an enum's word where the template writes values right between their tags (Seed-OSS): it would be the value's", async () => {
    const words = [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { mode: { type: "string", enum: ["r", "w"] } }, required: ["mode"] } } }];
    const format = toolCallFormat({ name: "f" }, words, TEMPLATES.find((x) => x.f === "ByteDance-Seed-OSS.jinja")!.t);
    if (format?.kind !== "markup") throw new Error("no markup shape");
    const g = await oracles.oracle.grammar(markupGrammar(format.pieces));
    const call = (v: string) => `<seed:tool_call>\n<function=f>\n<parameter=mode>${v}</parameter>\n</function>\n</seed:tool_call>`;
    expect(oracles.oracle.accepts(g, call("w"))).toBe(true);
    expect(oracles.oracle.accepts(g, call("\nw"))).toBe(false);
    expect(oracles.oracle.accepts(g, call("w\n"))).toBe(false);
  });

  it("MiniMax-M3's nested elements", async () => {
    const g = await grammarOf("MiniMax-M3.jinja");
    const ns = "]<]minimax[>[";
    const call = (opts: string) => `${ns}<tool_call>\n${ns}<invoke name="f">${ns}<opts>${opts}${ns}</opts>${ns}</invoke>\n${ns}</tool_call>`;
    expect(oracles.oracle.accepts(g, call(`${ns}<mode>w${ns}</mode>${ns}<lines>${ns}<item>1${ns}</item>${ns}<item>2${ns}</item>${ns}</lines>`))).toBe(true);
    expect(oracles.oracle.accepts(g, call('{"mode":"w"}'))).toBe(true);
    expect(oracles.oracle.accepts(g, call(`${ns}<lines>${ns}</lines>`))).toBe(false);
  });

  it("a schema with a constraint a style would not keep stays compact JSON, which keeps it", async () => {
    const strict = [{ type: "function", function: { name: "f", parameters: { type: "object", properties: { opts: { type: "object", properties: { id: { type: "string", pattern: "^[a-z]+$" } }, required: ["id"] } }, required: ["opts"] } } }];
    const format = toolCallFormat({ name: "f" }, strict, TEMPLATES.find((x) => x.f === "google-gemma-4-31B-it.jinja")!.t);
    const g = await oracles.oracle.grammar(markupGrammar(piecesOf(format)));
    expect(oracles.oracle.accepts(g, '<|tool_call>call:f{opts:{"id":"abc"}}<tool_call|>')).toBe(true);
    expect(oracles.oracle.accepts(g, '<|tool_call>call:f{opts:{"id":"ab1"}}<tool_call|>')).toBe(false);
    expect(oracles.oracle.accepts(g, '<|tool_call>call:f{opts:{id:<|"|>abc<|"|>}}<tool_call|>')).toBe(false);
  });
});

function piecesOf(format: ReturnType<typeof toolCallFormat>) {
  if (format?.kind !== "markup") throw new Error("no markup shape");
  return format.pieces;
}

/** A call of a tool `g` with a list of strings, as the template writes it. */
function TOOL_ARRAY(f: string, items: string[]) {
  const { t, d } = TEMPLATES.find((x) => x.f === f)!;
  const tools = [{ type: "function", function: { name: "g", parameters: { type: "object", properties: { items: { type: "array", items: { type: "string" } } }, required: ["items"] } } }];
  const call = written(t, tools, "g", { items })!;
  return { t, tools, call, section: call.slice(call.indexOf((d as { start: string }).start)) };
}
