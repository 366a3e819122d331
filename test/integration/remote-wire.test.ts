// What real upstream engines put on the wire, in all its variety, and what hostile ones do
// (test/helpers/wire-fake.ts scripts each answer byte for byte): SSE framing (CR line ends,
// comments, multi-line data, a BOM, no [DONE]), OpenAI chunk shapes (vLLM, SGLang,
// llama-server), errors in the stream, content encodings, and Ollama's NDJSON. The answer must
// come out exactly, or as a clear 502 naming the upstream's fault.
import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { startWireFake, writeApart, type WireFake } from "../helpers/wire-fake.js";

const MODEL = "org/model-7b";
let fake: WireFake;
let d: TestDaemon;

const post = (path: string, body: unknown) => fetch(`${d.url}${path}`, { method: "POST", body: JSON.stringify(body) });
const sse = (j: unknown) => `data: ${JSON.stringify(j)}\n\n`;
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
const usage = (p: number, c: number) => ({ id: "c", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } });
const sseHead = (res: http.ServerResponse, extra: Record<string, string> = {}) => res.writeHead(200, { "content-type": "text/event-stream", ...extra });

interface Answer {
  status: number;
  content: string;
  thinking: string;
  toolCalls: unknown[];
  last: Record<string, unknown>;
  error?: string;
}

/** /api/chat streamed, its lines folded into one answer (an error line or status kept). */
async function chat(model = "oa", extra: Record<string, unknown> = {}): Promise<Answer> {
  const r = await post("/api/chat", { model, messages: [{ role: "user", content: "hi" }], ...extra });
  const text = await r.text();
  const a: Answer = { status: r.status, content: "", thinking: "", toolCalls: [], last: {} };
  if (r.status !== 200) return { ...a, error: (JSON.parse(text) as { error: string }).error };
  for (const line of text.trim().split("\n")) {
    const j = JSON.parse(line) as { message?: { content?: string; thinking?: string; tool_calls?: unknown[] }; error?: string };
    a.content += j.message?.content ?? "";
    a.thinking += j.message?.thinking ?? "";
    a.toolCalls.push(...(j.message?.tool_calls ?? []));
    if (j.error) a.error = j.error;
    a.last = j as Record<string, unknown>;
  }
  return a;
}

/** After failures that open the replica's circuit: a passing health check closes it again. */
async function recovered(): Promise<void> {
  const ps = () => fetch(`${d.url}/api/ps`).then((r) => r.json() as Promise<{ models: Array<{ name: string; upstreams?: Array<{ state: string }> }> }>);
  const states = await eventually(ps, (p) => p.models.every((m) => m.upstreams?.every((u) => u.state === "healthy") ?? true));
  expect(JSON.stringify(states)).not.toMatch(/"state":"(open|unhealthy)"/);
}

/** The answer the framing cases all carry: thinking, multi-byte content, usage. */
const EVENTS = [chunk({ role: "assistant", content: null }), chunk({ reasoning_content: "hm " }), chunk({ content: "héllo wörld " }), chunk({ content: "😀—ok" }), chunk({}, "stop"), usage(7, 4)];
const expectStandard = (a: Answer) => {
  expect(a.error).toBeUndefined();
  expect(a).toMatchObject({ status: 200, content: "héllo wörld 😀—ok", thinking: "hm " });
  expect(a.last).toMatchObject({ done: true, done_reason: "stop", prompt_eval_count: 7, eval_count: 4 });
};

beforeAll(async () => {
  fake = await startWireFake(MODEL);
  d = await startDaemon({ OLLAMA_REMOTES: "127.0.0.1", OLLAMATS_REMOTE_TIMEOUT: "3s", OLLAMATS_REMOTE_HEALTH_INTERVAL: "200ms" });
  for (const [name, host] of [
    ["oa", `${fake.url}/v1`],
    ["ol", fake.url],
  ]) {
    const r = await post("/api/create", { model: name, from: MODEL, remote_host: host, stream: false });
    expect(r.status, await r.clone().text()).toBe(200);
  }
});

afterAll(async () => {
  await d?.stop();
  await fake?.stop();
});

describe("SSE framing", () => {
  const variants: Array<[string, (events: string[]) => string]> = [
    ["CRLF line ends", (e) => e.join("").replace(/\n/g, "\r\n")],
    ["lone CR line ends", (e) => e.join("").replace(/\n/g, "\r")],
    ["data: without a space, comments, event/id/retry fields", (e) => ": ping\n\nretry: 3000\n\n" + e.map((x, i) => `event: message\nid: ${i}\n${x.replace("data: ", "data:")}: keep-alive\n\n`).join("")],
    ["a BOM first, no [DONE]", (e) => "\uFEFF" + e.join("")],
    ["[DONE] then more bytes", (e) => e.join("") + "data: [DONE]\n\n" + sse(chunk({ content: "AFTER" })) + "garbage\n"],
    ["multi-line data fields", (e) => e.map((x) => x.replace(/,"/g, ',\ndata: "')).join("") + "data: [DONE]\n\n"],
  ];
  for (const [name, frame] of variants) {
    it(name, async () => {
      const text = frame(EVENTS.map(sse));
      fake.answer = (_q, res) => {
        sseHead(res);
        res.end(text);
      };
      expectStandard(await chat());
    });
  }

  it("events cut at every byte, inside multi-byte characters too", async () => {
    const bytes = Buffer.from(EVENTS.map(sse).join("") + "data: [DONE]\n\n");
    fake.answer = (_q, res) => {
      res.socket?.setNoDelay(true);
      sseHead(res);
      return writeApart(res, [...bytes].map((b) => Buffer.from([b])), 1);
    };
    expectStandard(await chat());
  });
});

describe("OpenAI chunks", () => {
  const stream = (events: unknown[], done = true) => (_q: http.IncomingMessage, res: http.ServerResponse) => {
    sseHead(res);
    res.end(events.map(sse).join("") + (done ? "data: [DONE]\n\n" : ""));
  };

  it("reasoning (SGLang, newer vLLM) is thinking; both fields with the same text count once", async () => {
    fake.answer = stream([chunk({ role: "assistant" }), chunk({ reasoning: "a" }), chunk({ reasoning: "b", reasoning_content: "b" }), chunk({ content: "c" }), chunk({ content: null }, "stop"), usage(1, 3)]);
    const a = await chat();
    expect(a).toMatchObject({ thinking: "ab", content: "c" });
  });

  it("tool calls interleaved by index, the name in one delta, arguments in many; finish tool_calls", async () => {
    const tc = (index: number, f: Record<string, unknown>, id?: string) => chunk({ tool_calls: [{ index, ...(id ? { id, type: "function" } : {}), function: f }] });
    fake.answer = stream([
      chunk({ role: "assistant", content: "" }),
      tc(0, { name: "get_weather", arguments: "" }, "call_a"),
      tc(1, { name: "get_time" }, "call_b"),
      tc(0, { arguments: '{"ci' }),
      tc(1, { arguments: '{"tz":' }),
      tc(0, { arguments: 'ty":"Paris"}' }),
      tc(1, { arguments: '"UTC"}' }),
      chunk({}, "tool_calls"),
      usage(10, 12),
    ]);
    const a = await chat();
    expect(a.error).toBeUndefined();
    expect(a.toolCalls).toEqual([
      { id: "call_a", function: { index: 0, name: "get_weather", arguments: { city: "Paris" } } },
      { id: "call_b", function: { index: 1, name: "get_time", arguments: { tz: "UTC" } } },
    ]);
    expect(a.last).toMatchObject({ done: true, done_reason: "stop", eval_count: 12 });
  });

  it("tool-call deltas without an index (a call starts with its id and name, arguments follow it)", async () => {
    const tc = (f: Record<string, unknown>, id?: string) => chunk({ tool_calls: [{ ...(id ? { id, type: "function" } : {}), function: f }] });
    fake.answer = stream([tc({ name: "a", arguments: "" }, "c1"), tc({ arguments: '{"x":' }), tc({ arguments: "1}" }), tc({ name: "b", arguments: '{"y":2}' }, "c2"), chunk({}, "tool_calls"), usage(1, 2)]);
    const a = await chat();
    expect(a.error).toBeUndefined();
    expect(a.toolCalls).toEqual([
      { id: "c1", function: { index: 0, name: "a", arguments: { x: 1 } } },
      { id: "c2", function: { index: 1, name: "b", arguments: { y: 2 } } },
    ]);
  });

  it("finish_reason length; logprobs ignored; no usage chunk: counted here", async () => {
    fake.answer = stream([{ choices: [{ index: 0, delta: { content: "x" }, logprobs: { content: [{ token: "x", logprob: -0.1, top_logprobs: [] }] }, finish_reason: null }] }, chunk({ content: "y" }, "length")]);
    const a = await chat();
    expect(a).toMatchObject({ content: "xy", last: { done_reason: "length", eval_count: 2 } });
  });

  const errors: Array<[string, unknown]> = [
    ["OpenAI's error object", { error: { message: "CUDA out of memory", type: "InternalServerError", code: 500 } }],
    ["vLLM's object: error", { object: "error", message: "CUDA out of memory", type: "InternalServerError", param: null, code: 500 }],
  ];
  for (const [name, err] of errors) {
    it(`${name} as the first event: a 502 with the upstream's message`, async () => {
      fake.answer = stream([err], false);
      const a = await chat();
      expect(a.status).toBe(502);
      expect(a.error).toContain("CUDA out of memory");
    });
    it(`${name} after some text: an error line with the upstream's message`, async () => {
      fake.answer = stream([chunk({ content: "par" }), err], false);
      const a = await chat();
      expect(a.content).toBe("par");
      expect(a.error).toContain("CUDA out of memory");
    });
  }

  it("an error the upstream blames on the request is a 400", async () => {
    fake.answer = stream([{ error: { message: "This model's maximum context length is 4096 tokens", type: "BadRequestError", code: 400 } }], false);
    const a = await chat();
    expect(a.status).toBe(400);
    expect(a.error).toContain("maximum context length");
  });

  it("llama-server's older `error:` field", async () => {
    fake.answer = (_q, res) => {
      sseHead(res);
      res.end(`error: ${JSON.stringify({ code: 500, message: "slot unavailable", type: "server_error" })}\n\n`);
    };
    const a = await chat();
    expect(a.status).toBe(502);
    expect(a.error).toContain("slot unavailable");
  });

  it("finish_reason abort or error is not a clean stop", async () => {
    for (const reason of ["abort", "error"]) {
      fake.answer = stream([chunk({ content: "cut" }), chunk({}, reason), usage(1, 1)]);
      const a = await chat();
      expect(a.error, reason).toMatch(new RegExp(reason));
      expect(a.last.done).toBeUndefined();
    }
  });
});

describe("HTTP variety", () => {
  const standard = () => EVENTS.map(sse).join("") + "data: [DONE]\n\n";

  it("a 200 whose body is a JSON error: a 502 with its message", async () => {
    fake.answer = (_q, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "model is overloaded, retry later", code: 503 } }));
    };
    const a = await chat();
    expect(a.status).toBe(502);
    expect(a.error).toContain("model is overloaded");
  });

  it("a 5xx or 4xx with an HTML body: the status and the page's text, not its markup", async () => {
    for (const status of [502, 413]) {
      fake.answer = (_q, res) => {
        res.writeHead(status, { "content-type": "text/html" });
        res.end(`<html>\r\n<head><title>${status} Bad Gateway</title></head>\r\n<body>\r\n<center><h1>${status} Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n`);
      };
      const a = await chat();
      expect(a.status).toBe(status >= 500 ? 502 : 400);
      expect(a.error).toContain(`${status} Bad Gateway`);
      expect(a.error).not.toContain("<");
    }
  });

  for (const enc of ["gzip", "br", "deflate"] as const) {
    it(`a ${enc} answer (a proxy that compresses)`, async () => {
      const zlib = await import("node:zlib");
      const pack = { gzip: zlib.gzipSync, br: zlib.brotliCompressSync, deflate: zlib.deflateSync }[enc];
      fake.answer = (q, res) => {
        if (q.url?.endsWith("/embeddings")) {
          res.writeHead(200, { "content-type": "application/json", "content-encoding": enc });
          return void res.end(pack(JSON.stringify({ object: "list", data: [{ index: 0, embedding: [0, 2] }], usage: { prompt_tokens: 2 } })));
        }
        sseHead(res, { "content-encoding": enc });
        res.end(pack(standard()));
      };
      expectStandard(await chat());
      const e = await post("/api/embed", { model: "oa", input: "x" });
      expect(e.status, await e.clone().text()).toBe(200);
      expect(((await e.json()) as { embeddings: number[][] }).embeddings).toEqual([[0, 1]]);
    });
  }

  it("103 Early Hints before the answer", async () => {
    fake.answer = (_q, res) => {
      res.writeEarlyHints({ link: "</style.css>; rel=preload; as=style" });
      sseHead(res);
      res.end(standard());
    };
    expectStandard(await chat());
  });

  it("an unasked 100 Continue (undici cannot read past it): a 502 that says so, the request not sent twice", async () => {
    fake.answer = (_q, res) => {
      res.writeContinue();
      sseHead(res);
      res.end(standard());
    };
    const before = fake.requests.length;
    const a = await chat();
    expect(a.status).toBe(502);
    expect(a.error).toMatch(/answered with HTTP this server cannot read \(bad response\)/);
    expect(fake.requests.length).toBe(before + 1);
    await recovered();
  });

  it("a body that is not in the encoding it names, or in one nobody can read: a 502 naming it", async () => {
    for (const [enc, error] of [
      ["gzip", /not in the Content-Encoding it names \(Z_DATA_ERROR\)/],
      ["zstd, br, gzip", /Content-Encoding 'zstd, br, gzip', which this server cannot read/],
    ] as const) {
      fake.answer = (_q, res) => {
        sseHead(res, { "content-encoding": enc });
        res.end(standard());
      };
      const a = await chat();
      expect(a.status, enc).toBe(502);
      expect(a.error).toMatch(error);
    }
    await recovered();
  });

  it("an upstream that closes each kept-alive connection right after its answer: every next request succeeds", async () => {
    fake.answer = (q, res) => {
      sseHead(res);
      res.end(standard(), () => setTimeout(() => q.socket.destroy(), Math.random() * 5));
    };
    for (let i = 0; i < 12; i++) {
      expectStandard(await chat());
      if (i % 3 === 0) await new Promise((r) => setTimeout(r, 5));
    }
  });

  it("a streamed request answered with one JSON completion (stream ignored)", async () => {
    fake.answer = (_q, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          {
            id: "x",
            object: "chat.completion",
            choices: [{ index: 0, message: { role: "assistant", content: "héllo wörld 😀—ok", reasoning_content: "hm ", tool_calls: [] }, finish_reason: "stop" }],
            usage: { prompt_tokens: 7, completion_tokens: 4, total_tokens: 11 },
          },
          null,
          2,
        ),
      );
    };
    expectStandard(await chat());
  });

  it("an embedding request answered with an event stream: a 502 that says so", async () => {
    fake.answer = (_q, res) => {
      sseHead(res);
      res.end(standard());
    };
    const e = await post("/api/embed", { model: "oa", input: "x" });
    expect(e.status).toBe(502);
    expect(((await e.json()) as { error: string }).error).toMatch(/invalid JSON|not JSON/);
  });

  it("embeddings: a 200 with an error body passes the upstream's message on; vectors that are not numbers are a 502", async () => {
    const answers: Array<[string, unknown, number, RegExp]> = [
      ["oa", { error: { message: "input is too long for this model", code: 400 } }, 400, /input is too long/],
      ["oa", { object: "error", message: "engine is dead", type: "InternalServerError", code: 500 }, 502, /engine is dead/],
      ["oa", { object: "list", data: [{ index: 0, embedding: "AAAAAAAA" }] }, 502, /cannot read/],
      ["oa", { object: "list", data: [{ index: 0, embedding: [1, "x"] }] }, 502, /cannot read/],
      ["ol", { error: "model runner has unexpectedly stopped" }, 502, /unexpectedly stopped/],
      ["ol", { embeddings: [null] }, 502, /cannot read/],
    ];
    for (const [model, answer, status, error] of answers) {
      fake.answer = (_q, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(answer));
      };
      const r = await post("/api/embed", { model, input: "x" });
      const text = await r.text();
      expect(r.status, text).toBe(status);
      expect(text).toMatch(error);
    }
  });

  it("a model list without data, with ids holding slashes, or with odd entries", async () => {
    const lists = [{ object: "list" }, { data: [null, 3, { id: "other/x" }, { id: MODEL }] }, [{ id: MODEL }]];
    for (const models of lists) {
      fake.models = models;
      const r = await post("/api/create", { model: "oa2", from: MODEL, remote_host: `${fake.url}/v1`, stream: false });
      expect(r.status, `${JSON.stringify(models)}: ${await r.clone().text()}`).toBe(200);
    }
    fake.models = { data: [null, { id: "other/x" }] };
    const r = await post("/api/create", { model: "oa3", from: MODEL, remote_host: `${fake.url}/v1`, stream: false });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toContain("it serves: other/x");
    fake.models = { object: "list", data: [{ id: MODEL }] };
  });
});

describe("Ollama upstream NDJSON", () => {
  const lines = [
    { message: { role: "assistant", content: "", thinking: "hm " }, done: false },
    { message: { role: "assistant", content: "héllo wörld " }, done: false },
    { message: { role: "assistant", content: "😀—ok" }, done: false },
    { message: { role: "assistant", content: "" }, done: true, done_reason: "stop", prompt_eval_count: 7, eval_count: 4 },
  ].map((l) => JSON.stringify(l));

  it("lines split mid-line (mid-character too) and CRLF", async () => {
    const bytes = Buffer.from(lines.join("\r\n") + "\r\n");
    fake.answer = (q, res) => {
      q.socket.setNoDelay(true);
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      const cuts = [5, 40, 41, 42, 80, 81, 120, 160, 200].filter((c) => c < bytes.length);
      return writeApart(res, cuts.map((c, i) => bytes.subarray(cuts[i - 1] ?? 0, c)).concat(bytes.subarray(cuts.at(-1))));
    };
    expectStandard(await chat("ol"));
  });

  it("an error line mid-stream, and as the first line", async () => {
    fake.answer = (_q, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.end(`${lines[1]}\n{"error":"model runner has unexpectedly stopped"}\n`);
    };
    const mid = await chat("ol");
    expect(mid.content).toBe("héllo wörld ");
    expect(mid.error).toContain("unexpectedly stopped");
    fake.answer = (_q, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.end(`{"error":"model runner has unexpectedly stopped"}\n`);
    };
    const first = await chat("ol");
    expect(first.status).toBe(502);
    expect(first.error).toContain("unexpectedly stopped");
  });
});

describe("every route", () => {
  it("reads the same odd framing (lone CR, multi-line data) for /api/generate, /v1/chat/completions and /v1/completions, streamed or not", async () => {
    fake.answer = (q, res) => {
      const completions = q.url === "/v1/completions";
      const events = completions ? [{ choices: [{ index: 0, text: "héllo wörld ", finish_reason: null }] }, { choices: [{ index: 0, text: "😀—ok", finish_reason: "stop" }] }, usage(7, 4)] : EVENTS;
      sseHead(res);
      res.end(events.map((e) => sse(e).replace(/,"/g, ',\ndata: "').replace(/\n/g, "\r")).join(""));
    };
    const gen = (await (await post("/api/generate", { model: "oa", prompt: "hi", stream: false })).json()) as Record<string, unknown>;
    expect(gen).toMatchObject({ response: "héllo wörld 😀—ok", thinking: "hm ", done_reason: "stop", prompt_eval_count: 7, eval_count: 4 });
    const raw = (await (await post("/api/generate", { model: "oa", prompt: "hi", raw: true, stream: false })).json()) as Record<string, unknown>;
    expect(raw).toMatchObject({ response: "héllo wörld 😀—ok", eval_count: 4 });
    const v1 = (await (await post("/v1/chat/completions", { model: "oa", messages: [{ role: "user", content: "hi" }] })).json()) as { choices: Array<{ message: Record<string, unknown>; finish_reason: string }>; usage: unknown };
    expect(v1.choices[0]).toMatchObject({ message: { content: "héllo wörld 😀—ok", reasoning: "hm " }, finish_reason: "stop" });
    expect(v1.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 4 });
    const streamed = await (await post("/v1/chat/completions", { model: "oa", messages: [{ role: "user", content: "hi" }], stream: true })).text();
    const chunks = streamed.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string } }> });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("héllo wörld 😀—ok");
    const comp = (await (await post("/v1/completions", { model: "oa", prompt: "hi" })).json()) as { choices: Array<{ text: string }> };
    expect(comp.choices[0]?.text).toBe("héllo wörld 😀—ok");
  });

  it("an upstream's error as its first event is a 502 in OpenAI's shape on /v1", async () => {
    fake.answer = (_q, res) => {
      sseHead(res);
      res.end(sse({ error: { message: "CUDA out of memory", type: "InternalServerError", code: 500 } }));
    };
    const r = await post("/v1/chat/completions", { model: "oa", messages: [{ role: "user", content: "hi" }], stream: true });
    expect(r.status).toBe(502);
    expect(((await r.json()) as { error: { message: string } }).error.message).toContain("CUDA out of memory");
  });
});
