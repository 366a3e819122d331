// truncate: the oldest droppable messages go until the prompt fits. Bisection must give exactly
// the prompt that dropping one message at a time (Ollama's way) gives, in a logarithmic number of
// renders, and meet a template's refusal where the one-by-one search meets it.
import { describe, expect, it } from "vitest";
import { dropOldest, fitConversation } from "../../src/daemon/prompt/fit-conversation.js";
import type { RenderMessage } from "../../src/daemon/prompt/render.js";

const render = (ms: RenderMessage[]) => ms.map((m) => `<${m.role}>${m.content}`).join("");

/** Ollama's search: one message dropped at a time. */
async function oneAtATime(messages: RenderMessage[], fits: (p: string) => Promise<boolean>): Promise<string> {
  let ms = messages;
  for (;;) {
    const text = render(ms);
    if (await fits(text)) return text;
    const drop = ms.findIndex((m, i) => m.role !== "system" && i < ms.length - 1);
    if (drop === -1) return text;
    ms = ms.filter((_, i) => i !== drop);
  }
}

function conversation(seed: number, n: number): RenderMessage[] {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) & 0x7fffffff);
  return Array.from({ length: n }, (_, i) => ({
    role: next() % 9 === 0 ? "system" : i % 2 ? "assistant" : "user",
    content: "x".repeat(next() % 40),
  }));
}

describe("fitting a conversation to the context", () => {
  it("gives the prompt dropping one at a time gives, for every budget, in few renders", async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const messages = conversation(seed, 1 + (seed * 7) % 60);
      const full = render(messages).length;
      for (const budget of [0, 5, full / 4, full / 2, full - 1, full + 1]) {
        const fits = async (p: string) => p.length <= budget;
        let renders = 0;
        const got = await fitConversation(messages, (ms) => (renders++, render(ms)), fits);
        expect(got, `seed ${seed} budget ${budget}`).toBe(await oneAtATime(messages, fits));
        expect(renders).toBeLessThanOrEqual(2 + Math.ceil(Math.log2(messages.length + 1)));
      }
    }
  });

  it("keeps system messages and the last message, dropping the oldest others", () => {
    const ms = [
      { role: "system", content: "S" },
      { role: "user", content: "a" },
      { role: "assistant", content: "b" },
      { role: "system", content: "T" },
      { role: "user", content: "c" },
    ];
    expect(dropOldest(ms, 2).map((m) => m.content)).toEqual(["S", "T", "c"]);
    expect(dropOldest(ms, 9).map((m) => m.content)).toEqual(["S", "T", "c"]);
    expect(dropOldest(ms, 0)).toEqual(ms);
  });

  it("a count the template refuses (a conversation opening with the reply) does not fit: one more is dropped", async () => {
    const messages = Array.from({ length: 12 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: "xxxx" }));
    const strict = (ms: RenderMessage[]) => {
      if (ms[0]?.role === "assistant") throw new Error("Conversation roles must alternate user/assistant/user/assistant");
      return render(ms);
    };
    for (let fitAfter = 1; fitAfter <= 10; fitAfter++) {
      const fits = async (p: string) => p.length <= render(messages.slice(fitAfter)).length;
      // the fewest drops that fit and that the template takes: an even count
      const want = render(messages.slice(fitAfter % 2 ? fitAfter + 1 : fitAfter));
      expect(await fitConversation(messages, strict, fits), `fits after ${fitAfter}`).toBe(want);
    }
    // a template that takes no shorter conversation: its refusal is the answer
    const none = (ms: RenderMessage[]) => {
      if (ms.length < 12) throw new Error("too short");
      return render(ms);
    };
    await expect(fitConversation(messages, none, async () => false)).rejects.toThrow(/too short/);
  });
});
