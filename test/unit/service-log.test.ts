// The daemon's log: slog-style lines, OLLAMA_DEBUG levels, and the one line per request written
// by the request-log middleware (at the end of a stream, with the model and token counts).
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createLogger, formatDurationMs, formatValue, levelFor } from "../../src/daemon/log.js";
import { logCounts, requestLog } from "../../src/daemon/middleware/request-log.js";
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

async function* answer(words: string[]): AsyncIterable<Chunk> {
  for (const w of words) yield { model: "m", response: w, done: false };
  yield { model: "m", response: "", done: true, prompt_eval_count: 7, eval_count: words.length };
}

function app(debug = 0) {
  const { log, lines } = capture(debug);
  const a = new Hono();
  a.use("*", requestLog(log));
  a.get("/api/tags", (c) => c.json({ models: [] }));
  a.post("/api/generate", async (c) => {
    const body = (await c.req.json()) as { model: string; prompt: string; stream?: boolean };
    c.set("logModel", `${body.model}:latest`);
    const gen = logCounts(c, answer(body.prompt.split(" ")));
    if (body.stream === false) {
      let text = "";
      for await (const ch of gen) text += ch.response;
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
    expect(lines[0]).toMatch(/level=INFO msg=request method=GET path=\/api\/tags status=200 duration=\d+(\.\d+)?(µs|ms)\n$/);
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
