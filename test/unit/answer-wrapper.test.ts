// Tokens some models wrap their answers in (Command R7B's <|START_RESPONSE|>, Command A's
// <|START_TEXT|>, Solar's <|content|>) are learned from the model's own template and dropped from
// the content; most templates write answers bare and get nothing dropped.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { answerWrapper, WrapperFilter } from "../../src/daemon/prompt/answer-wrapper.js";
import { selectTemplate } from "../../src/daemon/prompt/render.js";

const DIR = path.resolve(__dirname, "../fixtures/chat-templates");
const load = (f: string) => selectTemplate(undefined, readFileSync(path.join(DIR, f), "utf8"), "<s>", "</s>");

describe("answer wrappers", () => {
  it("are learned only from the templates that write one", () => {
    const found = Object.fromEntries(
      readdirSync(DIR)
        .filter((f) => f.endsWith(".jinja"))
        .map((f) => [f, answerWrapper(load(f))] as const)
        .filter(([, w]) => w.length > 0),
    );
    expect(found).toEqual({
      "Cohere2MoE.jinja": ["<|START_TEXT|>", "<|END_TEXT|>"],
      "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": ["<|START_RESPONSE|>", "<|END_RESPONSE|>"],
      "Kimi-K3.jinja": ["<|open|>response<|sep|>", "<|close|>response<|sep|>"],
      "upstage-Solar-Open-100B.jinja": ["<|content|>", "<|end|>"],
    });
  });

  it("Ollama's cohere parser names them for any template; Go templates learn nothing", () => {
    const go = selectTemplate("{{ .Prompt }}", undefined, "", "");
    expect(answerWrapper(go)).toEqual([]);
    expect(answerWrapper(go, "cohere")).toContain("<|START_RESPONSE|>");
    expect(answerWrapper(go, "constructor")).toEqual([]);
  });

  it("are dropped from streamed content, also when a token comes in pieces", () => {
    const f = new WrapperFilter(["<|START_RESPONSE|>", "<|END_RESPONSE|>"]);
    const text = "<|START_RESPONSE|>Hello <there>|, friend.<|END_RESPONSE|>";
    let out = "";
    for (let i = 0; i < text.length; i += 3) out += f.add(text.slice(i, i + 3));
    out += f.flush();
    expect(out).toBe("Hello <there>|, friend.");
    const g = new WrapperFilter(["<|START_TEXT|>"]);
    expect(g.add("a <|START")).toBe("a ");
    expect(g.flush()).toBe("<|START");
  });
});
