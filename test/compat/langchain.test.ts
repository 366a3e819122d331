// @langchain/ollama against the daemon: ChatOllama (always streams /api/chat, sums the counts of
// every chunk), structured output, tools, OllamaEmbeddings (truncate:false by default), the
// Ollama LLM class on /api/generate. Structured output and tools exercise the completion layer's
// event stream (format grammar, tool-call parser).
import { AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { ChatOllama, Ollama as OllamaLLM, OllamaEmbeddings } from "@langchain/ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestDaemon } from "../helpers/daemon.js";
import { ANSWER_SCHEMA, CALL_FORMAT, CITIES, EMBED_DIM, expectAnswer, MODELS, norm, startCompatDaemon, WEATHER_TOOL } from "./helpers.js";

let d: TestDaemon;
const sampling = { seed: 11, numPredict: 12, temperature: 0.7 };

beforeAll(async () => {
  d = await startCompatDaemon();
});

afterAll(async () => {
  await d?.stop();
});

describe("@langchain/ollama", () => {
  it("ChatOllama.invoke with a system message: content, usage counted once, done_reason", async () => {
    const chat = new ChatOllama({ model: MODELS.chat, baseUrl: d.url, ...sampling });
    const messages = [new SystemMessage("You are terse."), new HumanMessage("Hello there")];
    await chat.invoke(messages); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const r = await chat.invoke(messages);
    expect(typeof r.content).toBe("string");
    expect((r.content as string).length).toBeGreaterThan(0);
    expect(r.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(r.usage_metadata?.output_tokens).toBeLessThanOrEqual(12);
    expect(r.usage_metadata?.input_tokens).toBeGreaterThan(0);
    expect(r.response_metadata.done_reason).toMatch(/^(stop|length)$/);
    expect(r.tool_calls).toEqual([]);
    const again = await chat.invoke(messages);
    expect(again.content).toBe(r.content);
  });

  it("ChatOllama.stream gives the same text in several chunks", async () => {
    const chat = new ChatOllama({ model: MODELS.chat, baseUrl: d.url, ...sampling });
    const messages = [new HumanMessage("Tell me something")];
    await chat.invoke(messages); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const whole = await chat.invoke(messages);
    let text = "";
    let n = 0;
    for await (const chunk of await chat.stream(messages)) {
      expect(chunk).toBeInstanceOf(AIMessageChunk);
      text += chunk.content as string;
      n++;
    }
    expect(n).toBeGreaterThan(1);
    expect(text).toBe(whole.content);
  });

  it("withStructuredOutput (JSON schema, sent as format) parses into an object", async () => {
    const chat = new ChatOllama({ model: MODELS.chat, baseUrl: d.url, seed: 11, numPredict: 64 });
    const structured = chat.withStructuredOutput({ title: "Answer", ...ANSWER_SCHEMA });
    expectAnswer(await structured.invoke([new HumanMessage("yes or no?")]));
  });

  it("bindTools: the tool call comes back in tool_calls with object args; the tool result is accepted", async () => {
    const chat = new ChatOllama({ model: MODELS.tools, baseUrl: d.url, seed: 11, numPredict: 128, format: CALL_FORMAT });
    const withTools = chat.bindTools([WEATHER_TOOL]);
    const question = new HumanMessage("What is the weather in Rome?");
    const r = await withTools.invoke([question]);
    expect(r.tool_calls).toHaveLength(1);
    expect(r.tool_calls![0]!.name).toBe("get_weather");
    expect(CITIES).toContain(r.tool_calls![0]!.args.city);
    expect(r.invalid_tool_calls ?? []).toEqual([]);

    // LangChain sends the tool result with neither tool_name nor tool_call_id; it reaches the prompt.
    const plain = new ChatOllama({ model: MODELS.tools, baseUrl: d.url, ...sampling }).bindTools([WEATHER_TOOL]);
    const answer = (result: string) => plain.invoke([question, r, new ToolMessage({ content: result, tool_call_id: r.tool_calls![0]!.id ?? "call" })]);
    const short = await answer("18 degrees");
    const long = await answer("18 degrees, light wind from the west, clear skies all afternoon");
    expect(short.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(long.usage_metadata?.input_tokens).toBeGreaterThan(short.usage_metadata?.input_tokens ?? 0);
  });

  it("abort mid-stream, then the next request is served", async () => {
    // LangChain's abort ends the iteration but leaves the HTTP stream open (ollama-js's reader is
    // never cancelled), so the daemon cannot tell: the generation runs on until num_predict, as
    // with Ollama. Hence a bounded num_predict here; ollama-js, openai and the AI SDK close the
    // connection and their abort tests check that the slot is freed at once.
    const chat = new ChatOllama({ model: MODELS.chat, baseUrl: d.url, numPredict: 64 });
    const ac = new AbortController();
    let n = 0;
    await expect(
      (async () => {
        for await (const _ of await chat.stream([new HumanMessage("Go on")], { signal: ac.signal })) {
          if (++n === 2) ac.abort();
        }
      })(),
    ).rejects.toThrow(/abort/i);
    expect(n).toBe(2);
    const next = await new ChatOllama({ model: MODELS.chat, baseUrl: d.url, ...sampling }).invoke([new HumanMessage("Next")]);
    expect((next.content as string).length).toBeGreaterThan(0);
  });

  it("OllamaEmbeddings: embedQuery and embedDocuments give unit vectors", async () => {
    const emb = new OllamaEmbeddings({ model: MODELS.embed, baseUrl: d.url });
    const q = await emb.embedQuery("hello world");
    expect(q).toHaveLength(EMBED_DIM);
    expect(norm(q)).toBeCloseTo(1, 6);
    const docs = await emb.embedDocuments(["hello world", "other words"]);
    expect(docs).toHaveLength(2);
    for (let i = 0; i < EMBED_DIM; i++) expect(docs[0]![i]).toBeCloseTo(q[i]!, 6);
    const short = await new OllamaEmbeddings({ model: MODELS.embed, baseUrl: d.url, dimensions: 8 }).embedQuery("hello world");
    expect(short).toHaveLength(8);
  });

  it("the Ollama LLM class generates text", async () => {
    const llm = new OllamaLLM({ model: MODELS.chat, baseUrl: d.url, ...sampling });
    const text = await llm.invoke("Once upon a time");
    expect(text.length).toBeGreaterThan(0);
  });
});
