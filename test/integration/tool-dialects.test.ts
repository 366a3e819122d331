// A model whose calls are markup, end to end: a generated model with Qwen3-Coder's chat template
// (no Go template matches it, so the GGUF's Jinja template renders) writes
// `<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>`; a grammar
// (a string `pattern` format) makes it write exactly that, and /api/chat must answer with the call,
// streamed or not, its values typed by the tool's schema; the OpenAI route sends it as tool_calls;
// tool_choice makes the model write a call in that syntax.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, postJson, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
const MODEL = "coder-calls";
const WEATHER = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
  },
};
const GREEDY = { temperature: 0, seed: 1, num_predict: 120 };
// the call as Qwen3-Coder writes it, its values chosen by the model within the pattern
const FORMAT = {
  type: "string",
  pattern: String.raw`^<tool_call><function=get_weather><parameter=city>[A-Z][a-z]{2,8}</parameter><parameter=days>[1-9]</parameter></function></tool_call>$`,
};
const MESSAGES = [{ role: "user", content: "What is the weather in Paris?" }];

beforeAll(async () => {
  d = await startDaemon({ OLLAMA_KEEP_ALIVE: "30s" });
  const file = await makeTestModel({ template: "qwen3-coder" });
  const r = await createModelFromFile(d.url, MODEL, file);
  expect(r.status, await r.text()).toBe(200);
}, 60_000);

afterAll(async () => {
  await d?.stop();
});

// finite values, so that a model of random weights ends its call rather than writing on
const FINITE_TOOLS = [
  { type: "function", function: { name: "get_weather", description: "The weather", parameters: { type: "object", properties: { city: { enum: ["Oslo", "Rome"] }, days: { type: "integer", minimum: 1, maximum: 9 }, detailed: { type: "boolean" } }, required: ["city"] } } },
  { type: "function", function: { name: "get_time", description: "The time", parameters: { type: "object", properties: { zone: { type: "string", enum: ["UTC", "CET"] } }, required: ["zone"] } } },
];

/** tool_choice "required", sampled with six seeds: each answer is one call of an offered tool
 *  with arguments its schema allows, and no markup in the content. */
async function expectForcedCalls(model: string): Promise<void> {
  for (let seed = 1; seed <= 6; seed++) {
    const r = await postJson(d.url, "/api/chat", { model, messages: MESSAGES, tools: FINITE_TOOLS, tool_choice: "required", stream: false, options: { seed, temperature: 1, num_predict: 200 } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.done_reason, r.text).toBe("stop");
    const calls = r.json.message.tool_calls as Array<{ function: { name: string; arguments: Record<string, unknown> } }>;
    expect(calls, r.text).toHaveLength(1);
    const { name, arguments: args } = calls[0]!.function;
    if (name === "get_weather") {
      expect(["Oslo", "Rome"]).toContain(args.city);
      if ("days" in args) expect(args.days).toEqual(expect.any(Number));
      if ("detailed" in args) expect(args.detailed).toEqual(expect.any(Boolean));
      expect(Object.keys(args).every((k) => ["city", "days", "detailed"].includes(k))).toBe(true);
    } else expect([name, args]).toEqual(["get_time", { zone: expect.stringMatching(/^(UTC|CET)$/) }]);
    expect(r.json.message.content).not.toMatch(/<function=|get_|>>>/);
  }
}

describe("tool calls in a model's own markup (Qwen3-Coder)", () => {
  it("renders the tools and past calls with the model's template, and answers with the call it writes, typed, streamed or not", async () => {
    const shown = await postJson(d.url, "/api/chat", {
      model: MODEL,
      _debug_render_only: true,
      tools: [WEATHER],
      messages: [...MESSAGES, { role: "assistant", content: "", tool_calls: [{ function: { name: "get_weather", arguments: { city: "Oslo", days: 2 } } }] }, { role: "tool", content: "sunny", tool_name: "get_weather" }],
    });
    expect(shown.status, shown.text).toBe(200);
    const prompt = shown.json._debug_info.rendered_template as string;
    expect(prompt).toContain("<function>\n<name>get_weather</name>");
    expect(prompt).toContain("<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>");

    const once = await postJson(d.url, "/api/chat", { model: MODEL, messages: MESSAGES, tools: [WEATHER], format: FORMAT, stream: false, options: GREEDY });
    expect(once.status, once.text).toBe(200);
    const calls = once.json.message.tool_calls as Array<{ function: { name: string; arguments: { city: string; days: number } } }>;
    expect(calls).toHaveLength(1);
    expect(calls[0]!.function.name).toBe("get_weather");
    expect(calls[0]!.function.arguments.city).toMatch(/^[A-Z][a-z]{2,8}$/);
    expect(typeof calls[0]!.function.arguments.days).toBe("number"); // "days" is an integer in the schema
    expect(once.json.message.content).not.toContain("<function=");

    // streamed: the same call, once, and no markup in the content
    const r = await fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: MODEL, messages: MESSAGES, tools: [WEATHER], format: FORMAT, options: GREEDY }) });
    const lines = (await r.text()).trim().split("\n").map((l) => JSON.parse(l) as { message?: { content?: string; tool_calls?: unknown[] } });
    const streamed = lines.flatMap((l) => l.message?.tool_calls ?? []);
    expect(streamed).toEqual(calls.map((c) => ({ ...c, id: expect.any(String) })));
    expect(lines.map((l) => l.message?.content ?? "").join("")).not.toContain("<function=");
  });

  it("a model made as Ollama's library makes it (RENDERER and PARSER qwen3-coder, TEMPLATE {{ .Prompt }}) renders with the model's own template and reads its calls", async () => {
    const file = await makeTestModel({ template: "qwen3-coder" });
    const made = await createModelFromFile(d.url, "coder-library", file, { template: "{{ .Prompt }}", renderer: "qwen3-coder", parser: "qwen3-coder" });
    expect(made.status, await made.text()).toBe(200);
    const show = await postJson(d.url, "/api/show", { model: "coder-library" });
    expect(show.json.capabilities).toEqual(["completion", "tools"]);
    expect(show.json.modelfile).toContain("RENDERER qwen3-coder");
    const shown = await postJson(d.url, "/api/chat", { model: "coder-library", _debug_render_only: true, tools: [WEATHER], messages: [{ role: "system", content: "Be brief." }, ...MESSAGES] });
    const prompt = shown.json._debug_info.rendered_template as string;
    // the whole conversation in the model's own form, not the bare last prompt
    expect(prompt.startsWith("<|im_start|>system\nBe brief.")).toBe(true);
    expect(prompt).toContain("<name>get_weather</name>");
    expect(prompt.endsWith("<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n<|im_start|>assistant\n")).toBe(true);
    const once = await postJson(d.url, "/api/chat", { model: "coder-library", messages: MESSAGES, tools: [WEATHER], format: FORMAT, stream: false, options: GREEDY });
    expect(once.json.message.tool_calls?.[0]?.function.name, once.text).toBe("get_weather");
  });

  it("the OpenAI route sends the call as tool_calls with JSON arguments", async () => {
    const client = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "ollama" });
    const c = await client.chat.completions.create({
      model: MODEL,
      messages: MESSAGES as OpenAI.ChatCompletionMessageParam[],
      tools: [WEATHER as OpenAI.ChatCompletionTool],
      temperature: 0,
      seed: 1,
      max_tokens: 120,
      // the same grammar, as this route takes it
      response_format: { type: "json_schema", json_schema: { name: "call", schema: FORMAT } },
    });
    const choice = c.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    const call = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toMatchObject({ city: expect.stringMatching(/^[A-Z][a-z]{2,8}$/), days: expect.any(Number) });
  });

  it("tool_choice (beyond Ollama) makes the answer a call in the model's own markup, sampled or not, whichever tool it must be", async () => {
    const tools = FINITE_TOOLS;
    await expectForcedCalls(MODEL);
    // parameters no value satisfies: a 400 that names tool_choice, not a format the client never sent
    const impossible = { type: "function", function: { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 5, maximum: 1 } }, required: ["n"] } } };
    const bad = await postJson(d.url, "/api/chat", { model: MODEL, messages: MESSAGES, tools: [impossible], tool_choice: "required", stream: false });
    expect([bad.status, bad.json.error]).toEqual([400, expect.stringMatching(/^tool_choice cannot make the answer a call of the offered tools: no integer lies between 5 and 1$/)]);

    // a named function through the OpenAI client: that one, streamed
    const client = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "ollama" });
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: MESSAGES as OpenAI.ChatCompletionMessageParam[],
      tools: tools as OpenAI.ChatCompletionTool[],
      tool_choice: { type: "function", function: { name: "get_time" } },
      max_tokens: 200,
      stream: true,
    });
    const names: string[] = [];
    let args = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const t of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (t.function?.name) names.push(t.function.name);
        args += t.function?.arguments ?? "";
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(names).toEqual(["get_time"]);
    expect(JSON.parse(args)).toEqual({ zone: expect.stringMatching(/^(UTC|CET)$/) });
    expect(finish).toBe("tool_calls");
  });
});

describe("a model that addresses every message (functionary v3.2)", () => {
  it("its prompt ends in the marker; tool_choice makes it address a tool with JSON arguments, read as a call", async () => {
    const file = await makeTestModel({ template: "functionary" });
    const r = await createModelFromFile(d.url, "addressed", file);
    expect(r.status, await r.text()).toBe(200);
    const shown = await postJson(d.url, "/api/chat", { model: "addressed", _debug_render_only: true, tools: FINITE_TOOLS, messages: MESSAGES });
    expect((shown.json._debug_info.rendered_template as string).endsWith("<|start_header_id|>assistant<|end_header_id|>\n\n>>>")).toBe(true);
    await expectForcedCalls("addressed");
  });
});
