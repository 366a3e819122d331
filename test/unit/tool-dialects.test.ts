// Tool calls in each model's own syntax, read back: every real chat template in
// test/fixtures/chat-templates writes an assistant's calls as its model was trained to write them;
// the text it writes, streamed in small pieces, must come back as the same calls, typed as sent.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/api/types.js";
import { renderPrompt, selectTemplate, type PromptTemplate, type RenderMessage } from "../../src/daemon/prompt/render.js";
import { afterPrompt, toolDialect, type ToolDialect } from "../../src/daemon/prompt/tool-dialect.js";
import { toolCallParser } from "../../src/daemon/prompt/tool-markup.js";
import { toolCallFormat } from "../../src/daemon/prompt/tool-choice.js";
import { capabilitiesOf } from "../../src/registry/model-spec.js";
import { templateFor } from "../../src/daemon/services/request.js";
import { markupGrammar } from "../../src/backends/llamacpp/markup-grammar.js";
import { testGrammarOracle } from "../helpers/grammar-oracle.js";

const oracles = testGrammarOracle();

const DIR = process.env.JINJA_TEMPLATES_DIR ? path.resolve(process.env.JINJA_TEMPLATES_DIR) : path.resolve(__dirname, "../fixtures/chat-templates");
const TEMPLATES = readdirSync(DIR).filter((f) => f.endsWith(".jinja")).sort();
const load = (f: string): PromptTemplate => selectTemplate(undefined, readFileSync(path.join(DIR, f), "utf8"), "<s>", "</s>");

const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Weather for a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string" }, days: { type: "integer" }, detailed: { type: "boolean" } },
        required: ["city"],
      },
    },
  },
  { type: "function", function: { name: "get_time", description: "The time in a zone", parameters: { type: "object", properties: { zone: { type: "string" } } } } },
];
const CALLS = [
  { name: "get_weather", arguments: { city: "San Francisco", days: 3, detailed: true } },
  { name: "get_time", arguments: { zone: "Europe/Paris" } },
];

/** What the model writes for the calls: the template's render of the assistant turn, past the
 *  generation prompt (as the probe in tool-dialect.ts reads it). */
function written(t: PromptTemplate, calls: typeof CALLS): string | undefined {
  const user: RenderMessage = { role: "user", content: "What is the weather?" };
  const assistant: RenderMessage = {
    role: "assistant",
    content: "",
    tool_calls: calls.map((c, i) => ({ id: `abcdefgh${i}`, function: { name: c.name, arguments: c.arguments } })),
  };
  let asked: string;
  let answered: string;
  try {
    asked = renderPrompt(t, { messages: [user], tools: TOOLS });
    answered = renderPrompt(t, { messages: [user, assistant], tools: TOOLS });
  } catch {
    return undefined;
  }
  const u = user.content;
  const out = afterPrompt(asked.slice(asked.indexOf(u) + u.length), answered.slice(answered.indexOf(u) + u.length));
  // the thinking parser takes an empty thinking block away before tools are read
  return out.replace(/^\s*(?:<think>[\s\S]*?<\/think>|<\/think>)/, "");
}

/** Streams `text` through the dialect's parser in pieces of 1–5 characters. */
function readBack(d: ToolDialect, text: string): { calls: ToolCall[]; content: string } {
  const p = toolCallParser(d, TOOLS);
  const calls: ToolCall[] = [];
  let content = "";
  let seed = 7;
  for (let i = 0; i < text.length; ) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const n = 1 + (seed % 5);
    const step = p.add(text.slice(i, i + n));
    calls.push(...step.calls);
    content += step.content;
    i += n;
  }
  const end = p.flush();
  calls.push(...end.calls);
  content += end.content;
  return { calls, content };
}

const GLM_LIKE: ToolDialect = { kind: "arg-pairs", start: "<tool_call>", unit: "<tool_call>", suffix: "" };

describe("tool calls in each template's own syntax", () => {
  const results = TEMPLATES.map((f) => {
    const t = load(f);
    // Two calls; one where the template takes only one (Llama 3.x's, gpt-oss's)
    const shown = (calls: typeof CALLS) => {
      const text = written(t, calls);
      return text !== undefined && calls.every((c) => text.includes(c.name) && text.includes(Object.values(c.arguments)[0] as string)) ? text : undefined;
    };
    let calls = CALLS;
    let text = shown(calls);
    if (text === undefined) text = shown((calls = CALLS.slice(0, 1)));
    return { f, t, text, calls, shows: text !== undefined, dialect: toolDialect(t) };
  });

  it("reads back, streamed, the calls every template writes", () => {
    const failed: string[] = [];
    let read = 0;
    for (const r of results) {
      if (!r.shows) continue;
      const got = readBack(r.dialect, r.text!);
      const calls = got.calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
      if (JSON.stringify(calls) !== JSON.stringify(r.calls) || got.content.includes("San Francisco")) {
        failed.push(`${r.f} (${JSON.stringify(r.dialect)}): ${JSON.stringify(calls)} content ${JSON.stringify(got.content.slice(0, 120))}`);
      } else read++;
      expect(got.calls.map((c) => c.function.index)).toEqual(got.calls.map((_, i) => i));
    }
    expect(failed).toEqual([]);
    console.log(`${read} templates read back; not shown: ${results.filter((r) => !r.shows).map((r) => r.f).join(" ")}`);
    // every template that shows calls: each syntax among the real templates is read
    expect(read).toBe(results.filter((r) => r.shows).length);
    expect(read).toBeGreaterThanOrEqual(60);
  });

  it("knows each family's syntax", () => {
    const kind = (f: string) => results.find((r) => r.f === f)!.dialect;
    expect(kind("Qwen3-Coder.jinja")).toEqual({ kind: "xml-function", start: "<tool_call>" });
    expect(kind("ByteDance-Seed-OSS.jinja")).toEqual({ kind: "xml-function", start: "<seed:tool_call>", exact: true });
    expect(kind("Qwen-Qwen2.5-7B-Instruct.jinja")).toEqual({ kind: "json", tag: "<tool_call>" });
    expect(kind("meta-llama-Llama-3.1-8B-Instruct.jinja")).toEqual({ kind: "json", tag: "{" });
    expect(kind("GLM-4.6.jinja")).toEqual({ kind: "arg-pairs", start: "<tool_call>", unit: "<tool_call>", suffix: "", exact: true });
    expect(kind("tencent-Hy3.jinja")).toEqual({ kind: "arg-pairs", start: "<tool_calls:opensource>", unit: "<tool_call:opensource>", suffix: ":opensource", exact: true });
    expect(kind("MiniMax-M2.jinja")).toEqual({ kind: "invoke", ns: "", call: "invoke", param: "parameter", start: "<minimax:tool_call>", exact: true });
    expect(kind("openbmb-MiniCPM5-1B.jinja")).toEqual({ kind: "invoke", ns: "", call: "function", param: "param", start: '<function name="', exact: true });
    expect(kind("CohereForAI-c4ai-command-r-plus-tool_use.jinja")).toEqual({ kind: "json", tag: "Action:" });
    expect(kind("deepseek-ai-DeepSeek-V3.2.jinja")).toMatchObject({ kind: "invoke", ns: "｜DSML｜" });
    expect(kind("deepseek-ai-DeepSeek-V3.1.jinja")).toMatchObject({ kind: "named-json", start: "<｜tool▁calls▁begin｜>" });
    expect(kind("unsloth-mistral-Devstral-Small-2507.jinja")).toMatchObject({ kind: "named-json", start: "[TOOL_CALLS]" });
    expect(kind("google-gemma-4-31B-it.jinja")).toEqual({ kind: "gemma4", start: "<|tool_call>" });
    expect(kind("LFM2.5-8B-A1B.jinja")).toEqual({ kind: "python", start: "<|tool_call_start|>" });
    expect(kind("meetkai-functionary-medium-v3.2.jinja")).toEqual({ kind: "recipient", marker: ">>>", text: "all" });
    expect(kind("MiniMax-M3.jinja")).toEqual({ kind: "elements", start: "]<]minimax[>[<tool_call>", ns: "]<]minimax[>[", exact: true });
    expect(kind("Kimi-K3.jinja")).toEqual({ kind: "xtml", start: "<|open|>tools<|sep|>", open: "<|open|>", close: "<|close|>", sep: "<|sep|>" });
  });

  it("gives text back as content when no call follows, and holds back only what may start a call", () => {
    const p = toolCallParser({ kind: "xml-function", start: "<tool_call>" }, TOOLS);
    expect(p.add("Paris is sunny. ").content).toBe("Paris is sunny.");
    expect(p.add("<tool").content).toBe("");
    const end = p.flush();
    expect(end.content).toBe(" <tool");
    expect(end.calls).toEqual([]);
    // "call:" in prose is prose: only Gemma 4's own tag starts its calls
    const g = toolCallParser({ kind: "gemma4", start: "<|tool_call>" }, TOOLS);
    expect(g.add("I will make the call: get_weather{city:x} later.").content).toBe("I will make the call: get_weather{city:x} later.");
    const q = toolCallParser({ kind: "xml-function", start: "<tool_call>" }, TOOLS);
    const a = q.add("Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\nsoon\n</parameter>\n</function>\n</tool_call>");
    expect(a.content).toBe("Checking.");
    // "soon" is no integer: kept as text, as Ollama keeps it
    expect(a.calls.map((c) => c.function.arguments)).toEqual([{ city: "Oslo", days: "soon" }]);
  });

  it("functionary: the recipient line goes, prose to all is content, a tool's line and JSON are a call, with tools or none", () => {
    const FUNCTIONARY: ToolDialect = { kind: "recipient", marker: ">>>", text: "all" };
    const stream = (text: string, tools = TOOLS) => {
      const p = toolCallParser(FUNCTIONARY, tools);
      let content = "";
      const calls: ToolCall[] = [];
      for (let i = 0; i < text.length; i += 2) {
        const step = p.add(text.slice(i, i + 2));
        content += step.content;
        calls.push(...step.calls);
      }
      const end = p.flush();
      return { content: content + end.content, calls: [...calls, ...end.calls].map((c) => [c.function.name, c.function.arguments]) };
    };
    expect(stream('all\nLet me check >> twice.>>>get_weather\n{"city": "Rome"}>>>get_time\n{"zone": "UTC"}')).toEqual({
      content: "Let me check >> twice.",
      calls: [["get_weather", { city: "Rome" }], ["get_time", { zone: "UTC" }]],
    });
    expect(stream("all\nHello there.", [])).toEqual({ content: "Hello there.", calls: [] });
    // not addressed: the text as it stands; a name that is no tool, or no JSON after it: prose
    expect(stream("Hello, world.\nBye")).toEqual({ content: "Hello, world.\nBye", calls: [] });
    expect(stream("python\nprint(1)")).toEqual({ content: "python\nprint(1)", calls: [] });
    expect(stream("get_weather\nis sunny")).toEqual({ content: "get_weather\nis sunny", calls: [] });
    // cut off inside the arguments: given back as written
    expect(stream('get_weather\n{"city": "Ro')).toEqual({ content: 'get_weather\n{"city": "Ro', calls: [] });
  });

  it("Python calls one a line in their own element (OLMo 3) or in a python fence (MiniCPM3) are learned and read back", () => {
    // the call sections as OLMo 3's and vLLM's MiniCPM3 templates write them
    const olmo = selectTemplate(undefined, "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{% if m.tool_calls %}<function_calls>\n{% for c in m.tool_calls %}{{ c.function.name }}({% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }}{% if not loop.last %}, {% endif %}{% endfor %})\n{% endfor %}</function_calls>{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}", "", "");
    const minicpm = selectTemplate(undefined, "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{% if m.tool_calls %}<|tool_call_start|>\n```python\n{% for c in m.tool_calls %}{{ c.function.name }}({% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }}{% if not loop.last %},{% endif %}{% endfor %})\n{% endfor %}```\n<|tool_call_end|>{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}", "", "");
    expect(toolDialect(olmo)).toEqual({ kind: "python", start: "<function_calls>" });
    expect(toolDialect(minicpm)).toEqual({ kind: "python", start: "<|tool_call_start|>" });
    for (const t of [olmo, minicpm]) {
      const text = written(t, CALLS)!;
      const back = readBack(toolDialect(t), text);
      expect(back.calls.map((c) => [c.function.name, c.function.arguments])).toEqual(CALLS.map((c) => [c.name, c.arguments]));
      expect(back.content).not.toContain("get_weather"); // what is left is the turn's end token
    }
    // lowercase JSON true/false/null beside Python's, as OLMo 3's model writes them
    const read = readBack({ kind: "python", start: "<function_calls>" }, "<function_calls>\nget_weather(city='Paris', days=3, detailed=true)\n</function_calls>");
    expect(read.calls[0]!.function.arguments).toEqual({ city: "Paris", days: 3, detailed: true });
    // a bare pythonic list (vLLM's Llama 4 and Gemma 3 pythonic templates): at the start, or at the end after a blank line
    const bare: ToolDialect = { kind: "json", tag: "[" };
    const after = readBack(bare, 'Let me check both.\n\n[get_weather(city="Paris", days=3, detailed=True), get_time(zone="UTC")]');
    expect(after.calls.map((c) => c.function.name)).toEqual(["get_weather", "get_time"]);
    expect(after.content).toBe("Let me check both.\n\n");
    for (const prose of ["A list:\n\n[1, 2, 3] and [get_weather] in brackets.", "Sure. [get_weather(city='x')] inline is prose.", "See\n\n[not_a_tool(a=1)]"]) {
      expect(readBack(bare, prose)).toEqual({ calls: [], content: prose });
    }
    // JSON calls whose arguments a template printed as a Python dict (vLLM's phi4-mini and internlm2 templates)
    for (const d of [{ kind: "json", tag: "{" }, { kind: "json", tag: "<|action_start|><|plugin|>" }] as ToolDialect[]) {
      const tag = d.kind === "json" && d.tag !== "{" ? d.tag : "";
      const dict = readBack(d, `${tag}{"name": "get_weather", "arguments": {'city': 'Paris', 'days': 3, 'detailed': True}}`);
      expect(dict.calls.map((c) => c.function.arguments)).toEqual([{ city: "Paris", days: 3, detailed: true }]);
    }
  });

  it("MiniMax-M3's nested values come back as objects and lists, its leaves typed", () => {
    const t = load("MiniMax-M3.jinja");
    const call = { name: "get_weather", arguments: { city: "San Francisco", days: 3, detailed: true, opts: { units: "metric", hours: [6, 12], deep: { on: false } } } };
    const text = written(t, [call as (typeof CALLS)[number]])!;
    expect(text).toContain("]<]minimax[>[<opts>]<]minimax[>[<units>metric]<]minimax[>[</units>");
    expect(readBack(toolDialect(t), text).calls.map((c) => [c.function.name, c.function.arguments])).toEqual([[call.name, call.arguments]]);
    // nesting a model writes 20,000 deep: read to a bound, the rest kept as text, no stack overflow
    const ns = "]<]minimax[>[";
    const deep = `${ns}<tool_call>\n${ns}<invoke name="get_weather">${ns}<city>${`${ns}<a>`.repeat(20_000)}x${`${ns}</a>`.repeat(20_000)}${ns}</city>${ns}</invoke>\n${ns}</tool_call>`;
    const [got] = readBack(toolDialect(t), deep).calls;
    let depth = 0;
    for (let v: unknown = got!.function.arguments.city; typeof v === "object" && v !== null; v = (v as { a: unknown }).a) depth++;
    expect(depth).toBe(64);
  });

  it("what a parser reads does not depend on where the stream splits the text", () => {
    const PIECES = ["all\n", ">>>", ">>", "get_weather\n", "get_time\n", '{"city": "Rome"}', "{", "}", "Hi there", "\n", " ", "<tool_call>", "</tool_call>", "<function=get_weather>", "<parameter=city>", "Oslo", "</parameter>", "</function>", "<",
      "<arg_key>city</arg_key>", "<arg_value>", "</arg_value>", "<|tool_call>", "call:get_weather{city:", '<|"|>', "}", "<tool_call|>", "[TOOL_CALLS]", "get_weather[ARGS]",
      "<|tool_call_start|>", '[get_weather(city="Rome")]', "<|tool_call_end|>", '<invoke name="get_weather">', '<parameter name="city">', "</invoke>",
      // whole calls, so that every syntax meets some
      '>>>get_weather\n{"city": "Rome"}', '<|tool_call>call:get_weather{city:<|"|>Rome<|"|>}<tool_call|>', '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
      '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}', '<|tool_call_start|>[get_time(zone="UTC")]<|tool_call_end|>',
      '<|open|>call tool="get_weather" index="1"<|sep|>', '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>', "<|close|>call<|sep|>",
      "]<]minimax[>[", '<invoke name="get_weather">', "<city>", "</city>", "]<]minimax[>[</invoke>",
      ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_time">]<]minimax[>[<zone>UTC]<]minimax[>[</zone>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>',
      '<|open|>tools<|sep|><|open|>call tool="get_time" index="1"<|sep|><|open|>argument key="zone" type="string"<|sep|>UTC<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>'];
    const dialects: ToolDialect[] = [
      { kind: "recipient", marker: ">>>", text: "all" },
      { kind: "xml-function", start: "<tool_call>" },
      GLM_LIKE,
      { kind: "gemma4", start: "<|tool_call>" },
      { kind: "named-json", start: "[TOOL_CALLS]" },
      { kind: "python", start: "<|tool_call_start|>" },
      { kind: "invoke", ns: "", call: "invoke", param: "parameter", start: "<minimax:tool_call>" },
      { kind: "json", tag: "<tool_call>" },
      { kind: "xtml", start: "<|open|>tools<|sep|>", open: "<|open|>", close: "<|close|>", sep: "<|sep|>" },
      { kind: "elements", start: "]<]minimax[>[<tool_call>", ns: "]<]minimax[>[" },
    ];
    let seed = 11;
    // the high bits: an LCG's low bits repeat with a short period, and some pieces were never drawn
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), (seed >>> 12) % n);
    const read = (d: ToolDialect, chunks: string[]) => {
      const p = toolCallParser(d, TOOLS);
      let content = "";
      const calls: unknown[] = [];
      for (const c of [...chunks.map((x) => p.add(x)), p.flush()]) {
        content += c.content;
        calls.push(...c.calls.map((k) => [k.function.name, k.function.arguments]));
      }
      return { content, calls };
    };
    const withCalls = new Map<string, number>();
    for (let round = 0; round < 2000; round++) {
      const text = Array.from({ length: 1 + rand(12) }, () => PIECES[rand(PIECES.length)]).join("");
      for (const d of dialects) {
        const whole = read(d, [text]);
        const cuts: string[] = [];
        for (let i = 0; i < text.length; ) {
          const n = 1 + rand(4);
          cuts.push(text.slice(i, i + n));
          i += n;
        }
        expect(read(d, cuts), `${d.kind}: ${JSON.stringify(text)}`).toEqual(whole);
        if (whole.calls.length > 0) withCalls.set(d.kind, (withCalls.get(d.kind) ?? 0) + 1);
      }
    }
    // the texts hold calls in every syntax, not only prose
    for (const d of dialects) expect(withCalls.get(d.kind) ?? 0, d.kind).toBeGreaterThan(5);
  });

  it("an argument the model names __proto__ is an argument, in every syntax", () => {
    const read = (d: ToolDialect, text: string) => {
      const p = toolCallParser(d, TOOLS);
      return [...p.add(text).calls, ...p.flush().calls].map((c) => JSON.stringify(c.function.arguments));
    };
    const want = ['{"__proto__":"x","city":"Oslo"}'];
    expect(read({ kind: "xml-function", start: "<tool_call>" }, "<tool_call><function=get_weather><parameter=__proto__>x</parameter><parameter=city>Oslo</parameter></function></tool_call>")).toEqual(want);
    expect(read(GLM_LIKE, "<tool_call>get_weather<arg_key>__proto__</arg_key><arg_value>x</arg_value><arg_key>city</arg_key><arg_value>Oslo</arg_value></tool_call>")).toEqual(want);
    expect(read({ kind: "invoke", ns: "", call: "invoke", param: "parameter", start: "<x>" }, '<invoke name="get_weather"><parameter name="__proto__">x</parameter><parameter name="city">Oslo</parameter></invoke>')).toEqual(want);
    expect(read({ kind: "python", start: "<|tool_call_start|>" }, '<|tool_call_start|>[get_weather(__proto__="x", city="Oslo")]<|tool_call_end|>')).toEqual(want);
    expect(read({ kind: "json", tag: "{" }, '[get_weather(__proto__="x", city="Oslo")]')).toEqual(want);
  });

  it("a call cut off by the end of generation is read as far as it goes, markup or not", () => {
    const p = toolCallParser({ kind: "arg-pairs", start: "<tool_call>", unit: "<tool_call>", suffix: "" }, TOOLS);
    p.add("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome");
    expect(p.flush().calls.map((c) => [c.function.name, c.function.arguments])).toEqual([["get_weather", { city: "Rome" }]]);
    const q = toolCallParser({ kind: "named-json", start: "[TOOL_CALLS]" }, TOOLS);
    q.add('[TOOL_CALLS]get_weather[ARGS]{"city": "Ro');
    const end = q.flush();
    expect(end.calls).toEqual([]);
    expect(end.content).toBe('[TOOL_CALLS]get_weather[ARGS]{"city": "Ro');
  });

  it("tool_choice on a name-then-JSON model writes the chosen tool's header before its arguments", async () => {
    const t = load("unsloth-mistral-Devstral-Small-2507.jinja");
    const f = toolCallFormat({ name: "get_weather" }, TOOLS, t);
    expect(f).toMatchObject({ kind: "schema", prefix: "[TOOL_CALLS]get_weather[ARGS]", schema: TOOLS[0]!.function.parameters });
    // several tools left: each one's header, then its own arguments
    const any = toolCallFormat("required", TOOLS, t);
    if (any?.kind !== "markup") throw new Error("no markup shape");
    const g = await oracles.oracle.grammar(markupGrammar(any.pieces));
    const weather = '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome", "days": 2}';
    expect(oracles.oracle.accepts(g, weather)).toBe(true);
    expect(oracles.oracle.accepts(g, '[TOOL_CALLS]get_time[ARGS]{"zone": "UTC"}')).toBe(true);
    expect(oracles.oracle.accepts(g, '[TOOL_CALLS]get_weather[ARGS]{"days": 2}')).toBe(false); // city is required
    expect(oracles.oracle.accepts(g, '[TOOL_CALLS]other[ARGS]{}')).toBe(false);
    expect(readBack(toolDialect(t), weather).calls.map((c) => [c.function.name, c.function.arguments])).toEqual([["get_weather", { city: "Rome", days: 2 }]]);
  });

  it("tool_choice on a markup model: the grammar takes the call its template writes, in its own syntax, and nothing else", async () => {
    const checked: string[] = [];
    for (const r of results) {
      const d = r.dialect;
      if (!r.shows || d.kind === "json" || d.kind === "named-json") continue;
      const f = toolCallFormat({ name: "get_weather" }, TOOLS, r.t);
      if (f?.kind !== "markup") throw new Error(`${r.f}: no markup shape`);
      const g = await oracles.oracle.grammar(markupGrammar(f.pieces));
      const one = written(r.t, CALLS.slice(0, 1))!;
      const section = d.kind === "recipient" ? one : one.slice(one.indexOf(d.start));
      const taken = oracles.oracle.longestAccepted(g, section);
      // the whole call, then only what ends the turn (<|im_end|>, <turn|>)
      expect(taken, r.f).toBeDefined();
      expect(section.slice(taken!.length), r.f).not.toMatch(/get_weather|San Francisco|detailed/);
      expect(readBack(d, taken!).calls.map((c) => [c.function.name, c.function.arguments]), r.f).toEqual([["get_weather", CALLS[0]!.arguments]]);
      // not prose, not a tool it was not told to call
      expect(oracles.oracle.longestAccepted(g, "Sure, let me check the weather."), r.f).toBeUndefined();
      expect(oracles.oracle.accepts(g, section.replace("get_weather", "get_time")), r.f).toBe(false);
      checked.push(r.f);
    }
    expect(checked.length).toBeGreaterThanOrEqual(20);
    // required: either tool, and a value that is no integer where the schema wants one is refused
    const q = toolCallFormat("required", TOOLS, load("Qwen3-Coder.jinja"));
    if (q?.kind !== "markup") throw new Error("no markup shape");
    const g = await oracles.oracle.grammar(markupGrammar(q.pieces));
    const call = (name: string, params: string) => `<tool_call>\n<function=${name}>\n${params}</function>\n</tool_call>`;
    expect(oracles.oracle.accepts(g, call("get_time", "<parameter=zone>\nUTC\n</parameter>\n"))).toBe(true);
    expect(oracles.oracle.accepts(g, call("get_time", ""))).toBe(true);
    expect(oracles.oracle.accepts(g, call("get_weather", ""))).toBe(false); // city is required
    expect(oracles.oracle.accepts(g, call("get_weather", "<parameter=city>\nOslo\n</parameter>\n<parameter=days>\nsoon\n</parameter>\n"))).toBe(false);
    // a raw value cannot hold its own closing tag: the call would end there
    expect(oracles.oracle.accepts(g, call("get_weather", "<parameter=city>\na</parameter>b\n</parameter>\n"))).toBe(false);
  });

  it("a template that writes more than a call could take is not studied: its calls are read as JSON", () => {
    const call = "{% set c = m.tool_calls[0].function %}{% for i in range(2000) %}aaaaaaaaaa{% endfor %}<invoke name=\"{{ c.name }}\">{% for k, v in c.arguments.items() %}<parameter name=\"{{ k }}\">{{ v }}</parameter>{% endfor %}</invoke>";
    const huge = selectTemplate(undefined, `{% for m in messages %}{{ m.content }}{% if m.tool_calls %}${call}{% endif %}{% endfor %}`, "", "");
    expect(toolDialect(huge)).toEqual({ kind: "json", tag: "{" });
  });

  it("a long call streamed in small pieces is read whole, once", () => {
    const code = "if (a > b && c < d) { return [a]; }\n".repeat(4000);
    const p = toolCallParser({ kind: "xml-function", start: "<tool_call>" }, TOOLS);
    const text = `<tool_call>\n<function=get_weather>\n<parameter=city>\n${code}\n</parameter>\n</function>\n</tool_call>`;
    const calls: ToolCall[] = [];
    for (let i = 0; i < text.length; i += 4) calls.push(...p.add(text.slice(i, i + 4)).calls);
    calls.push(...p.flush().calls);
    expect(calls.map((c) => c.function.arguments)).toEqual([{ city: code }]);
    // the same long value in the JSON, python and Gemma 4 syntaxes, whose scans resume
    const stream = (d: ToolDialect, text: string) => {
      const q = toolCallParser(d, TOOLS);
      const out: ToolCall[] = [];
      for (let i = 0; i < text.length; i += 3) out.push(...q.add(text.slice(i, i + 3)).calls);
      out.push(...q.flush().calls);
      return out.map((c) => [c.function.name, c.function.arguments]);
    };
    const want = [["get_weather", { city: code }], ["get_time", { zone: "UTC" }]];
    expect(stream({ kind: "named-json", start: "[TOOL_CALLS]" }, `[TOOL_CALLS]get_weather[ARGS]${JSON.stringify({ city: code })}[TOOL_CALLS]get_time[ARGS]{"zone": "UTC"}`)).toEqual(want);
    expect(stream({ kind: "python", start: "<|tool_call_start|>" }, `<|tool_call_start|>[get_weather(city=${JSON.stringify(code)}), get_time(zone="UTC")]<|tool_call_end|>`)).toEqual(want);
    expect(stream({ kind: "gemma4", start: "<|tool_call>" }, `<|tool_call>call:get_weather{city:<|"|>${code}<|"|>}<tool_call|><|tool_call>call:get_time{zone:<|"|>UTC<|"|>}<tool_call|>`)).toEqual(want);
  });

  it("a Modelfile PARSER names the syntax, and the capabilities Ollama's parser of that name has", () => {
    const t = load("Qwen-Qwen2.5-7B-Instruct.jinja");
    expect(toolDialect(t, "qwen3-coder")).toEqual({ kind: "xml-function", start: "<tool_call>" });
    expect(toolDialect(t, "no-such-parser")).toEqual({ kind: "json", tag: "<tool_call>" });
    const caps = (parser: string) => capabilitiesOf({ template: "{{ .Prompt }}", config: { parser }, source: { kind: "gguf", facts: { isEmbedding: false } } as never });
    expect(caps("qwen3-coder")).toEqual(["completion", "tools"]);
    expect(caps("glm-4.7")).toEqual(["completion", "tools", "thinking"]);
    expect(caps("no-such-parser")).toEqual(["completion"]);
    // names are the user's: an object's own keys are no parsers
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      expect(caps(name)).toEqual(["completion"]);
      expect(toolDialect(t, name)).toEqual({ kind: "json", tag: "<tool_call>" });
    }
  });
});

describe("the template a conversation gets", () => {
  const spec = (facts: Record<string, unknown>, config: Record<string, unknown> = {}, template?: string) =>
    ({ template, config, source: { kind: "gguf", facts: { isEmbedding: false, ...facts }, gguf: { metadata: {} } } }) as never;

  it("with tools, the GGUF's tool_use template where it has one (Command R, Hermes), as llama.cpp chooses", () => {
    const s = spec({ chatTemplate: "plain {{ messages[0].content }}", toolUseTemplate: "tools {{ messages[0].content }}" });
    const input = { messages: [{ role: "user", content: "hi" }] };
    expect(renderPrompt(templateFor(s), input)).toBe("plain hi");
    expect(renderPrompt(templateFor(s, undefined, true), input)).toBe("tools hi");
    expect(renderPrompt(templateFor(spec({ chatTemplate: "plain {{ messages[0].content }}" }), undefined, true), input)).toBe("plain hi");
    expect(capabilitiesOf({ template: undefined, config: {}, source: { kind: "gguf", facts: { isEmbedding: false, chatTemplate: "x", toolUseTemplate: "y" } } as never })).toContain("tools");
  });

  it("a RENDERER makes the GGUF's own template stand in for the TEMPLATE; a request's template still wins", () => {
    const s = spec({ chatTemplate: "jinja {{ messages[0].content }}" }, { renderer: "qwen3-coder" }, "{{ .Prompt }}");
    const input = { messages: [{ role: "user", content: "hi" }] };
    expect(renderPrompt(templateFor(s), input)).toBe("jinja hi");
    expect(renderPrompt(templateFor(s, "go {{ .Prompt }}"), input)).toBe("go hi");
    expect(renderPrompt(templateFor(spec({ chatTemplate: "jinja {{ messages[0].content }}" }, {}, "go {{ .Prompt }}")), input)).toBe("go hi");
  });
});
