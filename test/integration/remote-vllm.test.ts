// A remote model on a vLLM upstream (the contract fake of test/helpers/vllm-fake.ts): vLLM's own
// fields both ways (reasoning_content, guided_json, usage in the last chunk, /health, /tokenize),
// tools, options, the bearer key kept out of show/ps/logs, replicas, and the faults: an upstream
// that dies mid-stream, one that hangs, a client that leaves.
import { Ollama } from "ollama";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { ENDLESS_CAP, startVllmFake, type VllmFake } from "../helpers/vllm-fake.js";

const MODEL = "Qwen/Qwen3-8B";
const KEY = "sk-vllm-secret-4242";
let fake: VllmFake;
let d: TestDaemon;
let ollama: Ollama;

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${d.url}${path}`, { method: "POST", body: JSON.stringify(body) });
}
const lastBody = () => fake.requests.at(-1)?.body ?? {};

beforeAll(async () => {
  fake = await startVllmFake({ model: MODEL, apiKey: KEY });
  d = await startDaemon({
    OLLAMA_REMOTES: "127.0.0.1",
    OLLAMATS_REMOTE_KEYS: `127.0.0.1:${fake.port}=${KEY}`,
    OLLAMATS_REMOTE_TIMEOUT: "2s",
    OLLAMATS_REMOTE_HEALTH_INTERVAL: "200ms",
  });
  ollama = new Ollama({ host: d.url });
  const r = await post("/api/create", { model: "qwen", from: MODEL, remote_host: `${fake.url}/v1`, stream: false });
  expect(r.status, await r.clone().text()).toBe(200);
});

afterAll(async () => {
  await d?.stop();
  await fake?.stop();
});

describe("a remote model on vLLM", () => {
  it("is created only for a model the upstream serves, and shown like Ollama's remote models, without the key", async () => {
    const bad = await post("/api/create", { model: "nope", from: "other/model", remote_host: `${fake.url}/v1`, stream: false });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain(`does not serve model 'other/model' (it serves: ${MODEL})`);
    const creds = await post("/api/create", { model: "nope", from: MODEL, remote_host: `http://user:${KEY}@127.0.0.1:${fake.port}/v1`, stream: false });
    expect(creds.status).toBe(400);
    expect(((await creds.json()) as { error: string }).error).toContain("OLLAMATS_REMOTE_KEYS");

    const show = await ollama.show({ model: "qwen" });
    expect(show).toMatchObject({ remote_model: MODEL, remote_host: `${fake.url}/v1` });
    expect(show.capabilities).toEqual(expect.arrayContaining(["completion", "tools", "thinking"]));
    const listed = (await ollama.list()).models.find((m) => m.name === "qwen:latest") as unknown as Record<string, unknown>;
    expect(listed).toMatchObject({ remote_model: MODEL, remote_host: `${fake.url}/v1` });
    expect(JSON.stringify(show) + JSON.stringify(listed)).not.toContain(KEY);
  });

  it("is refused with Ollama's message when its host is not in OLLAMA_REMOTES", async () => {
    const r = await post("/api/create", { model: "elsewhere", from: MODEL, remote_host: `http://localhost:${fake.port}/v1`, stream: false });
    expect(r.status).toBe(200);
    const chat = await post("/api/chat", { model: "elsewhere", messages: [{ role: "user", content: "hi" }], stream: false });
    expect(chat.status).toBe(400);
    expect(await chat.json()).toEqual({ error: "this server cannot run this remote model" });
  });

  it("streams reasoning_content as thinking and content as content, with vLLM's usage as Ollama's counts", async () => {
    fake.script = { reasoning: ["Let me", " think."], content: ["The answer", " is 4."], finish: "stop", usage: { prompt_tokens: 11, completion_tokens: 6 } };
    const parts = { thinking: "", content: "" };
    let final;
    for await (const ch of await ollama.chat({ model: "qwen", messages: [{ role: "user", content: "2+2?" }], think: true, stream: true })) {
      parts.thinking += ch.message.thinking ?? "";
      parts.content += ch.message.content;
      if (ch.done) final = ch;
    }
    expect(parts).toEqual({ thinking: "Let me think.", content: "The answer is 4." });
    expect(final).toMatchObject({ done_reason: "stop", prompt_eval_count: 11, eval_count: 6 });
    const sent = lastBody();
    expect(sent).toMatchObject({ model: MODEL, stream: true, stream_options: { include_usage: true }, chat_template_kwargs: { enable_thinking: true } });
    expect(fake.requests.at(-1)?.authorization).toBe(`Bearer ${KEY}`);
    // Only the options that were set go upstream: vLLM's own defaults hold for the rest.
    expect(sent).not.toHaveProperty("temperature");
    expect(sent).not.toHaveProperty("max_tokens");
  });

  it("an answer that arrives in one upstream read: every token a line, in order, the last with the stats (/api and /v1)", async () => {
    const words = Array.from({ length: 12 }, (_, i) => `t${i} `);
    fake.script = { reasoning: ["hm"], content: words, finish: "length", usage: { prompt_tokens: 9, completion_tokens: 13 } };
    fake.mode = "burst";
    try {
      const r = await post("/api/chat", { model: "qwen", messages: [{ role: "user", content: "burst" }], think: true });
      const lines = (await r.text()).trim().split("\n").map((l) => JSON.parse(l) as { message: { content: string; thinking?: string }; done: boolean });
      expect(lines.map((l) => l.message.thinking ?? l.message.content)).toEqual(["hm", ...words, ""]);
      expect(lines.at(-1)).toMatchObject({ done: true, done_reason: "length", prompt_eval_count: 9, eval_count: 13 });
      expect(lines.slice(0, -1).every((l) => !l.done)).toBe(true);

      const v1 = await post("/v1/chat/completions", { model: "qwen", messages: [{ role: "user", content: "burst" }], stream: true, stream_options: { include_usage: true } });
      const events = (await v1.text()).split("\n\n").filter((e) => e.startsWith("data: "));
      expect(events.at(-1)).toBe("data: [DONE]");
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }>; usage?: unknown });
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(words.join(""));
      expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("length");
      expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 9, completion_tokens: 13, total_tokens: 22 });
    } finally {
      fake.mode = "normal";
    }
  });

  it("maps options, format (response_format and guided_json) and done_reason", async () => {
    fake.script = { content: ['{"ok":', "true}"], finish: "length", usage: { prompt_tokens: 5, completion_tokens: 2 } };
    const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] };
    const r = await ollama.chat({
      model: "qwen",
      messages: [{ role: "user", content: "json" }],
      format: schema,
      options: { temperature: 0.3, top_p: 0.5, top_k: 7, seed: 42, num_predict: 9, stop: ["END"], repeat_penalty: 1.2, presence_penalty: 0.1, frequency_penalty: 0.2 },
      stream: false,
    });
    expect(r.message.content).toBe('{"ok":true}');
    expect(r.done_reason).toBe("length");
    expect(lastBody()).toMatchObject({
      temperature: 0.3,
      top_p: 0.5,
      top_k: 7,
      seed: 42,
      max_tokens: 9,
      stop: ["END"],
      repetition_penalty: 1.2,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      guided_json: schema,
      response_format: { type: "json_schema", json_schema: { schema } },
    });
  });

  it("assembles streamed tool-call deltas into one call with object arguments; tool results go back with their id", async () => {
    fake.script = { toolCall: { name: "get_weather", arguments: ['{"city"', ': "Paris"}'] }, finish: "tool_calls", usage: { prompt_tokens: 20, completion_tokens: 8 } };
    const tools = [{ type: "function", function: { name: "get_weather", description: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    const r = await ollama.chat({ model: "qwen", messages: [{ role: "user", content: "weather?" }], tools, stream: false });
    expect(r.message.tool_calls).toEqual([expect.objectContaining({ function: expect.objectContaining({ name: "get_weather", arguments: { city: "Paris" } }) })]);
    expect(lastBody().tools).toEqual(tools);

    fake.script = { content: ["Sunny."], finish: "stop", usage: { prompt_tokens: 30, completion_tokens: 2 } };
    const follow = await ollama.chat({
      model: "qwen",
      messages: [{ role: "user", content: "weather?" }, r.message, { role: "tool", content: "sunny", tool_name: "get_weather" }],
      tools,
      stream: false,
    });
    expect(follow.message.content).toBe("Sunny.");
    const msgs = lastBody().messages as Array<Record<string, unknown>>;
    const callId = (msgs[1]?.tool_calls as Array<{ id: string; function: { arguments: string } }>)[0];
    expect(callId?.function.arguments).toBe('{"city":"Paris"}');
    expect(msgs[2]).toEqual({ role: "tool", content: "sunny", tool_call_id: callId?.id });
  });

  it("serves /v1 clients, /api/generate, embeddings and tokenize through the upstream", async () => {
    fake.script = { content: ["Hi", "!"], finish: "stop", usage: { prompt_tokens: 3, completion_tokens: 2 } };
    const openai = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "unused" });
    const c = await openai.chat.completions.create({ model: "qwen", messages: [{ role: "user", content: "hi" }] });
    expect(c.choices[0]?.message.content).toBe("Hi!");
    expect(c.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 2 });
    const g = await ollama.generate({ model: "qwen", prompt: "hi", system: "Be nice.", stream: false });
    expect(g.response).toBe("Hi!");
    expect(lastBody().messages).toEqual([{ role: "system", content: "Be nice." }, { role: "user", content: "hi" }]);
    const raw = await ollama.generate({ model: "qwen", prompt: "<raw>", raw: true, stream: false });
    expect(raw.response).toBe("Hi!");
    expect(fake.requests.at(-1)).toMatchObject({ path: "/v1/completions", body: { prompt: "<raw>" } });

    const e = await ollama.embed({ model: "qwen", input: ["ab", "abcd"] });
    expect(e.embeddings).toHaveLength(2);
    expect(Math.hypot(...e.embeddings[1]!)).toBeCloseTo(1, 6);
    expect(e.prompt_eval_count).toBe(4);

    const t = await post("/api/tokenize", { model: "qwen", content: "AB" });
    expect(await t.json()).toEqual({ tokens: [65, 66] });
    const dt = await post("/api/detokenize", { model: "qwen", tokens: [72, 105] });
    expect(await dt.json()).toEqual({ content: "Hi" });
  });

  it("what vLLM cannot do is a clear 400", async () => {
    const lp = await post("/api/chat", { model: "qwen", messages: [{ role: "user", content: "x" }], logprobs: true, stream: false });
    expect(lp.status).toBe(400);
    expect(((await lp.json()) as { error: string }).error).toMatch(/^logprobs are not supported by this backend: /);
    const dbg = await post("/api/chat", { model: "qwen", messages: [{ role: "user", content: "x" }], _debug_render_only: true });
    expect(dbg.status).toBe(400);
    expect(((await dbg.json()) as { error: string }).error).toContain("does not show its prompts");
  });

  it("ps shows the upstream and its state, never the key", async () => {
    const ps = (await (await fetch(`${d.url}/api/ps`)).json()) as { models: Array<Record<string, unknown>> };
    const m = ps.models.find((x) => x.name === "qwen:latest");
    expect(m).toMatchObject({ remote_model: MODEL, upstreams: [{ url: `${fake.url}/v1`, api: "openai", state: "healthy", outstanding: 0 }] });
    expect(JSON.stringify(ps)).not.toContain(KEY);
    expect(d.logs()).not.toContain(KEY);
  });
});

describe("faults", () => {
  it("an upstream that dies mid-stream: the client gets an error line, the daemon stays up", async () => {
    fake.script = { content: ["one", " two", " three", " four"], finish: "stop", usage: { prompt_tokens: 1, completion_tokens: 4 } };
    fake.mode = "die-mid-stream";
    try {
      const r = await post("/api/chat", { model: "qwen", messages: [{ role: "user", content: "x" }] });
      expect(r.status).toBe(200);
      const lines = (await r.text()).trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines.at(-1)?.error).toMatch(/in the middle of the answer/);
      expect(lines.some((l) => l.done === true)).toBe(false);
    } finally {
      fake.mode = "normal";
    }
    expect((await fetch(`${d.url}/api/version`)).status).toBe(200);
    expect((await ollama.chat({ model: "qwen", messages: [{ role: "user", content: "again" }], stream: false })).done).toBe(true);
  });

  it("an upstream that sends without end: a clear 502, the connection closed after a bounded read, the daemon up", async () => {
    const chat = { model: "qwen", messages: [{ role: "user", content: "x" }] };
    const cases = [
      { mode: "endless", path: "/api/chat", body: chat, error: /not an event stream: a line of the stream exceeds 8388608 characters/, most: 64 << 20 },
      { mode: "endless", path: "/api/tokenize", body: { model: "qwen", content: "hi" }, error: /answer of upstream .* exceeds 67108864 bytes/, most: 160 << 20 },
      { mode: "endless-error", path: "/api/chat", body: { ...chat, stream: false }, error: /failed \(500\): \{"object":"error","message":"a+$/, most: 32 << 20 },
    ] as const;
    try {
      for (const c of cases) {
        fake.mode = c.mode;
        const r = await post(c.path, c.body);
        expect(r.status, c.path).toBe(502);
        const { error } = (await r.json()) as { error: string };
        expect(error).toMatch(c.error);
        expect(error.length).toBeLessThan(1000);
        // what the fake managed to send before the daemon closed: its limit plus socket buffers
        await new Promise((res) => setTimeout(res, 200));
        expect(fake.endlessSent).toBeLessThan(c.most);
        expect(fake.endlessSent).toBeLessThan(ENDLESS_CAP);
      }
    } finally {
      fake.mode = "normal";
    }
    expect((await fetch(`${d.url}/api/version`)).status).toBe(200);
    await new Promise((res) => setTimeout(res, 500)); // a health check finds the upstream well again
    expect((await ollama.chat({ model: "qwen", messages: [{ role: "user", content: "again" }], stream: false })).done).toBe(true);
  });

  it("an upstream that hangs: a 504 after OLLAMATS_REMOTE_TIMEOUT, not a hang", async () => {
    fake.mode = "hang";
    const t0 = Date.now();
    try {
      const r = await post("/api/chat", { model: "qwen", messages: [{ role: "user", content: "x" }], stream: false });
      expect(r.status).toBe(504);
      expect(((await r.json()) as { error: string }).error).toContain("did not answer in time");
    } finally {
      fake.mode = "normal";
    }
    expect(Date.now() - t0).toBeLessThan(20_000); // 2 s of silence; generous for a loaded machine
  });

  it("an upstream that hangs up as a request goes out: sent once more on a new connection; one that always does: a 502 after two tries", async () => {
    fake.script = { content: ["again", " fine"], finish: "stop", usage: { prompt_tokens: 2, completion_tokens: 2 } };
    for (const stream of [true, false]) {
      const before = { hungUp: fake.hungUp, requests: fake.requests.length };
      fake.mode = "hang-up-once";
      const r = await post("/api/chat", { model: "qwen", messages: [{ role: "user", content: `once ${stream}` }], stream });
      expect(r.status, await r.clone().text()).toBe(200);
      const lines = (await r.text()).trim().split("\n").map((l) => JSON.parse(l) as { message?: { content: string }; done?: boolean });
      expect(lines.map((l) => l.message?.content ?? "").join("")).toBe("again fine");
      expect(lines.at(-1)?.done).toBe(true);
      expect(fake.hungUp).toBe(before.hungUp + 1);
      // the same request twice: the one hung up on, and the one answered
      const sent = fake.requests.slice(before.requests);
      expect(sent).toHaveLength(2);
      expect(sent[1]?.body).toEqual(sent[0]?.body);
    }
    fake.mode = "hang-up";
    try {
      const before = fake.hungUp;
      const r = await post("/api/chat", { model: "qwen", messages: [{ role: "user", content: "always" }], stream: false });
      expect(r.status).toBe(502);
      expect(((await r.json()) as { error: string }).error).toMatch(/is unreachable \((UND_ERR_SOCKET|ECONNRESET)\)/);
      expect(fake.hungUp).toBe(before + 2);
    } finally {
      fake.mode = "normal";
    }
    await new Promise((res) => setTimeout(res, 500)); // a health check finds the upstream well again
    expect((await ollama.chat({ model: "qwen", messages: [{ role: "user", content: "after" }], stream: false })).done).toBe(true);
  });

  it("a client that leaves aborts the upstream request at once", async () => {
    fake.script = { content: Array.from({ length: 40 }, (_, i) => `w${i} `), finish: "stop", usage: { prompt_tokens: 1, completion_tokens: 40 } };
    fake.mode = "slow";
    const before = fake.closedEarly;
    try {
      const ac = new AbortController();
      const r = await fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: "qwen", messages: [{ role: "user", content: "x" }] }), signal: ac.signal });
      const reader = r.body!.getReader();
      await reader.read();
      ac.abort();
      const deadline = Date.now() + 10_000;
      while (fake.closedEarly === before && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
      expect(fake.closedEarly).toBe(before + 1);
    } finally {
      fake.mode = "normal";
    }
  });

  it("one of two replicas down: every request succeeds, and ps shows the dead one", async () => {
    const dead = await freePort();
    const r = await post("/api/create", { model: "pair", from: MODEL, remote_host: `http://127.0.0.1:${dead}/v1, ${fake.url}/v1`, stream: false });
    expect(r.status, await r.clone().text()).toBe(200);
    fake.script = { content: ["ok"], finish: "stop", usage: { prompt_tokens: 1, completion_tokens: 1 } };
    for (let i = 0; i < 5; i++) {
      const c = await ollama.chat({ model: "pair", messages: [{ role: "user", content: `n${i}` }], stream: false });
      expect(c.message.content).toBe("ok");
    }
    const ps = (await (await fetch(`${d.url}/api/ps`)).json()) as { models: Array<{ name: string; upstreams?: Array<{ url: string; state: string }> }> };
    const ups = ps.models.find((m) => m.name === "pair:latest")?.upstreams;
    expect(ups?.find((u) => u.url.includes(`:${dead}/`))?.state).not.toBe("healthy");
    expect(ups?.find((u) => u.url === `${fake.url}/v1`)?.state).toBe("healthy");
  });
});
