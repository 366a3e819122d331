// The harmony parser (gpt-oss): channels, tool calls, names, prefill, text split anywhere.
import { describe, expect, it } from "vitest";
import { HarmonyNames, HarmonyParser, parseHeader, usesHarmony } from "../../src/daemon/prompt/harmony.js";

function readAll(text: string, pieces: number[], names = new HarmonyNames(), last?: { role: string; content?: string; thinking?: string }) {
  const p = new HarmonyParser(names, last);
  let content = "";
  let thinking = "";
  let at = 0;
  for (const cut of [...pieces, text.length]) {
    const step = p.add(text.slice(at, cut));
    content += step.content;
    thinking += step.thinking;
    at = cut;
  }
  return { content, thinking, calls: p.finish() };
}

const ANSWER = "<|channel|>analysis<|message|>Let me think.<|end|><|start|>assistant<|channel|>final<|message|>Hello, world!";

describe("harmony parser", () => {
  it("splits analysis into thinking and final into content, wherever the text is cut", () => {
    for (let i = 0; i <= ANSWER.length; i++) {
      for (const j of [i, Math.min(ANSWER.length, i + 3)]) {
        expect(readAll(ANSWER, [i, j])).toEqual({ content: "Hello, world!", thinking: "Let me think.", calls: [] });
      }
    }
  });

  it("reads a call in the template's header form and in the constrain form, under the client's name", () => {
    const names = new HarmonyNames();
    expect(names.add("get-weather now")).toBe("get_weather_now");
    const a = readAll(' to=functions.get_weather_now<|channel|>commentary json<|message|>{"city":"Oslo"}', [5, 40], names);
    expect(a.calls).toEqual([{ function: { index: 0, name: "get-weather now", arguments: { city: "Oslo" } } }]);
    expect(a.content).toBe("");
    const b = readAll('<|channel|>commentary to=functions.get_weather_now <|constrain|>json<|message|>{"city":"Rome"}', [], names);
    expect(b.calls[0]!.function).toEqual({ index: 0, name: "get-weather now", arguments: { city: "Rome" } });
  });

  it("refuses a call whose arguments are no JSON object, with Ollama's words", () => {
    expect(() => readAll(" to=functions.f<|channel|>commentary<|message|>{oops", [])).toThrow("error parsing tool call: raw='{oops', err=");
    expect(() => readAll(" to=functions.f<|channel|>commentary<|message|>[1]", [])).toThrow("error parsing tool call");
  });

  it("names tools as identifiers, without clashes, built-ins kept", () => {
    const names = new HarmonyNames();
    expect(["a b", "a-b", "python", "browser.search", "9lives", "!!!", "été"].map((n) => names.add(n))).toEqual(["a_b", "a_b_2", "python", "browser.search", "_9lives", "unnamed", "été"]);
    expect(names.user("a_b_2")).toBe("a-b");
    expect(names.user("unknown")).toBe("unknown");
  });

  it("continues an assistant prefill in its channel, holds back a partial end tag, drops text outside messages", () => {
    expect(readAll("more text", [], new HarmonyNames(), { role: "assistant", content: "Some" }).content).toBe("more text");
    expect(readAll("more", [], new HarmonyNames(), { role: "assistant", content: "", thinking: "hm" }).thinking).toBe("more");
    const p = new HarmonyParser(new HarmonyNames());
    expect(p.add("<|channel|>final<|message|>abc<|en").content).toBe("abc");
    expect(p.add("x").content).toBe("<|enx");
    expect(p.add("<|end|>stray").content).toBe("");
  });

  it("parses headers and decides when harmony applies", () => {
    expect(parseHeader("assistant<|channel|>commentary to=functions.x <|constrain|>json")).toEqual({ role: "assistant", channel: "commentary", recipient: "functions.x" });
    expect(parseHeader("to=functions.y<|channel|>analysis")).toEqual({ role: "tool", channel: "analysis", recipient: "functions.y" });
    const t = { kind: "go" as const, source: "<|start|>{{ .Prompt }}<|end|>", template: undefined as never };
    expect(usesHarmony({ model_family: "gptoss" }, t)).toBe(true);
    expect(usesHarmony({ model_family: "gpt-oss" }, t)).toBe(true);
    expect(usesHarmony({ model_family: "llama" }, t)).toBe(false);
    expect(usesHarmony({ model_family: "gptoss" }, { kind: "default" })).toBe(false);
    expect(usesHarmony({ model_family: "llama", parser: "harmony" }, { kind: "default" })).toBe(true);
  });
});
