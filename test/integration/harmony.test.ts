// gpt-oss's harmony format end to end: a generated model with gpt-oss's chat template and its
// harmony tokens, created with Ollama's `parser: "harmony"`, answered through /api/chat, /api/generate
// and the OpenAI route. Its answer is messages on channels (`<|channel|>analysis` is thinking,
// `final` is content, a message `to=functions.x` a tool call), read by the harmony parser.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { HarmonyNames, HarmonyParser } from "../../src/daemon/prompt/harmony.js";
import { createModelFromFile, postJson, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
const MODEL = "harmony";
const WEATHER = {
  type: "function",
  function: {
    name: "get-weather now",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"], additionalProperties: false },
  },
};

const post = (route: string, body: unknown) => postJson(d.url, route, body);

beforeAll(async () => {
  d = await startDaemon({ OLLAMA_KEEP_ALIVE: "30s" });
  const file = await makeTestModel({ template: "harmony" });
  const r = await createModelFromFile(d.url, MODEL, file, { parser: "harmony" });
  expect(r.status, await r.text()).toBe(200);
}, 60_000);

afterAll(async () => {
  await d?.stop();
});

describe("harmony (gpt-oss)", () => {
  it("shows the parser's capabilities, and renders tools as identifiers, thinking as analysis, think levels as reasoning", async () => {
    const show = await post("/api/show", { model: MODEL });
    expect(show.json.capabilities).toEqual(expect.arrayContaining(["completion", "tools", "thinking"]));
    const r = await post("/api/chat", {
      model: MODEL,
      _debug_render_only: true,
      think: "max",
      tools: [WEATHER],
      messages: [
        { role: "user", content: "Weather?" },
        { role: "assistant", content: "", thinking: "They want weather.", tool_calls: [{ function: { name: "get-weather now", arguments: { city: "Oslo" } } }] },
        { role: "tool", content: "sunny", tool_name: "get-weather now" },
        { role: "user", content: "Thanks" },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const prompt = r.json._debug_info.rendered_template as string;
    expect(prompt).toContain("Reasoning: high");
    expect(prompt).toContain("type get_weather_now = (_: {");
    expect(prompt).toContain("<|start|>assistant<|channel|>analysis<|message|>They want weather.<|end|>");
    expect(prompt.endsWith("<|start|>assistant")).toBe(true);
  });

  // A grammar makes the model write harmony messages (a JSON string holding them): the chat's
  // thinking and content are what the harmony parser reads in the same text generated raw.
  const FORMAT = { type: "string", pattern: String.raw`^<\|channel\|>analysis<\|message\|>[a-z]{3,8}<\|end\|><\|start\|>assistant<\|channel\|>final<\|message\|>[a-z]{3,8}$` };
  const GREEDY = { temperature: 0, num_predict: 256, repeat_penalty: 1 };

  it("splits a streamed chat answer into thinking and content as the harmony parser splits the raw text", async () => {
    const messages = [{ role: "user", content: "Tell me a story about the sea" }];
    const rendered = (await post("/api/chat", { model: MODEL, messages, _debug_render_only: true })).json._debug_info.rendered_template as string;
    const raw = await post("/api/generate", { model: MODEL, prompt: rendered, raw: true, stream: false, format: FORMAT, options: GREEDY });
    expect(raw.status, raw.text).toBe(200);
    const want = new HarmonyParser(new HarmonyNames()).add(raw.json.response);
    expect(want.thinking).toMatch(/^[a-z]{3,8}$/);
    expect(want.content).toMatch(/^[a-z]{3,8}"$/);

    // think: false makes the format apply from the first token (Ollama's rule); harmony still thinks
    const r = await fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: MODEL, messages, think: false, format: FORMAT, options: GREEDY }) });
    const lines = (await r.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.at(-1).done).toBe(true);
    expect(lines.map((l) => l.message.content).join("")).toBe(want.content);
    expect(lines.map((l) => l.message.thinking ?? "").join("")).toBe(want.thinking);

    // /api/generate reads the model's answer the same way
    const gen = await post("/api/generate", { model: MODEL, prompt: "Tell me a story about the sea", stream: false, think: false, format: FORMAT, options: GREEDY });
    expect(gen.status, gen.text).toBe(200);
    expect(gen.json.response).toBe(want.content);
    expect(gen.json.thinking).toBe(want.thinking);
  });

  it("tool_choice makes the answer a call to the tool, under the client's name", async () => {
    const r = await post("/api/chat", {
      model: MODEL,
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [WEATHER],
      tool_choice: { type: "function", function: { name: "get-weather now" } },
      stream: false,
      options: { ...GREEDY, num_predict: 200 },
    });
    expect(r.status, r.text).toBe(200);
    const calls = r.json.message.tool_calls;
    expect(calls).toHaveLength(1);
    expect(calls[0].function.name).toBe("get-weather now");
    expect(typeof calls[0].function.arguments.city).toBe("string");
    expect(Object.keys(calls[0].function.arguments)).toEqual(["city"]);
    expect(r.json.message.content).toBe("");

    const openai = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "unused" });
    const c = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      tools: [WEATHER as OpenAI.ChatCompletionTool],
      tool_choice: "required",
      temperature: 0,
      max_tokens: 200,
    });
    expect(c.choices[0]!.finish_reason).toBe("tool_calls");
    const call = c.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe("get-weather now");
    expect(Object.keys(JSON.parse(call.function.arguments))).toEqual(["city"]);

    // several tools: each one's header, then its own arguments; the model writes one of them
    // finite values, so that sampled arguments end
    const weather = { type: "function", function: { ...WEATHER.function, parameters: { type: "object", properties: { city: { enum: ["Oslo", "Rome"] } }, required: ["city"] } } };
    const clock = { type: "function", function: { name: "clock", description: "The time", parameters: { type: "object", properties: { zone: { enum: ["UTC", "CET"] } }, required: ["zone"] } } };
    for (const seed of [1, 2, 3]) {
      const r = await post("/api/chat", { model: MODEL, messages: [{ role: "user", content: "Weather or time?" }], tools: [weather, clock], tool_choice: "required", stream: false, options: { seed, temperature: 1, num_predict: 200 } });
      expect(r.status, r.text).toBe(200);
      const [one, ...more] = r.json.message.tool_calls as Array<{ function: { name: string; arguments: Record<string, unknown> } }>;
      expect(more).toEqual([]);
      if (one!.function.name === "clock") expect(one!.function.arguments).toEqual({ zone: expect.stringMatching(/^(UTC|CET)$/) });
      else expect([one!.function.name, one!.function.arguments]).toEqual(["get-weather now", { city: expect.stringMatching(/^(Oslo|Rome)$/) }]);
    }
  });
});
