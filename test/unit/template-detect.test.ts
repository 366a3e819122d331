// Ollama's chat-template autodetection at create (src/registry/template-detect.ts): the GGUF's
// Jinja template is matched to Ollama's known ones by Levenshtein distance, nearer than 100.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CHAT_FORMATS } from "../../scripts/chat-templates.js";
import { GO_TEMPLATES, TEMPLATE_INDEX } from "../../src/registry/ollama-templates.js";
import { boundedLevenshtein, detectChatTemplate } from "../../src/registry/template-detect.js";
import { REPO } from "../helpers/daemon.js";

const cp = (s: string) => [...s].map((c) => c.codePointAt(0)!);

function levenshtein(a: string, b: string): number {
  const x = cp(a);
  const y = cp(b);
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const cur = [i];
    for (let j = 1; j <= y.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[y.length]!;
}

describe("boundedLevenshtein", () => {
  it("is the edit distance below the limit, the limit at or above it", () => {
    const words = ["", "a", "kitten", "sitting", "flaw", "lawn", "intention", "execution", "ab😀c", "abc"];
    for (const a of words) {
      for (const b of words) {
        const d = levenshtein(a, b);
        for (const limit of [1, 2, 3, 5, 100]) expect(boundedLevenshtein(cp(a), cp(b), limit), `${a}/${b}/${limit}`).toBe(Math.min(d, limit));
      }
    }
  });
  it("counts characters, not UTF-16 units (Go compares runes)", () => {
    expect(boundedLevenshtein(cp("😀"), cp("😁"), 10)).toBe(1);
  });
});

describe("detectChatTemplate", () => {
  it("maps each family's shipped Jinja template to Ollama's Go template and its stop words", async () => {
    const expected = { chatml: "chatml", llama3: "llama3-instruct", gemma: "gemma-instruct", mistral: "mistral-instruct" } as const;
    for (const [format, name] of Object.entries(expected)) {
      const t = detectChatTemplate(CHAT_FORMATS[format as keyof typeof expected].template);
      expect(t?.name, format).toBe(name);
      expect(t?.template).toBe(await readFile(path.join(REPO, "test/fixtures/templates/ollama-repo", `${name}.gotmpl`), "utf8"));
    }
    expect(detectChatTemplate(CHAT_FORMATS.llama3.template)?.stop).toEqual(["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]);
    expect(detectChatTemplate(CHAT_FORMATS.gemma.template)?.stop).toEqual(["<start_of_turn>", "<end_of_turn>"]);
    // Ollama's mistral-instruct.json lists ChatML's stop words: copied as they are
    expect(detectChatTemplate(CHAT_FORMATS.mistral.template)?.stop).toEqual(["<|im_start|>", "<|im_end|>"]);
  });

  it("finds every template of Ollama's index by its own text, and tolerates small edits", () => {
    for (const t of TEMPLATE_INDEX) {
      expect(detectChatTemplate(t.template)?.name).toBe(t.name);
      expect(GO_TEMPLATES[t.name]).toBeDefined();
    }
    const llama3 = CHAT_FORMATS.llama3.template!;
    expect(detectChatTemplate(llama3.replace("bos_token + content", "content"))?.name).toBe("llama3-instruct");
  });

  it("finds nothing for no template, an unknown one, or one 100 edits away", () => {
    expect(detectChatTemplate(undefined)).toBeUndefined();
    expect(detectChatTemplate("")).toBeUndefined();
    expect(detectChatTemplate("{% for m in messages %}<|user|>{{ m.content }}{% endfor %}<|assistant|>")).toBeUndefined();
    const chatml = CHAT_FORMATS.chatml.template!;
    // ours is 6 edits from the nearest of Ollama's ChatML templates
    expect(detectChatTemplate(chatml + "x".repeat(93))?.name).toBe("chatml");
    expect(detectChatTemplate(chatml + "x".repeat(94))).toBeUndefined();
    expect(detectChatTemplate(chatml + "x".repeat(130))).toBeUndefined();
  });

  it("is quick on a huge template (a file's text, bounded by the length difference)", () => {
    const t0 = performance.now();
    expect(detectChatTemplate("{{ x }}".repeat(200_000))).toBeUndefined();
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});
