// Reading a streamed upstream answer (backends/remote/event-stream.ts with the dialects' readers):
// every event of one upstream read comes out as one batch, in order, the stats on the final
// event; lines cut across reads are joined; a cut-short answer is an error; and after the final
// event the connection goes back to the pool, while an early close cancels the upstream.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { Agent, request, type Dispatcher } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunnerEvent } from "../../src/backends/backend.js";
import { UpstreamEvents } from "../../src/backends/remote/event-stream.js";
import { OllamaDialect } from "../../src/backends/remote/ollama-dialect.js";
import { OpenAIDialect } from "../../src/backends/remote/openai-dialect.js";

const openai = new OpenAIDialect("http://u/v1");
const ollama = new OllamaDialect("http://u");

const sse = (j: object) => `data: ${JSON.stringify(j)}\n\n`;
const delta = (content: string) => sse({ choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const ANSWER = [delta("a"), delta("b"), delta("c"), sse({ choices: [{ index: 0, delta: {}, finish_reason: "length" }] }), sse({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } }), "data: [DONE]\n\n"];

function body(chunks: string[]): Dispatcher.ResponseData["body"] {
  return Readable.from(chunks.map((c) => Buffer.from(c))) as unknown as Dispatcher.ResponseData["body"];
}

async function batches(events: UpstreamEvents): Promise<RunnerEvent[][]> {
  const out: RunnerEvent[][] = [];
  for (let b = await events.next(); b; b = await events.next()) out.push(b);
  return out;
}

describe("one upstream answer as batches", () => {
  it("OpenAI SSE: the events of one read are one batch, in order, the usage on the final event", async () => {
    const got = await batches(new UpstreamEvents(body([ANSWER.join("")]), openai.reader(process.hrtime.bigint())));
    expect(got).toHaveLength(1);
    const [batch] = got as [RunnerEvent[]];
    expect(batch.slice(0, 3)).toEqual([
      { type: "content", text: "a" },
      { type: "content", text: "b" },
      { type: "content", text: "c" },
    ]);
    expect(batch).toHaveLength(4);
    expect(batch[3]).toMatchObject({ type: "done", doneReason: "length", promptEvalCount: 5, evalCount: 3 });
  });

  it("lines cut across reads (and CRLF) are joined; each read's events are a batch of their own", async () => {
    const text = ANSWER.join("").replace(/\n/g, "\r\n");
    const cut = text.indexOf('"b"') + 1; // inside the second event
    const got = await batches(new UpstreamEvents(body([text.slice(0, cut), text.slice(cut)]), openai.reader(process.hrtime.bigint())));
    expect(got.map((b) => b.map((e) => (e.type === "content" ? e.text : e.type)))).toEqual([["a"], ["b", "c", "done"]]);
  });

  it("Ollama NDJSON: one read's lines are one batch, stats from the done line; nothing after it is read", async () => {
    const lines = [
      { message: { role: "assistant", content: "", thinking: "hm" }, done: false },
      { message: { role: "assistant", content: "x" }, done: false },
      { message: { role: "assistant", content: "" }, done: true, done_reason: "stop", prompt_eval_count: 4, eval_count: 2, eval_duration: 9 },
      { message: { role: "assistant", content: "after the end" }, done: false },
    ];
    const got = await batches(new UpstreamEvents(body([lines.map((l) => JSON.stringify(l) + "\n").join("")]), ollama.reader()));
    expect(got).toEqual([
      [
        { type: "thinking", text: "hm" },
        { type: "content", text: "x" },
        { type: "done", doneReason: "stop", promptEvalCount: 4, promptEvalDurationNs: 0, evalCount: 2, evalDurationNs: 9 },
      ],
    ]);
  });

  it("an answer cut short (no finish, no usage, no done) is an error, after the events that came", async () => {
    const events = new UpstreamEvents(body([delta("a")]), openai.reader(process.hrtime.bigint()));
    expect(await events.next()).toEqual([{ type: "content", text: "a" }]);
    await expect(events.next()).rejects.toMatchObject({ code: "upstream_down" });
    const nd = new UpstreamEvents(body(['{"response":"a","done":false}\n']), ollama.reader());
    expect(await nd.next()).toEqual([{ type: "content", text: "a" }]);
    await expect(nd.next()).rejects.toThrow(/without a final response/);
  });
});

describe("SSE events", () => {
  it("data lines that never meet the blank line ending their event are cut off with an error, not gathered", async () => {
    async function* endless() {
      yield Buffer.from("data: {\n");
      for (let i = 0; i < 64; i++) yield Buffer.from(`data: ${"x".repeat(1 << 20)}\n`);
    }
    const events = new UpstreamEvents(Readable.from(endless()) as unknown as Dispatcher.ResponseData["body"], openai.reader(process.hrtime.bigint()));
    await expect(batches(events)).rejects.toMatchObject({ code: "upstream_down", message: expect.stringContaining("an event of more than") });
  });

  it("an error after text in the same read: the text first, then the error", async () => {
    const events = new UpstreamEvents(body([delta("a") + delta("b") + sse({ error: { message: "boom", code: 500 } })]), openai.reader(process.hrtime.bigint()));
    expect(await events.next()).toEqual([
      { type: "content", text: "a" },
      { type: "content", text: "b" },
    ]);
    await expect(events.next()).rejects.toMatchObject({ code: "upstream_down", message: "the upstream failed: boom" });
  });
});

describe("an upstream's tool calls", () => {
  const toolDelta = (args: string, index = 0) => sse({ choices: [{ index: 0, delta: { tool_calls: [{ index, ...(args === "" ? { id: `c${index}`, function: { name: "f", arguments: "" } } : { function: { arguments: args } }) }] }, finish_reason: null }] });
  const finish = sse({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] });

  it("arguments in pieces come out as one call at the end", async () => {
    const got = (await batches(new UpstreamEvents(body([toolDelta(""), toolDelta('{"a":'), toolDelta('"x}"}'), finish, "data: [DONE]\n\n"]), openai.reader(process.hrtime.bigint())))).flat();
    expect(got.find((e) => e.type === "tool_calls")).toEqual({ type: "tool_calls", calls: [{ id: "c0", function: { index: 0, name: "f", arguments: { a: "x}" } } }] });
  });

  it("arguments streamed without end are cut off with an error, not gathered until memory ends", async () => {
    const piece = toolDelta("x".repeat(1 << 20));
    async function* endless() {
      yield Buffer.from(toolDelta(""));
      for (let i = 0; i < 64; i++) yield Buffer.from(piece);
    }
    const events = new UpstreamEvents(Readable.from(endless()) as unknown as Dispatcher.ResponseData["body"], openai.reader(process.hrtime.bigint()));
    await expect(batches(events)).rejects.toMatchObject({ code: "upstream_down", message: expect.stringContaining("tool calls of more than") });
  });
});

describe("the upstream connection", () => {
  let server: http.Server;
  let url: string;
  let connections = 0;
  let closedEarly = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "text/event-stream" });
      let ended = false;
      res.on("close", () => void (ended || closedEarly++));
      // The first events now; the rest only when asked for more (?slow), to cancel in between;
      // the body's end a moment after [DONE], as a server that flushes each event sends it.
      res.write(ANSWER.slice(0, 3).join(""));
      const rest = () => {
        res.write(ANSWER.slice(3).join(""));
        setTimeout(() => {
          ended = true;
          res.end();
        }, 20);
      };
      if (req.url?.includes("slow")) setTimeout(rest, 2000).unref();
      else rest();
    });
    server.on("connection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("is reused after a finished answer, and closed (the upstream's cancel) when the reader stops early", async () => {
    const agent = new Agent({ keepAliveTimeout: 10_000 });
    const open = async (path: string) => {
      const res = await request(`${url}${path}`, { method: "POST", body: "{}", dispatcher: agent });
      return new UpstreamEvents(res.body, openai.reader(process.hrtime.bigint()));
    };
    for (let i = 0; i < 3; i++) {
      const events = await open("/v1/chat/completions");
      const got = (await batches(events)).flat();
      expect(got.at(-1)).toMatchObject({ type: "done", evalCount: 3 });
      events.close();
      await new Promise((r) => setTimeout(r, 60)); // the tail is read in the background
    }
    expect(connections).toBe(1);

    const early = await open("/v1/chat/completions?slow");
    expect(await early.next()).toHaveLength(3);
    early.close();
    const deadline = Date.now() + 5000;
    while (closedEarly === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(closedEarly).toBe(1);
    await agent.close();
  });
});
