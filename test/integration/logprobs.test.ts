// logprobs/top_logprobs on the real daemon and runner, through ollama-js and openai: Ollama's
// shape on /api/generate and /api/chat (per chunk when streamed, all of them when not), OpenAI's
// on /v1/chat/completions and the legacy one on /v1/completions.
import { Ollama } from "ollama";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
let ollama: Ollama;
let openai: OpenAI;
// Greedy: the chosen token is the most likely one, and the probabilities are the model's.
const greedy = { temperature: 0, num_predict: 12, seed: 1 };

interface Entry {
  token: string;
  logprob: number;
  bytes?: number[];
  top_logprobs?: Entry[];
}

function checkEntry(e: Entry, top: number): void {
  expect(typeof e.token).toBe("string");
  expect(e.logprob).toBeLessThanOrEqual(0);
  if (!e.token.includes("\uFFFD")) expect(e.bytes).toEqual([...Buffer.from(e.token, "utf8")]);
  if (top === 0) {
    expect(e.top_logprobs).toBeUndefined();
    return;
  }
  expect(e.top_logprobs).toHaveLength(top);
  const lps = e.top_logprobs!.map((t) => t.logprob);
  expect([...lps].sort((a, b) => b - a)).toEqual(lps);
  // Greedy: the chosen token is the first alternative.
  expect(e.top_logprobs![0]).toMatchObject({ token: e.token, logprob: e.logprob });
  expect(lps.reduce((s, l) => s + Math.exp(l), 0)).toBeLessThanOrEqual(1.0001);
}

beforeAll(async () => {
  d = await startDaemon();
  ollama = new Ollama({ host: d.url });
  openai = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "x", maxRetries: 0 });
  const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  expect((await createModelFromFile(d.url, "tiny", file, { parameters: { num_thread: 1 } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await d?.stop();
});

describe("Ollama's API", () => {
  it("/api/generate: one entry per generated token, its text the response, top alternatives sorted", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "Once upon a time", options: greedy, logprobs: true, top_logprobs: 3, stream: false });
    expect(r.logprobs).toHaveLength(r.eval_count);
    expect(r.logprobs!.map((l) => l.token).join("")).toBe(r.response);
    for (const e of r.logprobs!) checkEntry(e as Entry, 3);
  });

  it("/api/chat streamed: each chunk carries the entries of its own text; top_logprobs 0 gives none", async () => {
    const stream = await ollama.chat({ model: "tiny", messages: [{ role: "user", content: "Hello" }], options: greedy, logprobs: true, stream: true });
    let tokens = 0;
    let text = "";
    for await (const ch of stream) {
      text += ch.message.content;
      const lps = (ch.logprobs ?? []) as Entry[];
      expect(lps.map((l) => l.token).join("")).toBe(ch.message.content);
      for (const e of lps) checkEntry(e, 0);
      tokens += lps.length;
      if (ch.done) expect(tokens).toBe(ch.eval_count);
    }
    expect(text.length).toBeGreaterThan(0);
  });

  it("the same request with and without logprobs generates the same text; without, no logprobs field", async () => {
    const body = { model: "tiny", prompt: "The weather", options: greedy, stream: false };
    await (await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify(body) })).json(); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const a = (await (await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify(body) })).json()) as Record<string, unknown>;
    const b = (await (await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ ...body, logprobs: true }) })).json()) as Record<string, unknown>;
    expect("logprobs" in a).toBe(false);
    expect(b.response).toBe(a.response);
    expect((b.logprobs as Entry[]).length).toBe(b.eval_count);
    // top_logprobs without logprobs asks for nothing (Ollama); out of range is Ollama's 400.
    const c = (await (await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ ...body, top_logprobs: 5 }) })).json()) as Record<string, unknown>;
    expect("logprobs" in c).toBe(false);
    const e = await fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "tiny", messages: [], top_logprobs: 21 }) });
    expect(e.status).toBe(400);
    expect(await e.json()).toEqual({ error: "top_logprobs must be between 0 and 20" });
  });

  it("under a format grammar the alternatives are the tokens the grammar allows", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "yes?", format: { enum: ["yes", "no"] }, options: greedy, logprobs: true, top_logprobs: 4, stream: false });
    expect(['"yes"', '"no"']).toContain(r.response);
    const first = r.logprobs![0]!;
    expect(first.token).toBe((r.response ?? "").slice(0, first.token.length));
    // Only tokens that start a JSON string are possible here: the others have no probability.
    for (const t of first.top_logprobs!) if (t.logprob > -9999) expect(t.token.startsWith('"')).toBe(true);
  });
});

describe("OpenAI's API", () => {
  it("/v1/chat/completions: logprobs.content with top_logprobs always present, streamed too", async () => {
    const r = await openai.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], logprobs: true, top_logprobs: 2, temperature: 0, max_tokens: 8 });
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(r.usage!.completion_tokens);
    expect(content.map((c) => c.token).join("")).toBe(r.choices[0]!.message.content);
    for (const e of content) checkEntry(e as unknown as Entry, 2);
    const plain = await openai.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], temperature: 0, max_tokens: 8 });
    expect(plain.choices[0]!.logprobs).toBeNull();

    const stream = await openai.chat.completions.create({ model: "tiny", messages: [{ role: "user", content: "Hi" }], logprobs: true, temperature: 0, max_tokens: 8, stream: true });
    let text = "";
    let joined = "";
    for await (const ch of stream) {
      const c = ch.choices[0];
      if (!c) continue;
      text += c.delta.content ?? "";
      for (const e of c.logprobs?.content ?? []) {
        joined += e.token;
        expect(e.top_logprobs).toEqual([]);
      }
    }
    expect(joined).toBe(text);
    expect(text).toBe(r.choices[0]!.message.content);
  });

  it("/v1/completions: OpenAI's tokens/token_logprobs/top_logprobs/text_offset and Ollama's content", async () => {
    const r = await openai.completions.create({ model: "tiny", prompt: "Once upon a time", logprobs: 2, temperature: 0, max_tokens: 8 });
    const lp = r.choices[0]!.logprobs! as OpenAI.Completions.CompletionChoice.Logprobs & { content: Entry[] };
    expect(lp.tokens!.join("")).toBe(r.choices[0]!.text);
    expect(lp.token_logprobs).toEqual(lp.content.map((c) => c.logprob));
    expect(lp.text_offset![0]).toBe(0);
    for (let i = 1; i < lp.tokens!.length; i++) expect(lp.text_offset![i]).toBe(lp.text_offset![i - 1]! + lp.tokens![i - 1]!.length);
    for (const [i, top] of lp.top_logprobs!.entries()) {
      expect(Object.keys(top)).toHaveLength(2);
      expect(top[lp.tokens![i]!]).toBe(lp.token_logprobs![i]);
    }
  });
});
