// The inference API end to end on the real daemon and runner (tiny random-weight model): format /
// JSON schema, tools (a schema forces a tool-call shape so the parser sees a real call), thinking,
// options (shift/truncate), images refused, tokenize/detokenize, heartbeats.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Ollama } from "ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

const FIXTURES = path.resolve(__dirname, "../fixtures/templates");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, `${name}.gotmpl`), "utf8");

let d: TestDaemon;
let ollama: Ollama;
let modelFile: string;
const opts = { seed: 11, num_predict: 200, temperature: 0.8 };
const post = async (p: string, body: object) => {
  const r = await fetch(`${d.url}${p}`, { method: "POST", body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
};
const lines = (text: string) => text.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);

const create = async (body: object) => {
  const r = await post("/api/create", { ...body, stream: false });
  expect(r.status).toBe(200);
};

beforeAll(async () => {
  modelFile = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  d = await startDaemon();
  ollama = new Ollama({ host: d.url });
  expect((await createModelFromFile(d.url, "tiny", modelFile)).status).toBe(200);
  expect((await ollama.generate({ model: "tiny", prompt: "" })).done_reason).toBe("load"); // warm the runner
  await create({ model: "tiny-llama32", from: "tiny", template: fixture("llama3.2") });
  await create({ model: "tiny-qwen25", from: "tiny", template: fixture("qwen2.5") });
  await create({ model: "tiny-qwen3", from: "tiny", template: fixture("qwen3") });
  // A thinking template whose prompt ends inside <think>: the whole output is thinking.
  await create({
    model: "tiny-thinker",
    from: "tiny",
    template:
      '{{- range .Messages }}{{ if eq .Role "assistant" }}{{ .Content }}{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ else }}{{ .Content }}{{ end }}{{ end }}{{ if $.Think }}<think>{{ end }}',
  });
}, 120_000);

afterAll(async () => {
  await d?.stop();
});

describe("structured output", () => {
  const schema = {
    type: "object",
    properties: {
      name: { type: "string", maxLength: 10 },
      count: { type: "integer" },
      ok: { type: "boolean" },
      color: { enum: ["red", "green", "blue"] },
      nick: { anyOf: [{ type: "string", maxLength: 6 }, { type: "null" }] },
    },
    required: ["name", "count", "ok", "color"],
  };
  const validate = (text: string) => z.fromJSONSchema(schema as never).parse(JSON.parse(text));

  it("a JSON schema constrains /api/generate: the output parses and validates", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "Describe a thing as JSON", format: schema, options: opts, stream: false });
    expect(r.done_reason).toBe("stop");
    expect(() => validate(r.response ?? "")).not.toThrow();
  });

  it("…and /api/chat, streamed, the chunks joined", async () => {
    const stream = await ollama.chat({ model: "tiny", messages: [{ role: "user", content: "JSON please" }], format: schema, options: { ...opts, seed: 12 }, stream: true });
    let text = "";
    let last;
    for await (const ch of stream) {
      text += ch.message.content;
      last = ch;
    }
    expect(last?.done_reason).toBe("stop");
    expect(() => validate(text)).not.toThrow();
  });

  it('format "json" starts a JSON object (complete JSON when the model stops by itself)', async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "JSON", format: "json", options: { ...opts, num_predict: 40 }, stream: false });
    const text = r.response ?? "";
    expect(text.startsWith("{")).toBe(true);
    if (r.done_reason === "stop") expect(() => JSON.parse(text)).not.toThrow();
  });

  it("invalid formats and schemas no value satisfies are 400s; pattern and bounds are enforced", async () => {
    const a = await post("/api/generate", { model: "tiny", prompt: "x", format: "xml" });
    expect(a.status).toBe(400);
    expect(a.json()).toEqual({ error: 'invalid format: "\\"xml\\""; expected "json" or a valid JSON Schema object' });
    const b = await post("/api/chat", { model: "tiny", messages: [{ role: "user", content: "x" }], format: { type: "nope" } });
    expect(b.status).toBe(400);
    expect(b.json()).toEqual({ error: 'invalid JSON schema in format: invalid type "nope"' });
    const c = await post("/api/chat", { model: "tiny", messages: [{ role: "user", content: "x" }], format: { type: "integer", minimum: 5, maximum: 1 } });
    expect(c.status).toBe(400);
    expect(c.json()).toEqual({ error: "invalid JSON schema in format: no integer lies between 5 and 1" });
    const d = await post("/api/chat", { model: "tiny", messages: [{ role: "user", content: "x" }], format: { type: "string", pattern: "^a[bc]{2}$" }, stream: false, options: opts });
    expect(d.status).toBe(200);
    expect(JSON.parse((d.json().message as { content: string }).content)).toMatch(/^a[bc]{2}$/);
  });
});

describe("tools", () => {
  const tools = [
    {
      type: "function",
      function: { name: "get_weather", description: "Get the weather", parameters: { type: "object", required: ["city"], properties: { city: { type: "string", description: "City" } } } },
    },
  ];
  // Forces the shape of a Llama 3.2 JSON tool call, so the random-weight model "calls" the tool.
  const callShape = {
    type: "object",
    properties: { name: { const: "get_weather" }, parameters: { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"] } },
    // Optional properties may be left out (as in Ollama's converter): a call needs both.
    required: ["name", "parameters"],
  };

  it("capabilities come from the template", async () => {
    expect((await ollama.show({ model: "tiny-llama32" })).capabilities).toEqual(["completion", "tools"]);
    expect((await ollama.show({ model: "tiny-qwen3" })).capabilities).toEqual(["completion", "tools", "thinking"]);
    expect((await ollama.show({ model: "tiny" })).capabilities).toEqual(["completion"]);
  });

  it("a tool call in the output comes back as message.tool_calls with object arguments, index and id", async () => {
    const r = await ollama.chat({ model: "tiny-llama32", messages: [{ role: "user", content: "Weather in Paris?" }], tools, format: callShape, options: opts, stream: false });
    expect(r.message.content).toBe("");
    expect(r.message.tool_calls).toHaveLength(1);
    const call = r.message.tool_calls![0]! as { id?: string; function: { index?: number; name: string; arguments: Record<string, unknown> } };
    expect(call.function.name).toBe("get_weather");
    expect(call.function.index).toBe(0);
    expect(typeof call.function.arguments).toBe("object");
    expect(typeof call.function.arguments.city).toBe("string");
    expect(call.id).toMatch(/^call_[a-z0-9]{8}$/);
    expect(r.done_reason).toBe("stop");
  });

  it("streamed, the call arrives in its own chunk before the final one", async () => {
    const r = await post("/api/chat", { model: "tiny-llama32", messages: [{ role: "user", content: "Weather?" }], tools, format: callShape, options: opts });
    const chunks = lines(r.text);
    const withCalls = chunks.filter((c) => (c.message as { tool_calls?: unknown[] }).tool_calls);
    expect(withCalls).toHaveLength(1);
    expect(withCalls[0]?.done).toBe(false);
    expect(chunks.at(-1)).toMatchObject({ done: true, message: { role: "assistant", content: "" } });
  });

  it("tool results in all three shapes render (tool_name, tool_call_id looked up, neither)", async () => {
    const template =
      '{{- range .Messages }}[{{ .Role }}{{ if .ToolName }}:{{ .ToolName }}{{ end }}]{{ .Content }}{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}{{ end }}{{ if .Tools }}{{ end }}';
    await create({ model: "tiny-toolnames", from: "tiny", template });
    const call = { id: "call_abcd1234", type: "function", function: { name: "get_weather", arguments: { city: "Oslo" } } };
    const render = async (tool: object) => {
      const r = await post("/api/chat", {
        model: "tiny-toolnames",
        tools,
        _debug_render_only: true,
        messages: [{ role: "user", content: "Weather?" }, { role: "assistant", content: "", tool_calls: [call] }, { role: "tool", content: "5C", ...tool }],
      });
      expect(r.status).toBe(200);
      return (r.json()._debug_info as { rendered_template: string }).rendered_template;
    };
    const expected = (name: string) => `[user]Weather?[assistant]{"name": "get_weather", "arguments": {"city":"Oslo"}}[tool${name}]5C`;
    expect(await render({ tool_name: "get_weather" })).toBe(expected(":get_weather"));
    expect(await render({ tool_call_id: "call_abcd1234" })).toBe(expected(":get_weather"));
    expect(await render({})).toBe(expected(""));
  });

  it("bad tools are 400s: not an object, or on a model without the tools capability", async () => {
    const a = await post("/api/chat", { model: "tiny-llama32", messages: [{ role: "user", content: "x" }], tools: ["get_weather"] });
    expect(a.status).toBe(400);
    expect(a.json()).toEqual({ error: "json: cannot unmarshal string into Go struct field ChatRequest.tools of type api.Tool" });
    const b = await post("/api/chat", { model: "tiny", messages: [{ role: "user", content: "x" }], tools });
    expect(b.status).toBe(400);
    expect(b.json()).toEqual({ error: "registry.ollama.ai/library/tiny:latest does not support tools" });
  });
});

describe("thinking", () => {
  it("think:false is accepted on every model; think:true needs the capability; bad values are 400", async () => {
    const r = await ollama.chat({ model: "tiny", messages: [{ role: "user", content: "hi" }], think: false, options: { ...opts, num_predict: 4 }, stream: false });
    expect(r.message.content.length).toBeGreaterThan(0);
    expect("thinking" in r.message).toBe(false);
    const t = await post("/api/chat", { model: "tiny", messages: [{ role: "user", content: "hi" }], think: true });
    expect(t.status).toBe(400);
    expect(t.json()).toEqual({ error: '"tiny" does not support thinking' });
    const v = await post("/api/generate", { model: "tiny", prompt: "hi", think: "extreme" });
    expect(v.status).toBe(400);
    expect(v.json()).toEqual({ error: 'invalid think value: "extreme" (must be "high", "medium", "low", "max", true, or false)' });
  });

  it("a thinking model thinks by default; think:false renders qwen3's /no_think", async () => {
    const render = async (extra: object) =>
      ((await post("/api/chat", { model: "tiny-qwen3", messages: [{ role: "user", content: "hi" }], _debug_render_only: true, ...extra })).json()._debug_info as { rendered_template: string })
        .rendered_template;
    expect(await render({})).toBe("<|im_start|>user\nhi /think<|im_end|>\n<|im_start|>assistant\n");
    expect(await render({ think: false })).toBe("<|im_start|>user\nhi /no_think<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  });

  it("text inside the template's think tags comes back as thinking (chat and generate), content never null", async () => {
    const chat = await ollama.chat({ model: "tiny-thinker", messages: [{ role: "user", content: "Why?" }], think: true, options: { ...opts, num_predict: 8 }, stream: false });
    expect(chat.message.thinking?.length).toBeGreaterThan(0);
    expect(chat.message.content).toBe("");
    const gen = await ollama.generate({ model: "tiny-thinker", prompt: "Why?", options: { ...opts, num_predict: 8 }, stream: false });
    expect(gen.thinking?.length).toBeGreaterThan(0);
    const stream = await post("/api/chat", { model: "tiny-thinker", messages: [{ role: "user", content: "Why?" }], options: { ...opts, num_predict: 8 } });
    for (const ch of lines(stream.text)) {
      const m = ch.message as { content: unknown; thinking?: unknown };
      expect(typeof m.content).toBe("string");
      if ("thinking" in m) expect(m.thinking).not.toBe("");
    }
    const off = await ollama.chat({ model: "tiny-thinker", messages: [{ role: "user", content: "Why?" }], think: false, options: { ...opts, num_predict: 8 }, stream: false });
    expect("thinking" in off.message).toBe(false);
    expect(off.message.content.length).toBeGreaterThan(0);
  });
});

describe("options and the context", () => {
  const long = "hello ".repeat(400);
  it("shift:false or truncate:false with a prompt longer than num_ctx is Ollama's 400", async () => {
    const msg =
      "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length";
    const a = await post("/api/generate", { model: "tiny", prompt: long, shift: false, options: { num_ctx: 256 }, stream: false });
    expect(a.status).toBe(400);
    expect(a.json()).toEqual({ error: msg });
    const b = await post("/api/chat", { model: "tiny", messages: [{ role: "user", content: long }], truncate: false, options: { num_ctx: 256 } });
    expect(b.status).toBe(400);
    expect(b.json()).toEqual({ error: msg });
  });

  it("with truncation old messages are dropped (system and last kept) and the prompt fits", async () => {
    const messages = [
      { role: "system", content: "Be brief." },
      { role: "user", content: long },
      { role: "assistant", content: "ok" },
      { role: "user", content: "And now?" },
    ];
    const r = await ollama.chat({ model: "tiny", messages, options: { num_ctx: 256, num_predict: 4, seed: 1 }, stream: false });
    expect(r.prompt_eval_count).toBeLessThan(256);
    expect(r.prompt_eval_count).toBeGreaterThan(0);
  });

  it("a single message longer than num_ctx is cut by the context shift and still answered", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: long, options: { num_ctx: 256, num_predict: 3, seed: 1 }, stream: false });
    expect(r.prompt_eval_count).toBeLessThan(256);
    expect(r.eval_count).toBeGreaterThan(0);
  });

  it("unknown options are ignored and typical_p is accepted", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "hi", options: { typical_p: 0.5, bogus: true, num_predict: 2 } as never, stream: false });
    expect(r.done).toBe(true);
  });
});

describe("refused inputs", () => {
  it("top_logprobs out of range first, before the model is looked up (logprobs: logprobs.test.ts)", async () => {
    const a = await post("/api/chat", { model: "nope", messages: [], top_logprobs: 50 });
    expect(a.status).toBe(400);
    expect(a.json()).toEqual({ error: "top_logprobs must be between 0 and 20" });
    const c = await post("/api/generate", { model: "tiny", prompt: "x", logprobs: false, top_logprobs: 0, options: { num_predict: 1 }, stream: false });
    expect(c.status).toBe(200);
  });

  it("images are refused with the reason; /api/show never reports vision", async () => {
    const a = await post("/api/generate", { model: "tiny", prompt: "x", images: ["aGVsbG8="] });
    expect(a.status).toBe(400);
    expect(a.json().error).toMatch(/^images are not supported: .*no multimodal/);
    const b = await post("/api/chat", { model: "tiny", messages: [{ role: "user", content: "x", images: ["aGVsbG8="] }] });
    expect(b.status).toBe(400);
    expect((await ollama.show({ model: "tiny" })).capabilities).not.toContain("vision");
  });
});

describe("tokenize / detokenize", () => {
  it("round-trips text through the model's tokenizer", async () => {
    const t = await post("/api/tokenize", { model: "tiny", content: "hello world" });
    expect(t.status).toBe(200);
    const tokens = t.json().tokens as number[];
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens.every((x) => Number.isInteger(x))).toBe(true);
    const back = await post("/api/detokenize", { model: "tiny", tokens });
    expect(back.json()).toEqual({ content: "hello world" });
    expect((await post("/api/tokenize", { model: "tiny", content: "" })).json()).toEqual({ tokens: [] });
  });
  it("bad input: unknown model 404, out-of-vocabulary token 400", async () => {
    expect((await post("/api/tokenize", { model: "nope", content: "x" })).status).toBe(404);
    const r = await post("/api/detokenize", { model: "tiny", tokens: [999999] });
    expect(r.status).toBe(400);
    expect(r.json().error).toMatch(/^invalid token id 999999/);
  });
});

describe("streamed responses", () => {
  it("are chunked NDJSON (/api) and SSE (/v1), one line or event per chunk, as Ollama sends them", async () => {
    const g = await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "tiny", prompt: "hi", options: { seed: 2, num_predict: 5 } }) });
    expect(g.headers.get("transfer-encoding")).toBe("chunked");
    expect(g.headers.get("content-type")).toBe("application/x-ndjson");
    expect(g.headers.get("content-length")).toBeNull();
    const chunks = lines(await g.text());
    expect(chunks.at(-1)).toMatchObject({ done: true, eval_count: 5 });
    const v1 = await fetch(`${d.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "tiny", stream: true, max_tokens: 3, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(v1.headers.get("transfer-encoding")).toBe("chunked");
    expect(v1.headers.get("content-type")).toBe("text/event-stream");
    const events = (await v1.text()).split("\n\n").filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    expect(events.every((e) => e.startsWith("data: "))).toBe(true);
  });
});

describe("HTTP/1.0", () => {
  it("a streamed answer to an HTTP/1.0 client is plain NDJSON up to the close, without chunk framing", async () => {
    const net = await import("node:net");
    const { port } = new URL(d.url);
    const body = JSON.stringify({ model: "tiny", prompt: "hi", options: { seed: 2, num_predict: 3 } });
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(Number(port), "127.0.0.1", () => {
        sock.write(`POST /api/generate HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      });
      let text = "";
      sock.setEncoding("utf8");
      sock.on("data", (t: string) => (text += t));
      sock.on("end", () => resolve(text));
      sock.on("error", reject);
    });
    const [head, payload] = raw.split("\r\n\r\n") as [string, string];
    expect(head).toMatch(/^HTTP\/1\.[01] 200 OK/);
    expect(head.toLowerCase()).not.toContain("transfer-encoding");
    const chunks = lines(payload);
    expect(chunks.at(-1)).toMatchObject({ done: true, eval_count: 3 });
  });
});

describe("CORS", () => {
  it("a local browser origin gets its CORS headers on streamed and plain answers; others get an empty 403", async () => {
    const origin = "http://localhost:3000";
    const g = await fetch(`${d.url}/api/generate`, { method: "POST", headers: { Origin: origin }, body: JSON.stringify({ model: "tiny", prompt: "hi", options: { num_predict: 2 } }) });
    expect(g.headers.get("access-control-allow-origin")).toBe(origin);
    expect(g.headers.get("vary")).toBe("Origin");
    expect(lines(await g.text()).at(-1)?.done).toBe(true);
    const v1 = await fetch(`${d.url}/v1/chat/completions`, {
      method: "POST",
      headers: { Origin: origin },
      body: JSON.stringify({ model: "tiny", stream: true, max_tokens: 2, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(v1.headers.get("access-control-allow-origin")).toBe(origin);
    expect(await v1.text()).toMatch(/data: \[DONE\]\n\n$/);
    const tags = await fetch(`${d.url}/api/tags`, { headers: { Origin: origin } });
    expect(tags.headers.get("access-control-allow-origin")).toBe(origin);
    const pre = await fetch(`${d.url}/api/chat`, { method: "OPTIONS", headers: { Origin: origin, "Access-Control-Request-Method": "POST" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    const evil = await fetch(`${d.url}/api/generate`, { method: "POST", headers: { Origin: "https://evil.example" }, body: JSON.stringify({ model: "tiny", prompt: "hi" }) });
    expect(evil.status).toBe(403);
    expect(await evil.text()).toBe("");
  });
});

describe("heartbeat during a slow start", () => {
  let hb: TestDaemon;
  beforeAll(async () => {
    // Threshold 0: every streamed response starts with a heartbeat (the internal default is 30 s).
    hb = await startDaemon({ OLLAMATS_HEARTBEAT_MS: "0" });
    expect((await createModelFromFile(hb.url, "tiny", modelFile)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await hb?.stop();
  });

  it("streams start with empty-content chunks every client accepts; the answer is unchanged", async () => {
    const body = { model: "tiny", messages: [{ role: "user", content: "hi" }], options: { seed: 3, num_predict: 6 } };
    await new Ollama({ host: hb.url }).chat({ ...body, stream: false }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const r = await fetch(`${hb.url}/api/chat`, { method: "POST", body: JSON.stringify(body) });
    const chunks = lines(await r.text());
    expect(chunks[0]).toEqual({ model: "tiny", created_at: expect.any(String), message: { role: "assistant", content: "" }, done: false });
    expect(chunks.at(-1)?.done).toBe(true);
    const streamed = chunks.map((c) => (c.message as { content: string }).content).join("");
    const whole = await new Ollama({ host: hb.url }).chat({ ...body, stream: false });
    expect(streamed).toBe(whole.message.content);
    const g = await fetch(`${hb.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "tiny", prompt: "hi", options: { num_predict: 2 } }) });
    expect(lines(await g.text())[0]).toEqual({ model: "tiny", created_at: expect.any(String), response: "", done: false });
  });
});
