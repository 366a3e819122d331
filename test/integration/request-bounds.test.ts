// Issue 13, the request-boundary rows, on the real daemon and runner: deeply nested JSON anywhere
// in a body (row 6), options outside their range (row 4, including a Modelfile's PARAMETERs) and
// `ollamats create` naming files that are not regular files (row 9). Each refusal is a clear 400
// (or one CLI error line), and the daemon still answers GET / at once afterwards.
import { execFile, execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { CLI, createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
let dir: string;
const LIMIT = 128;
const deep = (n: number) => "[".repeat(n) + "]".repeat(n);

const post = async (p: string, body: string | object) => {
  const r = await fetch(`${d.url}${p}`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, text };
};
const errorOf = (text: string): string => {
  const e = (JSON.parse(text) as { error: string | { message: string } }).error;
  return typeof e === "string" ? e : e.message;
};
/** The daemon is alive and its event loop free: GET / answers within a (generous) second. */
const answersAtOnce = async () => {
  const t = Date.now();
  const r = await fetch(d.url, { signal: AbortSignal.timeout(5_000) });
  expect(r.status).toBe(200);
  expect(Date.now() - t).toBeLessThan(1_000);
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-bounds-"));
  d = await startDaemon();
  expect((await createModelFromFile(d.url, "tiny", await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1 }))).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await d?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("deeply nested JSON (row 6)", () => {
  const N = 100_000;
  const depthError = `exceeded max depth: arrays and objects nest more than ${LIMIT} levels deep`;

  it("100,000 levels in any field of any route: 400 naming the limit", async () => {
    const bodies: Array<[string, string]> = [
      ["/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"format":${deep(N)}}`],
      ["/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"stream":false,"format":${deep(N)}}`],
      ["/api/create", `{"model":"x","from":"tiny","parameters":{"stop":${deep(N)}}}`],
      ["/api/show", `{"model":"tiny","options":{"temperature":${deep(N)}}}`],
      ["/api/embed", `{"model":"tiny","input":${deep(N)}}`],
      ["/api/tokenize", `{"model":"tiny","content":"x","options":{"a":${deep(N)}}}`],
      ["/api/pull", `{"model":"tiny","x":${deep(N)}}`],
      ["/api/copy", `{"source":"tiny","destination":${deep(N)}}`],
      ["/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}],"response_format":${deep(N)}}`],
      ["/v1/embeddings", `{"model":"tiny","input":${deep(N)}}`],
    ];
    for (const [route, body] of bodies) {
      const r = await post(route, body);
      expect(r.status, route).toBe(400);
      expect(errorOf(r.text), route).toBe(`invalid JSON in request body: ${depthError}`);
    }
    await answersAtOnce();
  });

  it("JSON inside a string (tool call arguments) is bounded the same way", async () => {
    const args = `{"a":${deep(N)}}`;
    const native = await post("/api/chat", {
      model: "tiny",
      stream: false,
      messages: [
        { role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: args } }] },
        { role: "user", content: "hi" },
      ],
    });
    expect(native.status).toBe(400);
    expect(errorOf(native.text)).toBe(`invalid tool call arguments: ${depthError}`);
    const openai = await post("/v1/chat/completions", {
      model: "tiny",
      messages: [
        { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: args } }] },
        { role: "user", content: "hi" },
      ],
    });
    expect(openai.status).toBe(400);
    expect(errorOf(openai.text)).toBe(`invalid tool call arguments: ${depthError}`);
    await answersAtOnce();
  });

  it("a format schema as deep as the limit allows is answered, not a 500", async () => {
    // 128 levels of body: the body object, "format", then nested array schemas.
    const levels = LIMIT - 2;
    const format = '{"type":"array","items":'.repeat(levels) + '{"type":"string"}' + "}".repeat(levels);
    const r = await post("/api/generate", `{"model":"tiny","prompt":"hi","stream":false,"options":{"num_predict":4},"format":${format}}`);
    expect([200, 400]).toContain(r.status);
    if (r.status === 400) expect(errorOf(r.text)).not.toMatch(/call stack/);
    await answersAtOnce();
  });
});

describe("options outside their range (row 4)", () => {
  const loadedThreads = (logs: string) => [...logs.matchAll(/msg="loaded tiny[^"]*".*?threads=(\d+)/g)].map((m) => Number(m[1]));

  it("num_thread past the logical cores loads with the cores, and generation works", async () => {
    const cores = os.availableParallelism();
    const r = await post("/api/generate", { model: "tiny", prompt: "hi", stream: false, options: { num_thread: cores + 3, num_predict: 4, seed: 1 } });
    expect(r.status).toBe(200);
    expect((JSON.parse(r.text) as { done: boolean }).done).toBe(true);
    expect(loadedThreads(d.logs()).at(-1)).toBe(cores);
    await answersAtOnce();
  });

  it("repeat_penalty 0 is a 400 naming the option and its range", async () => {
    for (const route of ["/api/generate", "/api/chat"]) {
      const r = await post(route, { model: "tiny", prompt: "hi", messages: [{ role: "user", content: "hi" }], stream: false, options: { repeat_penalty: 0 } });
      expect(r.status, route).toBe(400);
      expect(errorOf(r.text)).toBe('option "repeat_penalty" must be greater than 0 (1 turns the penalty off); got 0');
    }
    await answersAtOnce();
  });

  it("a megabyte-long stop sequence is a 400, from a request or a model", async () => {
    const r = await post("/api/generate", { model: "tiny", prompt: "hi", stream: false, options: { stop: ["x".repeat(1_000_000)] } });
    expect(r.status).toBe(400);
    expect(errorOf(r.text)).toBe('option "stop" sequences may be at most 256 characters long; got one of 1000000');
    const c = await post("/api/create", { model: "bad-stop", from: "tiny", stream: false, parameters: { stop: "x".repeat(1_000_000) } });
    expect(c.status).toBe(400);
    expect(errorOf(c.text)).toBe("invalid value for parameter 'stop': sequences may be at most 256 characters long; got one of 1000000");
    await answersAtOnce();
  });

  it("create refuses to store a refused value, in every form; values past a limit are stored and clamped at load", async () => {
    const bad = await post("/api/create", { model: "bad-params", from: "tiny", stream: false, parameters: { repeat_penalty: -1 } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad.text)).toBe("invalid value for parameter 'repeat_penalty': must be greater than 0 (1 turns the penalty off); got -1");
    const legacy = await post("/api/create", { model: "bad-params", modelfile: "FROM tiny\nPARAMETER repeat_penalty 0\n", stream: false });
    expect(legacy.status).toBe(400);
    expect(errorOf(legacy.text)).toContain("repeat_penalty");
    const tags = JSON.parse((await (await fetch(`${d.url}/api/tags`)).text())) as { models: Array<{ name: string }> };
    expect(tags.models.map((m) => m.name)).not.toContain("bad-params:latest");

    const big = await post("/api/create", { model: "big-params", from: "tiny", stream: false, parameters: { num_thread: 100000, num_ctx: 1e9, num_batch: 1e9 } });
    expect(big.status).toBe(200);
    const r = await post("/api/generate", { model: "big-params", prompt: "hi", stream: false, options: { num_predict: 4 } });
    expect(r.status).toBe(200);
    expect(loadedThreads(d.logs()).at(-1)).toBe(os.availableParallelism());
    await answersAtOnce();
  });

  it("ollamats create with such a PARAMETER fails with one clear line", async () => {
    const mf = path.join(dir, "Modelfile.params");
    await writeFile(mf, "FROM tiny\nPARAMETER repeat_penalty 0\n");
    const r = await cli(["create", "bad-cli", "-f", mf]);
    expect(r.code).toBe(1);
    expect(lastLine(r.stderr)).toBe("Error: 400 Bad Request: invalid value for parameter 'repeat_penalty': must be greater than 0 (1 turns the penalty off); got 0");
  });
});

describe("token ids from the client", () => {
  it("a generate context with ids outside the vocabulary is a 400, not an evaluation failure", async () => {
    for (const bad of [999_999_999, -1]) {
      const r = await post("/api/generate", { model: "tiny", prompt: "hi", stream: false, context: [1, bad], options: { num_predict: 2 } });
      expect(r.status).toBe(400);
      expect(errorOf(r.text)).toMatch(new RegExp(`^invalid token id ${bad} in "context": the vocabulary has \\d+ tokens$`));
    }
    await answersAtOnce();
  });
});

function cli(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    // 60 s only detects a hang; a refusal takes milliseconds.
    execFile(process.execPath, [CLI, ...args], { env: d.env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
    });
  });
}
const lastLine = (s: string) => s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").trim().split("\n").at(-1)?.trim();

describe("ollamats create with files that are not regular files (row 9)", () => {
  it("FROM or ADAPTER naming /dev/zero, a FIFO or a socket: one error line at once, nothing created", async () => {
    const fifo = path.join(dir, "weights.gguf");
    execFileSync("mkfifo", [fifo]);
    const sock = path.join(dir, "sock.gguf");
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(sock, r));
    const cases: Array<[string, string]> = [
      [`FROM ${sock}`, `Error: ${sock} is a socket, not a regular file`],
      ["FROM /dev/zero", "Error: /dev/zero is a character device, not a regular file"],
      [`FROM ${fifo}`, `Error: ${fifo} is a FIFO (named pipe), not a regular file`],
      ["FROM tiny\nADAPTER /dev/zero", "Error: /dev/zero is a character device, not a regular file"],
      [`FROM tiny\nADAPTER ${fifo}`, `Error: ${fifo} is a FIFO (named pipe), not a regular file`],
    ];
    for (const [text, message] of cases) {
      const mf = path.join(dir, "Modelfile");
      await writeFile(mf, `${text}\n`);
      const r = await cli(["create", "special", "-f", mf]);
      expect(r.code, text).toBe(1);
      expect(lastLine(r.stderr), text).toBe(message);
    }
    // The Modelfile itself may not be one either.
    const r = await cli(["create", "special", "-f", fifo]);
    expect(r.code).toBe(1);
    expect(lastLine(r.stderr)).toBe(`Error: ${fifo} is a FIFO (named pipe), not a regular file`);
    server.close();
    const tags = JSON.parse((await (await fetch(`${d.url}/api/tags`)).text())) as { models: Array<{ name: string }> };
    expect(tags.models.map((m) => m.name)).not.toContain("special:latest");
    await answersAtOnce();
  });
});
