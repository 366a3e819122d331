// @langchain/openai's ChatOpenAI and OpenAIEmbeddings pointed at /v1 (the way LangChain users reach
// Ollama through its OpenAI compatibility). It runs on its own copy of the openai SDK (7.x), sends
// stream_options.include_usage when streaming, sends response_format json_schema through
// chat.completions.parse() (which throws on finish_reason "length"), reads tool-call arguments as
// JSON strings (a double-encoded or object value lands in invalid_tool_calls), assembles streamed
// tool calls from tool_call_chunks by index, and asks embeddings in base64. Answers are compared
// with the daemon's own /api/chat and /api/embed for the same input: same text, same counts, same
// vectors.
import { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, type TestDaemon } from "../helpers/daemon.js";
import { ANSWER_SCHEMA, CALL_FORMAT, CITIES, EMBED_DIM, expectAnswer, FINITE_TOOLS, MODELS, startCompatDaemon, WEATHER_TOOL } from "./helpers.js";

let d: TestDaemon;
const greedy = { temperature: 0, maxTokens: 12 };
const chat = (model: string = MODELS.chat, extra: ConstructorParameters<typeof ChatOpenAI>[0] = {}) =>
  new ChatOpenAI({ model, apiKey: "ollama", configuration: { baseURL: `${d.url}/v1` }, maxRetries: 0, ...greedy, ...extra });

/** The same conversation asked natively, with the options ChatOpenAI's fields map to. */
async function native(model: string, messages: Array<{ role: string; content: string }>, num_predict = 12) {
  const r = await postJson(d.url, "/api/chat", { model, messages, stream: false, options: { temperature: 0, num_predict } });
  expect(r.status, r.text).toBe(200);
  return r.json as { message: { content: string }; prompt_eval_count: number; eval_count: number; done_reason: string };
}

/** A conversation as LangChain messages, and as native ones. */
const messages = [new SystemMessage("You are terse."), new HumanMessage("Hello there")];
const plain = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Hello there" },
];

beforeAll(async () => {
  d = await startCompatDaemon();
});

afterAll(async () => {
  await d?.stop();
});

describe("@langchain/openai ChatOpenAI on /v1", () => {
  it("invoke: the native answer's text, usage equal to prompt_eval_count/eval_count, finish_reason", async () => {
    await native(MODELS.chat, plain); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const ref = await native(MODELS.chat, plain);
    const r = await chat().invoke(messages);
    expect(r).toBeInstanceOf(AIMessage);
    expect(r.content).toBe(ref.message.content);
    expect((r.content as string).length).toBeGreaterThan(0);
    expect(r.usage_metadata).toMatchObject({ input_tokens: ref.prompt_eval_count, output_tokens: ref.eval_count, total_tokens: ref.prompt_eval_count + ref.eval_count });
    expect(r.response_metadata.finish_reason).toBe(ref.done_reason);
    expect(r.response_metadata.model_name).toBe(MODELS.chat);
    expect(r.id).toMatch(/^chatcmpl-/);
    expect(r.tool_calls).toEqual([]);
  });

  it("stream: several chunks, the same text, the usage chunk (include_usage) and the finish reason", async () => {
    const ref = await native(MODELS.chat, plain);
    let whole: AIMessageChunk | undefined;
    let n = 0;
    for await (const chunk of await chat().stream(messages)) {
      expect(chunk).toBeInstanceOf(AIMessageChunk);
      whole = whole ? whole.concat(chunk) : chunk;
      n++;
    }
    expect(n).toBeGreaterThan(2);
    expect(whole!.content).toBe(ref.message.content);
    expect(whole!.usage_metadata).toMatchObject({ input_tokens: ref.prompt_eval_count, output_tokens: ref.eval_count });
    expect(whole!.response_metadata.finish_reason).toBe(ref.done_reason);
  });

  it("a cut-off answer: finish_reason length, output_tokens = maxTokens", async () => {
    const r = await chat(MODELS.chat, { maxTokens: 3 }).invoke([new HumanMessage("Tell me a long story")]);
    expect(r.response_metadata.finish_reason).toBe("length");
    expect(r.usage_metadata?.output_tokens).toBe(3);
  });

  it("logprobs: one entry per generated token, their text the answer", async () => {
    const model = chat(MODELS.chat, { logprobs: true, topLogprobs: 2 });
    if (process.env.OLLAMATS_COMPAT_REMOTE === "1") {
      // a remote model's upstream API gives no token probabilities: refused, not left out silently
      await expect(model.invoke(messages)).rejects.toMatchObject({ status: 400, message: expect.stringContaining("logprobs are not supported by this backend") });
      return;
    }
    const r = await model.invoke(messages);
    const lp = r.response_metadata.logprobs as { content: Array<{ token: string; logprob: number; top_logprobs: Array<{ token: string; logprob: number }> }> };
    expect(lp.content).toHaveLength(r.usage_metadata!.output_tokens);
    expect(lp.content.map((t) => t.token).join("")).toBe(r.content);
    for (const t of lp.content) {
      expect(t.logprob).toBeLessThanOrEqual(0);
      expect(t.top_logprobs).toHaveLength(2);
      expect(t.top_logprobs[0]!.logprob).toBeGreaterThanOrEqual(t.top_logprobs[1]!.logprob);
    }
  });

  it("withStructuredOutput, default method (response_format json_schema through parse()): the parsed object", async () => {
    const structured = chat(MODELS.chat, { maxTokens: 64 }).withStructuredOutput({ title: "Answer", ...ANSWER_SCHEMA });
    expectAnswer(await structured.invoke([new HumanMessage("yes or no?")]));
    // streamed: the same schema, no parse() (its strict default applies only to non-streamed calls)
    let last: unknown;
    for await (const partial of await structured.stream([new HumanMessage("yes or no?")])) last = partial;
    expectAnswer(last);
  });

  it("withStructuredOutput, jsonMode (response_format json_object) and functionCalling (a forced tool call)", async () => {
    // json_object makes the text JSON, as native format "json" does: the same greedy text. (A
    // random model's JSON never closes its first string, so the parser gets nothing to parse.)
    const json = await chat(MODELS.chat, { maxTokens: 24 })
      .withStructuredOutput({ title: "Anything", type: "object" }, { method: "jsonMode", includeRaw: true })
      .invoke([new HumanMessage("JSON please")]);
    const ref = await postJson(d.url, "/api/chat", { model: MODELS.chat, messages: [{ role: "user", content: "JSON please" }], format: "json", stream: false, options: { temperature: 0, num_predict: 24 } });
    expect((json.raw as AIMessage).content).toBe(ref.json.message.content);
    expect(ref.json.message.content).toMatch(/^\{/);
    expect((json.raw as AIMessage).response_metadata.finish_reason).toBe("length");
    // functionCalling names the function in tool_choice, which the daemon enforces (Ollama ignores it)
    const fn = chat(MODELS.tools, { maxTokens: 128 }).withStructuredOutput(FINITE_TOOLS[1]!.function.parameters, { method: "functionCalling", name: "get_time", includeRaw: true });
    const r = await fn.invoke([new HumanMessage("What time is it?")]);
    expect(r.parsed).toEqual({ zone: expect.stringMatching(/^(UTC|CET)$/) });
    expect((r.raw as AIMessage).tool_calls?.[0]?.name).toBe("get_time");
  });

  it("bindTools: a call in tool_calls with parsed args and an id; the ToolMessage goes back by tool_call_id", async () => {
    const withTools = chat(MODELS.tools, { maxTokens: 128 }).bindTools([WEATHER_TOOL], { response_format: { type: "json_schema", json_schema: { name: "call", schema: CALL_FORMAT } } } as never);
    const question = new HumanMessage("What is the weather in Rome?");
    const r = await withTools.invoke([question]);
    expect(r.invalid_tool_calls ?? []).toEqual([]);
    expect(r.tool_calls).toHaveLength(1);
    const call = r.tool_calls![0]!;
    expect(call.name).toBe("get_weather");
    expect(CITIES).toContain(call.args.city);
    expect(call.id).toMatch(/^call_/);
    expect(r.response_metadata.finish_reason).toBe("tool_calls");

    const follow = chat(MODELS.tools).bindTools([WEATHER_TOOL]);
    const answer = (result: string) => follow.invoke([question, r, new ToolMessage({ content: result, tool_call_id: call.id! })]);
    const short = await answer("18 degrees");
    const long = await answer("18 degrees, light wind from the west, clear skies all afternoon");
    expect(short.usage_metadata!.output_tokens).toBeGreaterThan(0);
    expect(long.usage_metadata!.input_tokens).toBeGreaterThan(short.usage_metadata!.input_tokens);
  });

  it("bindTools with tool_choice 'any' streamed: tool_call_chunks assemble into the same call as invoke's", async () => {
    const withTools = chat(MODELS.tools, { maxTokens: 128 }).bindTools(FINITE_TOOLS, { tool_choice: "any" });
    const question = [new HumanMessage("Hello there")];
    const whole = await withTools.invoke(question);
    expect(whole.tool_calls).toHaveLength(1);
    let acc: AIMessageChunk | undefined;
    for await (const chunk of await withTools.stream(question)) acc = acc ? acc.concat(chunk) : chunk;
    expect(acc!.invalid_tool_calls ?? []).toEqual([]);
    expect(acc!.tool_calls).toHaveLength(1);
    expect([acc!.tool_calls![0]!.name, acc!.tool_calls![0]!.args]).toEqual([whole.tool_calls![0]!.name, whole.tool_calls![0]!.args]);
    expect(["get_weather", "get_time"]).toContain(whole.tool_calls![0]!.name);
    expect(acc!.response_metadata.finish_reason).toBe("tool_calls");
    expect(acc!.usage_metadata).toMatchObject({ input_tokens: whole.usage_metadata!.input_tokens, output_tokens: whole.usage_metadata!.output_tokens });
  });

  it("abort mid-stream, then the next request is served", async () => {
    const ac = new AbortController();
    let n = 0;
    await expect(
      (async () => {
        for await (const _ of await chat(MODELS.chat, { maxTokens: 100000 }).stream([new HumanMessage("Go on")], { signal: ac.signal })) {
          if (++n === 2) ac.abort();
        }
      })(),
    ).rejects.toThrow(/abort/i);
    expect(n).toBe(2);
    const next = await chat().invoke([new HumanMessage("Next")]);
    expect((next.content as string).length).toBeGreaterThan(0);
  });
});

describe("@langchain/openai ChatOpenAI with useResponsesApi (/v1/responses)", () => {
  const responses = (model: string = MODELS.chat, extra: ConstructorParameters<typeof ChatOpenAI>[0] = {}) => chat(model, { useResponsesApi: true, ...extra });
  it("invoke and stream: the native answer's text and counts, the response id", async () => {
    await native(MODELS.chat, plain); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const ref = await native(MODELS.chat, plain);
    const r = await responses().invoke(messages);
    expect(r.text).toBe(ref.message.content);
    expect(r.usage_metadata).toMatchObject({ input_tokens: ref.prompt_eval_count, output_tokens: ref.eval_count, total_tokens: ref.prompt_eval_count + ref.eval_count });
    expect(r.response_metadata.id).toMatch(/^resp_/);
    expect(r.response_metadata.status).toBe("incomplete"); // cut off at max_output_tokens: ref.done_reason is "length"
    expect(ref.done_reason).toBe("length");
    let whole: AIMessageChunk | undefined;
    let n = 0;
    for await (const chunk of await responses().stream(messages)) {
      whole = whole ? whole.concat(chunk) : chunk;
      n++;
    }
    expect(n).toBeGreaterThan(2);
    expect(whole!.text).toBe(ref.message.content);
    expect(whole!.usage_metadata).toMatchObject({ input_tokens: ref.prompt_eval_count, output_tokens: ref.eval_count });
  });

  it("a second turn sends the first answer back as LangChain converts it: the native conversation's prompt", async () => {
    const first = await responses().invoke(messages);
    const next = new HumanMessage("And then?");
    const second = await responses().invoke([...messages, first, next]);
    const ref = await native(MODELS.chat, [...plain, { role: "assistant", content: first.text }, { role: "user", content: "And then?" }]);
    expect(second.usage_metadata!.input_tokens).toBe(ref.prompt_eval_count);
    expect(second.text).toBe(ref.message.content);
  });

  it("withStructuredOutput (text.format json_schema) and a forced tool call whose result goes back as function_call_output", async () => {
    expectAnswer(await responses(MODELS.chat, { maxTokens: 64 }).withStructuredOutput({ title: "Answer", ...ANSWER_SCHEMA }).invoke([new HumanMessage("yes or no?")]));
    const withTools = responses(MODELS.tools, { maxTokens: 128 }).bindTools(FINITE_TOOLS, { tool_choice: "get_time" });
    const ask = new HumanMessage("What time is it?");
    const r = await withTools.invoke([ask]);
    expect(r.invalid_tool_calls ?? []).toEqual([]);
    expect(r.tool_calls).toEqual([expect.objectContaining({ name: "get_time", args: { zone: expect.stringMatching(/^(UTC|CET)$/) }, id: expect.stringMatching(/^call_/) })]);
    const follow = responses(MODELS.tools).bindTools(FINITE_TOOLS);
    const answer = (result: string) => follow.invoke([ask, r, new ToolMessage({ content: result, tool_call_id: r.tool_calls![0]!.id! })]);
    const short = await answer("noon");
    const long = await answer("noon, and the bells of the town hall are ringing twelve times");
    expect(short.text.length).toBeGreaterThan(0);
    expect(long.usage_metadata!.input_tokens).toBeGreaterThan(short.usage_metadata!.input_tokens);
  });
});

describe("@langchain/openai OpenAIEmbeddings on /v1 (base64 by default)", () => {
  it("embedQuery and embedDocuments equal /api/embed's vectors; dimensions cuts them", async () => {
    const texts = ["hello world", "other words\nacross lines", "third"];
    // LangChain replaces newlines with spaces before sending
    const ref = await postJson(d.url, "/api/embed", { model: MODELS.embed, input: texts.map((t) => t.replace(/\n/g, " ")) });
    expect(ref.status, ref.text).toBe(200);
    const refVectors = ref.json.embeddings as number[][];
    const emb = new OpenAIEmbeddings({ model: MODELS.embed, apiKey: "ollama", configuration: { baseURL: `${d.url}/v1` }, maxRetries: 0 });
    const q = await emb.embedQuery(texts[0]!);
    expect(q).toHaveLength(EMBED_DIM);
    // float32 over the wire (base64) against /api/embed's JSON numbers
    for (let i = 0; i < EMBED_DIM; i++) expect(q[i]).toBeCloseTo(refVectors[0]![i]!, 6);
    const docs = await emb.embedDocuments(texts);
    expect(docs).toHaveLength(3);
    for (const [k, v] of docs.entries()) for (let i = 0; i < EMBED_DIM; i++) expect(v[i]).toBeCloseTo(refVectors[k]![i]!, 6);
    const short = await new OpenAIEmbeddings({ model: MODELS.embed, apiKey: "ollama", configuration: { baseURL: `${d.url}/v1` }, maxRetries: 0, dimensions: 8 }).embedQuery(texts[0]!);
    const refShort = await postJson(d.url, "/api/embed", { model: MODELS.embed, input: texts[0], dimensions: 8 });
    expect(short).toHaveLength(8);
    for (let i = 0; i < 8; i++) expect(short[i]).toBeCloseTo(refShort.json.embeddings[0][i], 6);
  });
});
