// The REST client against a small local HTTP server: NDJSON streaming, error mapping, blob upload,
// cancellation and the "server not running" message.
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client, readLines, ResponseError, ServerUnreachableError } from "../../src/api/client.js";
import type { GenerateResponse, ProgressResponse } from "../../src/api/types.js";
import { drainOrClose } from "../helpers/drain.js";

type Handler = (req: http.IncomingMessage, body: Buffer, res: http.ServerResponse) => void | Promise<void>;
const routes = new Map<string, Handler>();
let server: http.Server;
let base: string;
const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const h = routes.get(`${req.method} ${req.url}`);
      if (!h) {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("404 page not found");
        return;
      }
      void h(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

const json = (res: http.ServerResponse, status: number, obj?: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(obj === undefined ? "" : JSON.stringify(obj));
};

describe("Client", () => {
  it("sends HEAD / for the heartbeat and reads the version", async () => {
    routes.set("HEAD /", (_q, _b, res) => json(res, 200));
    routes.set("GET /api/version", (_q, _b, res) => json(res, 200, { version: "9.9.9" }));
    const c = new Client(base + "/", { userAgent: "ollamats/test" });
    await c.heartbeat();
    expect(await c.version()).toBe("9.9.9");
    expect(seen.at(-1)?.headers["user-agent"]).toBe("ollamats/test");
  });

  it("the server's version is ollamats' own when it answers one (the Ollama API version otherwise)", async () => {
    routes.set("GET /api/version", (_q, _b, res) => json(res, 200, { version: "0.13.2", ollamats_version: "1.2.3" }));
    expect(await new Client(base).version()).toBe("1.2.3");
  });

  it("streams NDJSON split anywhere across chunks", async () => {
    routes.set("POST /api/generate", async (_q, body, res) => {
      expect(JSON.parse(body.toString())).toEqual({ model: "m", prompt: "hi" });
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      const text =
        JSON.stringify({ model: "m", response: "Hé", done: false }) +
        "\n" +
        JSON.stringify({ model: "m", response: "llo ✓", done: false }) +
        "\n" +
        JSON.stringify({ model: "m", response: "", done: true, eval_count: 2 }) +
        "\n";
      const bytes = Buffer.from(text);
      for (let i = 0; i < bytes.length; i += 7) {
        res.write(bytes.subarray(i, i + 7));
        await new Promise((r) => setTimeout(r, 1));
      }
      res.end();
    });
    const chunks: GenerateResponse[] = [];
    await new Client(base).generate({ model: "m", prompt: "hi" }, (c) => chunks.push(c));
    expect(chunks.map((c) => c.response).join("")).toBe("Héllo ✓");
    expect(chunks.at(-1)?.eval_count).toBe(2);
  });

  it("throws the error line of a stream", async () => {
    routes.set("POST /api/chat", (_q, _b, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(JSON.stringify({ message: { role: "assistant", content: "a" }, done: false }) + "\n");
      res.end(JSON.stringify({ error: "runner crashed" }) + "\n");
    });
    const got: unknown[] = [];
    const err = await new Client(base).chat({ model: "m", messages: [] }, (c) => got.push(c)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseError);
    expect((err as Error).message).toBe("runner crashed");
    expect(got).toHaveLength(1);
  });

  it("maps HTTP errors to ResponseError with the server's message", async () => {
    routes.set("POST /api/show", (_q, _b, res) => json(res, 404, { error: "model 'x:latest' not found" }));
    const err = (await new Client(base).show({ model: "x" }).catch((e: unknown) => e)) as ResponseError;
    expect(err).toBeInstanceOf(ResponseError);
    expect(err.message).toBe("model 'x:latest' not found");
    expect(err.status).toBe(404);

    routes.set("POST /api/create", (_q, _b, res) => json(res, 400, { error: "neither 'from' or 'files' was specified" }));
    const e2 = (await new Client(base).create({ model: "y" }, () => {}).catch((e: unknown) => e)) as ResponseError;
    expect(e2.message).toBe("400 Bad Request: neither 'from' or 'files' was specified");
    expect(e2.error).toBe("neither 'from' or 'files' was specified");

    const e3 = (await new Client(base).pull({ model: "z" }, () => {}).catch((e: unknown) => e)) as ResponseError;
    expect(e3.status).toBe(404);
    expect(e3.error).toBe("404 page not found");
  });

  it("copies and deletes with JSON bodies", async () => {
    routes.set("POST /api/copy", (_q, _b, res) => json(res, 200));
    routes.set("DELETE /api/delete", (_q, _b, res) => json(res, 200));
    const c = new Client(base);
    await c.copy({ source: "a", destination: "b" });
    expect(JSON.parse(seen.at(-1)!.body.toString())).toEqual({ source: "a", destination: "b" });
    await c.delete({ model: "a" });
    expect(seen.at(-1)).toMatchObject({ method: "DELETE", url: "/api/delete" });
  });

  it("uploads a blob only when the server lacks it", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ollamats-blob-"));
    try {
      const file = path.join(dir, "w.gguf");
      const data = Buffer.alloc(300_000, 7);
      writeFileSync(file, data);
      const digest = `sha256:${createHash("sha256").update(data).digest("hex")}`;
      const have = new Set<string>();
      routes.set(`HEAD /api/blobs/${digest}`, (_q, _b, res) => json(res, have.has(digest) ? 200 : 404));
      routes.set(`POST /api/blobs/${digest}`, (_q, body, res) => {
        expect(createHash("sha256").update(body).digest("hex")).toBe(digest.slice(7));
        have.add(digest);
        json(res, 201);
      });
      const progress: number[] = [];
      await new Client(base).createBlob(digest, file, (sent) => progress.push(sent));
      expect(progress.at(-1)).toBe(data.length);
      const posts = seen.filter((s) => s.method === "POST" && s.url.startsWith("/api/blobs/"));
      expect(posts).toHaveLength(1);
      expect(posts[0]?.headers["content-length"]).toBe(String(data.length));

      await new Client(base).createBlob(digest, file);
      expect(seen.filter((s) => s.method === "POST" && s.url.startsWith("/api/blobs/"))).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stops a stream when its signal aborts", async () => {
    routes.set("POST /api/pull", (_q, _b, res) => {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      res.write(JSON.stringify({ status: "pulling manifest" }) + "\n");
      // never ends on its own
    });
    const controller = new AbortController();
    const seenStatus: ProgressResponse[] = [];
    const p = new Client(base).pull({ model: "m" }, (s) => {
      seenStatus.push(s);
      controller.abort();
    }, controller.signal);
    await expect(p).rejects.toThrow();
    expect(seenStatus).toEqual([{ status: "pulling manifest" }]);
    routes.delete("POST /api/pull");
  });

  it("sends its API key as a Bearer token on every kind of request, and none without one", async () => {
    routes.set("HEAD /", (_q, _b, res) => json(res, 200));
    routes.set("GET /api/tags", (_q, _b, res) => json(res, 200, { models: [] }));
    routes.set("POST /api/pull", (_q, _b, res) => json(res, 200, { status: "success" }));
    routes.set("HEAD /api/blobs/sha256:00", (_q, _b, res) => json(res, 200));
    const dir = mkdtempSync(path.join(os.tmpdir(), "ollamats-blob-"));
    try {
      writeFileSync(path.join(dir, "f"), "x");
      const calls = async (c: Client) => {
        const from = seen.length;
        await c.heartbeat();
        await c.list();
        await c.pull({ model: "m" }, () => {});
        await c.createBlob("sha256:00", path.join(dir, "f"));
        return seen.slice(from).map((s) => s.headers.authorization);
      };
      expect(await calls(new Client(base, { apiKey: "k-0123456789abcdef" }))).toEqual(Array(4).fill("Bearer k-0123456789abcdef"));
      expect(await calls(new Client(base))).toEqual(Array(4).fill(undefined));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a refused blob check reports the server's reason, which a HEAD answer cannot carry", async () => {
    const digest = "sha256:01";
    routes.set(`HEAD /api/blobs/${digest}`, (_q, _b, res) => json(res, 403));
    routes.set(`GET /api/blobs/${digest}`, (_q, _b, res) => json(res, 403, { error: "blob uploads are turned off" }));
    const err = await new Client(base).hasBlob(digest).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseError);
    expect((err as ResponseError).status).toBe(403);
    expect((err as ResponseError).message).toBe("blob uploads are turned off");
  });

  it("reports a refused connection with the serve hint", async () => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const err = await new Client(`http://127.0.0.1:${port}`).heartbeat().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerUnreachableError);
    expect((err as Error).message).toBe("could not connect to ollamats server, run 'ollamats serve' to start it");
  });
});

describe("a server that sends without end", () => {
  /** A route whose answer goes on until the client closes (at most 1 GiB); `sent` counts it. */
  const endless = (status: number) => {
    const counter = { sent: 0 };
    const handler: Handler = async (_req, _body, res) => {
      res.writeHead(status, { "content-type": "application/json" });
      const block = Buffer.alloc(1 << 20, "a");
      while (!res.destroyed && counter.sent < 1 << 30) {
        counter.sent += block.length;
        if (!res.write(block)) await drainOrClose(res);
      }
      res.destroy();
    };
    return { counter, handler };
  };

  it("an answer is refused past its limit, not read into memory", async () => {
    const { counter, handler } = endless(200);
    routes.set("GET /api/tags", handler);
    try {
      await expect(new Client(base).list()).rejects.toThrow(/the server's answer exceeds 268435456 bytes/);
      expect(counter.sent).toBeLessThan(320 << 20);
    } finally {
      routes.delete("GET /api/tags");
    }
  });

  it("an error answer is refused past a megabyte", async () => {
    const { counter, handler } = endless(500);
    routes.set("POST /api/generate", handler);
    try {
      await expect(new Client(base).generate({ model: "m", prompt: "hi" }, () => undefined)).rejects.toThrow(/exceeds 1048576 bytes/);
      expect(counter.sent).toBeLessThan(64 << 20);
    } finally {
      routes.delete("POST /api/generate");
    }
  });
});

describe("readLines", () => {
  it("splits lines, drops blank ones and keeps a last unterminated line", async () => {
    async function* src() {
      yield Buffer.from('{"a":1}\r\n\n{"b"');
      yield Buffer.from(':2}\n{"c":3}');
    }
    const lines: string[] = [];
    for await (const l of readLines(src())) lines.push(l);
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it("a server that never ends its line is cut off at the limit", async () => {
    let sent = 0;
    async function* endless() {
      for (;;) {
        sent += 16 * 1024;
        yield Buffer.alloc(16 * 1024, 0x78);
      }
    }
    await expect(async () => {
      for await (const _ of readLines(endless(), 4 * 1024 * 1024)) void _;
    }).rejects.toThrow("exceeds 4194304 characters");
    expect(sent).toBeLessThanOrEqual(4 * 1024 * 1024 + 16 * 1024);
  });
});
