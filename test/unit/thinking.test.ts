import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { OllamaTemplate } from "../../src/template/ollama.js";
import { renderPrompt, selectTemplate } from "../../src/daemon/prompt/render.js";
import { ThinkingParser, inferThinkingTagsFromTree, stripHistoryThinking, thinkingTags } from "../../src/daemon/prompt/thinking.js";
import { capabilitiesOf } from "../../src/registry/model-spec.js";
import { answerWrapper, WrapperFilter } from "../../src/daemon/prompt/answer-wrapper.js";
import { toolDialect } from "../../src/daemon/prompt/tool-dialect.js";
import { toolCallParser } from "../../src/daemon/prompt/tool-markup.js";

const FIXTURES = path.resolve(__dirname, "../fixtures/templates");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, `${name}.gotmpl`), "utf8");
const tagsOf = (src: string) => inferThinkingTagsFromTree(OllamaTemplate.parse(src).template.root);

/** Feeds the text in pieces of `size` characters (1 = every split point) and joins the output. */
function parse(text: string, size: number, open = "<think>", close = "</think>") {
  const p = new ThinkingParser({ open, close });
  let thinking = "";
  let content = "";
  for (let i = 0; i < text.length; i += size) {
    const s = p.add(text.slice(i, i + size));
    thinking += s.thinking;
    content += s.content;
  }
  const f = p.flush();
  return { thinking: thinking + f.thinking, content: content + f.content };
}

describe("thinking tags inferred from templates (thinking/template.go)", () => {
  it("qwen3 and deepseek-r1 declare <think>…</think>", () => {
    expect(tagsOf(fixture("qwen3"))).toEqual({ open: "<think>", close: "</think>" });
    expect(tagsOf(fixture("deepseek-r1"))).toEqual({ open: "<think>", close: "</think>" });
  });
  it("templates without .Thinking in the messages range declare none", () => {
    for (const name of ["qwen2.5", "llama3.2", "mistral", "gemma3", "llama2"]) expect(tagsOf(fixture(name))).toEqual({ open: "", close: "" });
  });
  it("a .Thinking outside a range over .Messages does not count", () => {
    expect(tagsOf("{{ if .Thinking }}<t>{{ .Thinking }}</t>{{ end }}{{ .Prompt }}")).toEqual({ open: "", close: "" });
    expect(tagsOf("{{ range .Messages }}<r>{{ .Thinking }}</r>{{ .Content }}{{ end }}")).toEqual({ open: "<r>", close: "" });
    expect(tagsOf("{{ range .Messages }}{{ if .Thinking }}<r>{{ .Thinking }}</r>{{ end }}{{ end }}")).toEqual({ open: "<r>", close: "</r>" });
  });
  it("capabilities: thinking exactly when both tags are inferred; tools from .Tools; insert from .Suffix", () => {
    const caps = (template: string) => capabilitiesOf({ template, config: {}, source: { kind: "gguf", facts: { isEmbedding: false } } as never });
    expect(caps(fixture("qwen3"))).toEqual(["completion", "tools", "thinking"]);
    expect(caps(fixture("deepseek-r1"))).toEqual(["completion", "thinking"]);
    expect(caps(fixture("qwen2.5"))).toEqual(["completion", "tools"]);
    expect(caps("{{ .Prompt }}{{ .Suffix }}")).toEqual(["completion", "insert"]);
    expect(caps("{{ if .X }")).toEqual(["completion"]); // does not parse: nothing derived
    // Jinja (no Go template): tool and think markers
    expect(capabilitiesOf({ template: undefined, config: {}, source: { kind: "gguf", facts: { isEmbedding: false, chatTemplate: "{% if tools %}<think></think>{% endif %}" } } as never })).toEqual([
      "completion",
      "tools",
      "thinking",
    ]);
    expect(capabilitiesOf({ template: undefined, config: {}, source: { kind: "gguf", facts: { isEmbedding: true } } as never })).toEqual(["embedding"]);
  });
  it("the tags of a selected template (Go or Jinja)", () => {
    expect(thinkingTags(selectTemplate(fixture("qwen3"), undefined, "", ""))).toEqual({ open: "<think>", close: "</think>" });
    expect(thinkingTags(selectTemplate(undefined, "{{ '<think>' }}x{{ '</think>' }}", "", ""))).toEqual({ open: "<think>", close: "</think>" });
    expect(thinkingTags(selectTemplate(undefined, undefined, "", ""))).toEqual({ open: "", close: "" });
  });
});

describe("ThinkingParser (thinking/parser.go)", () => {
  const sample = "<think>\nLet me think.\n</think>\n\nThe answer is 4.";
  it("separates thinking from content at every split point", () => {
    for (const size of [1, 2, 3, 5, 7, 100]) {
      expect(parse(sample, size)).toEqual({ thinking: "Let me think.\n", content: "The answer is 4." });
    }
  });
  it("leading whitespace before the opening tag is eaten", () => {
    expect(parse("  \n<think>x</think>y", 1)).toEqual({ thinking: "x", content: "y" });
  });
  it("output that does not start with the tag is content, untouched (leading spaces kept)", () => {
    expect(parse("  Hello <think>no</think>", 1)).toEqual({ thinking: "", content: "  Hello <think>no</think>" });
    expect(parse("<thinx", 1)).toEqual({ thinking: "", content: "<thinx" });
  });
  it("a prompt that already opened the tag starts inside thinking", () => {
    const p = new ThinkingParser({ open: "<think>", close: "</think>" });
    p.add("<think>");
    expect(p.inThinking).toBe(true);
    expect(p.add("deep thought</think>Done")).toEqual({ thinking: "deep thought", content: "Done" });
    expect(p.done).toBe(true);
  });
  it("held-back text is released at the end (a partial closing tag, thinking that never closed)", () => {
    expect(parse("<think>abc</thi", 1)).toEqual({ thinking: "abc</thi", content: "" });
    expect(parse("<thi", 1)).toEqual({ thinking: "", content: "<thi" });
    expect(parse("   ", 1)).toEqual({ thinking: "", content: "" });
  });
  it("the closing tag text inside content later is content", () => {
    expect(parse("<think>a</think>b</think>c", 1)).toEqual({ thinking: "a", content: "b</think>c" });
  });
  it("empty thinking gives no thinking text", () => {
    expect(parse("<think>\n\n</think>\n\nHi", 1)).toEqual({ thinking: "", content: "Hi" });
  });
});

describe("history thinking (qwen3, deepseek-r1)", () => {
  it("strips <think> blocks from assistant turns before the last user message only", () => {
    const out = stripHistoryThinking([
      { role: "user", content: "q1" },
      { role: "assistant", content: "<think>t1</think>a1" },
      { role: "user", content: "q2" },
      { role: "assistant", content: "<think>t2</think>a2" },
    ]);
    expect(out.map((m) => m.content)).toEqual(["q1", "a1", "q2", "<think>t2</think>a2"]);
  });
});

describe("think levels a template takes", () => {
  it("a level the template refuses becomes the nearest it takes (Hunyuan: no_think, low, high), so think true is no 400", () => {
    const DIR = path.resolve(__dirname, "../fixtures/chat-templates");
    const t = selectTemplate(undefined, readFileSync(path.join(DIR, "tencent-Hy3.jinja"), "utf8"), "<s>", "</s>");
    const render = (thinkLevel: string) => renderPrompt(t, { messages: [{ role: "user", content: "hi" }], think: true, isThinkSet: true, thinkLevel });
    // think true (and a thinking model's default) is "medium"; "max" is Ollama's top level
    for (const level of ["medium", "high", "max"]) expect(render(level), level).toMatch(/reasoning_effort:high.*<think:opensource>$/s);
    expect(render("low")).toMatch(/reasoning_effort:low.*<think:opensource>$/s);
    // a template that takes any level gets it as asked
    const any = selectTemplate(undefined, "{{ reasoning_effort }}", "", "");
    expect(["low", "medium", "high", "max"].map((l) => renderPrompt(any, { messages: [{ role: "user", content: "hi" }], think: true, isThinkSet: true, thinkLevel: l }))).toEqual(["low", "medium", "high", "max"]);
  });
});

describe("every real template renders a chat at every think level a client may send", () => {
  it("no template refuses the levels (a thinking model's default is think true, level medium)", () => {
    const DIR = path.resolve(__dirname, "../fixtures/chat-templates");
    const refused: string[] = [];
    for (const f of readdirSync(DIR).filter((x) => x.endsWith(".jinja"))) {
      const source = readFileSync(path.join(DIR, f), "utf8");
      if (!capabilitiesOf({ template: undefined, config: {}, source: { kind: "gguf", facts: { isEmbedding: false, chatTemplate: source } } as never }).includes("thinking")) continue;
      const t = selectTemplate(undefined, source, "<s>", "</s>");
      for (const thinkLevel of ["medium", "low", "high", "max"]) {
        try {
          renderPrompt(t, { messages: [{ role: "system", content: "be brief" }, { role: "user", content: "hi" }], think: true, isThinkSet: true, thinkLevel });
        } catch (err) {
          refused.push(`${f} ${thinkLevel}: ${(err as Error).message}`);
        }
      }
    }
    expect(refused).toEqual([]);
  });
});

describe("thinking in each real template's own tags", () => {
  const DIR = path.resolve(__dirname, "../fixtures/chat-templates");
  const THOUGHT = "The user greets me; a greeting back fits.";
  const ANSWER = "Hello there!";

  it("reads back the thinking every template writes for an answer, with the tags it writes", () => {
    const read: string[] = [];
    const missed: string[] = [];
    for (const f of readdirSync(DIR).filter((x) => x.endsWith(".jinja"))) {
      const source = readFileSync(path.join(DIR, f), "utf8");
      const t = selectTemplate(undefined, source, "<s>", "</s>");
      let text: string;
      try {
        const user = { role: "user", content: "hello" };
        let think: { think: boolean; isThinkSet: boolean; thinkLevel?: string } = { think: true, isThinkSet: true };
        let asked = renderPrompt(t, { messages: [user], ...think });
        text = renderPrompt(t, { messages: [user, { role: "assistant", content: ANSWER, thinking: THOUGHT }], ...think });
        if (!text.includes(THOUGHT)) continue; // this template drops or cannot show thinking
        text = text.slice(text.indexOf("hello") + 5);
        // what the model writes: from the assistant's header on (the prompt may end in the open tag)
        const tags = thinkingTags(t);
        if (tags.open === "") {
          missed.push(f);
          continue;
        }
        // Hunyuan thinks only at a reasoning_effort (think "high"); think true alone closes the block
        if (asked.trimEnd().endsWith(tags.close)) {
          think = { ...think, thinkLevel: "high" };
          asked = renderPrompt(t, { messages: [user], ...think });
        }
        const gen = asked.slice(asked.indexOf("hello") + 5);
        let common = 0;
        while (common < gen.length && gen[common] === text[common]) common++;
        text = text.slice(common);
        const p = new ThinkingParser(tags);
        if (gen.trimEnd().endsWith(tags.open)) p.add(tags.open);
        let thinking = "";
        let content = "";
        for (let i = 0; i < text.length; i += 3) {
          const s = p.add(text.slice(i, i + 3));
          thinking += s.thinking;
          content += s.content;
        }
        expect(thinking.trim(), f).toBe(THOUGHT);
        expect(content, f).toContain(ANSWER);
        expect(content, f).not.toContain(THOUGHT);
        expect(capabilitiesOf({ template: undefined, config: {}, source: { kind: "gguf", facts: { isEmbedding: false, chatTemplate: source } } as never }), f).toContain("thinking");
        read.push(f);
      } catch (err) {
        if (err instanceof Error && "status" in err) continue; // a template that refuses this conversation
        throw err;
      }
    }
    // beyond <think>: Command A's and MiniMax-M3's own tags
    expect(read).toEqual(expect.arrayContaining(["Cohere2MoE.jinja", "MiniMax-M3.jinja", "Qwen-Qwen3-0.6B.jinja", "GLM-4.6.jinja"]));
    expect(read.length).toBeGreaterThanOrEqual(18);
    // Kimi K3 and Hunyuan build their tags in the template (open_tag('think'), '<think{}>'.format):
    // a render shows them (thinking-probe.ts)
    expect(read).toEqual(expect.arrayContaining(["Kimi-K3.jinja", "tencent-Hy3.jinja"]));
    const tagsOf = (f: string) => thinkingTags(selectTemplate(undefined, readFileSync(path.join(DIR, f), "utf8"), "<s>", "</s>"));
    expect(tagsOf("Kimi-K3.jinja")).toEqual({ open: "<|open|>think<|sep|>", close: "<|close|>think<|sep|>" });
    expect(tagsOf("tencent-Hy3.jinja")).toEqual({ open: "<think:opensource>", close: "</think:opensource>" });
    // gpt-oss's and glimmer's thinking is a message on a channel (harmony.ts reads gpt-oss's)
    expect(missed).toEqual(["muse-glimmer.jinja", "openai-gpt-oss-120b.jinja"]);
  });
});

describe("random thoughts, answers and calls through each thinking template", () => {
  // what completion.ts chains: the thinking parser, the answer wrapper, the tool-call reader; the
  // text each template writes for an answer, streamed in pieces of 1-4 characters; seeded
  it("come back apart: the thought as thinking, the answer as content, the call as a call", () => {
    let seed = 20261204;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) >>> 8) / (1 << 23);
    const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
    const PIECES = ["I think", " so", "\n", "<", ">", "a < b", "</", "x > y", "{", "}", "[", "]", "think", "tool", '"q"', "'", "é", "  ", "ok."];
    const text = (n: number) => Array.from({ length: 1 + Math.floor(rnd() * n) }, () => pick(PIECES)).join("").replaceAll("</think>", "</thin k>").trim();
    const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
    const DIR = path.resolve(__dirname, "../fixtures/chat-templates");
    const wrong: string[] = [];
    let checked = 0;
    for (let round = 0; round < 6; round++) {
      for (const f of readdirSync(DIR).filter((x) => x.endsWith(".jinja")).sort()) {
        const t = selectTemplate(undefined, readFileSync(path.join(DIR, f), "utf8"), "<s>", "</s>");
        const tags = thinkingTags(t);
        if (tags.open === "") continue;
        const thought = `T1 ${text(6) || "x"}`;
        const answer = `A1 ${text(5) || "y"}`;
        const withCall = rnd() < 0.4;
        const user = { role: "user", content: "hello zq" };
        const input = { tools: withCall ? tools : undefined, think: true, isThinkSet: true, thinkLevel: "high" };
        const call = withCall ? { tool_calls: [{ id: "abcdefgh0", function: { name: "get_weather", arguments: { city: "Paris" } } }] } : {};
        let asked: string;
        let full: string;
        try {
          asked = renderPrompt(t, { ...input, messages: [user] });
          full = renderPrompt(t, { ...input, messages: [user, { role: "assistant", content: answer, thinking: thought, ...call }] });
        } catch {
          continue; // a template that refuses this conversation
        }
        if (!full.includes(thought)) continue; // one that does not show thinking here
        const gen = asked.slice(asked.indexOf(user.content) + user.content.length);
        let written = full.slice(full.indexOf(user.content) + user.content.length);
        let common = 0;
        while (common < gen.length && gen[common] === written[common]) common++;
        written = written.slice(common);
        const thinking = new ThinkingParser(tags);
        if (gen.trimEnd().endsWith(tags.open)) thinking.add(tags.open);
        const wrapper = answerWrapper(t);
        const unwrap = wrapper.length > 0 ? new WrapperFilter(wrapper) : undefined;
        const reader = withCall ? toolCallParser(toolDialect(t), tools) : undefined;
        let thought2 = "";
        let content = "";
        let calls = 0;
        const feed = (s: string, final: boolean) => {
          const x = unwrap ? unwrap.add(s) + (final ? unwrap.flush() : "") : s;
          if (!reader) return void (content += x);
          const step = reader.add(x);
          const end = final ? reader.flush() : { calls: [], content: "" };
          content += step.content + end.content;
          calls += step.calls.length + end.calls.length;
        };
        for (let i = 0; i < written.length; ) {
          const n = 1 + Math.floor(rnd() * 4);
          const step = thinking.add(written.slice(i, i + n));
          thought2 += step.thinking;
          feed(step.content, false);
          i += n;
        }
        const rest = thinking.flush();
        thought2 += rest.thinking;
        feed(rest.content, true);
        checked++;
        if (thought2.trim() !== thought || (written.includes(answer) && !content.includes(answer)) || content.includes("T1 ") || thought2.includes("A1 ") || (withCall && calls !== 1)) {
          wrong.push(`${f}: ${JSON.stringify({ thought, answer, withCall })} → ${JSON.stringify({ thinking: thought2, content, calls })}`);
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(100);
  });
});
