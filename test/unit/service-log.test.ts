// The daemon's log: slog-style lines, OLLAMA_DEBUG levels, and the one line per request written
// by the request-log middleware (at the end of a stream, with the model and token counts).
import { Hono, type Context } from "hono";
import { flatten, type Batches } from "../../src/backends/batches.js";
import { describe, expect, it } from "vitest";
import { createLogger, formatDurationMs, formatValue, levelFor, type LogFormat } from "../../src/daemon/log.js";
import { logCounts, requestLog } from "../../src/daemon/middleware/request-log.js";
import { detached, requestLogFields } from "../../src/daemon/request-context.js";
import { ndjsonResponse } from "../../src/daemon/stream.js";

function capture(debug = 0) {
  const lines: string[] = [];
  return { log: createLogger(debug, (l) => void lines.push(l)), lines };
}

describe("logger", () => {
  it("writes slog text lines, quoting only what needs it", () => {
    const { log, lines } = capture();
    log.info("Listening on 127.0.0.1:11434", { models: "/var/lib/ollamats/.ollama/models", n: 3, empty: "", skipped: undefined });
    expect(lines[0]).toMatch(/^time=\d{4}-\d\d-\d\dT\S+Z level=INFO msg="Listening on 127.0.0.1:11434" models=\/var\/lib\/ollamats\/.ollama\/models n=3 empty=""\n$/);
    expect(formatValue('say "hi"')).toBe('"say \\"hi\\""');
    expect(formatValue("a=b")).toBe('"a=b"');
    expect(formatValue("line\nbreak")).toBe('"line\\nbreak"');
    expect(formatValue(new Error("boom now"))).toBe('"boom now"');
  });

  it("follows OLLAMA_DEBUG: 0 info, 1 debug, 2 trace", () => {
    expect([levelFor(0), levelFor(1), levelFor(2)]).toEqual([0, -4, -8]);
    for (const [debug, expected] of [
      [0, ["INFO", "WARN", "ERROR"]],
      [1, ["DEBUG", "INFO", "WARN", "ERROR"]],
      [2, ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]],
    ] as const) {
      const { log, lines } = capture(debug);
      log.trace("t");
      log.debug("d");
      log.info("i");
      log.warn("w");
      log.error("e");
      expect(lines.map((l) => /level=(\w+)/.exec(l)?.[1])).toEqual(expected);
    }
  });

  it("prints durations as Go does, to the microsecond", () => {
    expect(formatDurationMs(0.0004)).toBe("0µs");
    expect(formatDurationMs(0.512)).toBe("512µs");
    expect(formatDurationMs(12.5)).toBe("12.5ms");
    expect(formatDurationMs(1234.5678)).toBe("1.234568s");
    expect(formatDurationMs(2000)).toBe("2s");
    expect(formatDurationMs(123_500)).toBe("2m3.5s");
    expect(formatDurationMs(3_723_000)).toBe("1h2m3s");
  });
});

interface Chunk {
  model: string;
  response: string;
  done: boolean;
  prompt_eval_count?: number;
  eval_count?: number;
}

/** The words, then the final chunk, each a batch of its own; with `c`, the counts noted as a route does. */
async function* answer(words: string[], c?: Context): Batches<Chunk> {
  for (const w of words) yield [{ model: "m", response: w, done: false }];
  const last: Chunk = { model: "m", response: "", done: true, prompt_eval_count: 7, eval_count: words.length };
  yield [c ? logCounts(c, last) : last];
}

function app(debug = 0) {
  const { log, lines } = capture(debug);
  const a = new Hono();
  a.use("*", requestLog(log));
  a.get("/api/tags", (c) => c.json({ models: [] }));
  a.post("/api/generate", async (c) => {
    const body = (await c.req.json()) as { model: string; prompt: string; stream?: boolean };
    c.set("logModel", `${body.model}:latest`);
    const gen = answer(body.prompt.split(" "), c);
    if (body.stream === false) {
      let text = "";
      for await (const ch of flatten(gen)) text += ch.response;
      return c.json({ response: text });
    }
    return ndjsonResponse(c, gen, () => {});
  });
  a.post("/api/fail", () => {
    throw new Error("nope");
  });
  a.onError((err, c) => c.json({ error: err.message }, 500));
  return { app: a, lines };
}

const field = (line: string | undefined, key: string) => new RegExp(` ${key}=("(?:[^"\\\\]|\\\\.)*"|\\S+)`).exec(line ?? "")?.[1];

describe("request log", () => {
  it("writes one line for a plain request", async () => {
    const { app: a, lines } = app();
    const res = await a.request("/api/tags");
    expect(res.status).toBe(200);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/level=INFO msg=request method=GET path=\/api\/tags status=200 duration=\d+(\.\d+)?(µs|ms) request_id=[0-9a-f-]{36}\n$/);
  });

  it("writes the line when a stream ends, with model and token counts", async () => {
    const { app: a, lines } = app();
    const res = await a.request("/api/generate", { method: "POST", body: JSON.stringify({ model: "m", prompt: "secret words here" }) });
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(lines).toHaveLength(0); // not yet: the answer has not been read
    const text = await res.text();
    expect(text.trim().split("\n")).toHaveLength(4);
    expect(lines).toHaveLength(1);
    const line = lines[0];
    expect(field(line, "method")).toBe("POST");
    expect(field(line, "path")).toBe("/api/generate");
    expect(field(line, "status")).toBe("200");
    expect(field(line, "model")).toBe("m:latest");
    expect(field(line, "prompt_tokens")).toBe("7");
    expect(field(line, "eval_tokens")).toBe("3");
    expect(line).not.toContain("secret");
  });

  it("counts tokens for a non-streamed answer too", async () => {
    const { app: a, lines } = app();
    const res = await a.request("/api/generate", { method: "POST", body: JSON.stringify({ model: "m", prompt: "a b", stream: false }) });
    expect(await res.json()).toEqual({ response: "ab" });
    expect(field(lines[0], "eval_tokens")).toBe("2");
  });

  it("marks a stream the client abandoned", async () => {
    const { app: a, lines } = app();
    const res = await a.request("/api/generate", { method: "POST", body: JSON.stringify({ model: "m", prompt: "one two three four five" }) });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(lines).toHaveLength(1);
    expect(field(lines[0], "canceled")).toBe("true");
    expect(field(lines[0], "eval_tokens")).toBeUndefined();
  });

  it("logs errors with their status", async () => {
    const { app: a, lines } = app();
    const res = await a.request("/api/fail", { method: "POST" });
    expect(res.status).toBe(500);
    expect(field(lines[0], "status")).toBe("500");
  });

  it("adds a debug line per request under OLLAMA_DEBUG, still without the body", async () => {
    const { app: a, lines } = app(1);
    await (await a.request("/api/generate", { method: "POST", headers: { "user-agent": "test/1" }, body: JSON.stringify({ model: "m", prompt: "hidden text" }) })).text();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/level=DEBUG msg="request started" method=POST path=\/api\/generate agent=test\/1/);
    expect(lines.join("")).not.toContain("hidden");
  });
});

function tracedApp(format: LogFormat = "text", debug = 0) {
  const lines: string[] = [];
  const log = createLogger(debug, (l) => void lines.push(l), { format, context: requestLogFields });
  const a = new Hono();
  a.use("*", requestLog(log));
  a.get("/work", async (c) => {
    log.info("inside the handler", { step: 1 });
    await new Promise((r) => setTimeout(r, 5));
    log.warn("after a timer");
    // Work that outlives the request does not carry its id.
    detached(() => setTimeout(() => log.info("later, for nobody"), 1));
    return new Response("ok"); // a Response of the handler's own: the id is added to it too
  });
  a.get("/stream", (c) => ndjsonResponse(c, answer(["a", "b"]), () => {}));
  return { app: a, lines };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("request ids", () => {
  it("honours the client's X-Request-Id, echoes it and puts it on every line of the request", async () => {
    const { app: a, lines } = tracedApp();
    const res = await a.request("/work", { headers: { "X-Request-Id": "trace-42.abc" } });
    expect(res.headers.get("x-request-id")).toBe("trace-42.abc");
    await new Promise((r) => setTimeout(r, 20));
    const mine = lines.filter((l) => l.includes("request_id=trace-42.abc"));
    expect(mine.map((l) => /msg=("[^"]*"|\S+)/.exec(l)?.[1])).toEqual(['"inside the handler"', '"after a timer"', "request"]);
    expect(lines.find((l) => l.includes("later, for nobody"))).not.toMatch(/request_id/);
  });

  it("makes one when the client sent none, or one it cannot use, and says so under OLLAMA_DEBUG", async () => {
    const { app: a, lines } = tracedApp("text", 1);
    const ids: string[] = [];
    for (const sent of [undefined, "has space", "x".repeat(129), 'quo"te', ""]) {
      const res = await a.request("/work", sent === undefined ? {} : { headers: { "X-Request-Id": sent } });
      const id = res.headers.get("x-request-id") ?? "";
      expect(id).toMatch(UUID);
      ids.push(id);
    }
    expect(new Set(ids).size).toBe(5);
    expect(lines.filter((l) => l.includes("X-Request-Id not used"))).toHaveLength(4);
    for (const id of ids) expect(lines.filter((l) => l.includes(`msg=request `) && l.includes(`request_id=${id}`))).toHaveLength(1);
  });

  it("goes on streamed answers too", async () => {
    const { app: a, lines } = tracedApp();
    const res = await a.request("/stream", { headers: { "X-Request-Id": "s-1" } });
    expect(res.headers.get("x-request-id")).toBe("s-1");
    await res.text();
    expect(field(lines.at(-1), "request_id")).toBe("s-1");
  });
});

describe("OLLAMATS_LOG_FORMAT=json", () => {
  it("writes one JSON object per line with typed fields and the request id", async () => {
    const { app: a, lines } = tracedApp("json");
    await (await a.request("/work", { headers: { "X-Request-Id": "j-1" } })).text();
    await new Promise((r) => setTimeout(r, 20));
    const records = lines.map((l) => {
      expect(l.endsWith("\n")).toBe(true);
      expect(l.slice(0, -1)).not.toContain("\n");
      return JSON.parse(l) as Record<string, unknown>;
    });
    expect(Object.keys(records[0] ?? {}).slice(0, 3)).toEqual(["time", "level", "msg"]);
    expect(records[0]).toMatchObject({ level: "INFO", msg: "inside the handler", step: 1, request_id: "j-1" });
    expect(records.find((r) => r.msg === "request")).toMatchObject({ method: "GET", path: "/work", status: 200, request_id: "j-1" });
    const more: string[] = [];
    const l2 = createLogger(0, (l) => void more.push(l), { format: "json" });
    l2.error("boom", { err: new Error("disk full"), n: 10n, text: 'a "b"\nc' });
    expect(JSON.parse(more[0] ?? "")).toMatchObject({ level: "ERROR", msg: "boom", err: "disk full", n: "10", text: 'a "b"\nc' });
  });
});
