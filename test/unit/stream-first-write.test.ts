// A stream's first batch is on the socket before the route handler returns: hono's and the
// middleware's work on the way out must not come between the first token and the client. Lines
// that come in a burst (within a millisecond of the last write) share one write.
import { serve, type ServerType } from "@hono/node-server";
import type { ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { ndjsonResponse } from "../../src/daemon/stream.js";

let server: ServerType | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function* events(): AsyncGenerator<object[]> {
  // Several async hops, as between a runner and the route (completion, encoders).
  await Promise.resolve();
  yield [{ response: "first", done: false }];
  await new Promise((r) => setTimeout(r, 20));
  yield [{ response: "", done: true }];
}

/** Serves `handler`'s events as NDJSON and records each write to the socket. */
async function serveRecorded(events: () => AsyncGenerator<object[]>): Promise<{ text: string; writes: string[] }> {
  const writes: string[] = [];
  const app = new Hono();
  app.use("*", async (_c, next) => next()); // as in the daemon: the answer passes through middleware
  app.post("/s", async (c) => {
    const out = (c.env as { outgoing: ServerResponse }).outgoing;
    const write = out.write.bind(out) as (chunk: unknown) => boolean;
    out.write = ((chunk: unknown) => {
      writes.push(String(chunk));
      return write(chunk);
    }) as typeof out.write;
    return ndjsonResponse(c, events(), () => undefined);
  });
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => resolve(info.port));
  });
  const res = await fetch(`http://127.0.0.1:${port}/s`, { method: "POST", body: "{}" });
  return { text: await res.text(), writes };
}

describe("streamed answers under @hono/node-server", () => {
  it("write a burst of lines together, but the first line and one after a pause at once, and every line in order", async () => {
    const { text, writes } = await serveRecorded(async function* () {
      yield [{ n: 0 }];
      for (let n = 1; n <= 50; n++) {
        await Promise.resolve();
        yield [{ n }];
      }
      await new Promise((r) => setTimeout(r, 30));
      yield [{ n: 51 }];
      await new Promise((r) => setTimeout(r, 30));
      yield [{ n: 52 }];
      yield [{ n: 53 }]; // pending at the end: written before the stream ends
    });
    expect(text.trim().split("\n").map((l) => (JSON.parse(l) as { n: number }).n)).toEqual(Array.from({ length: 54 }, (_, i) => i));
    expect(writes[0]).toBe('{"n":0}\n');
    // lines 1-50 came one after another, microseconds apart: a write for each millisecond they
    // took (one or two here; a few more where the machine stalls the burst), never one a line
    const burst = writes.slice(1).findIndex((w) => w.includes('"n":51'));
    expect(burst).toBeGreaterThanOrEqual(1);
    expect(burst).toBeLessThanOrEqual(10);
    expect(writes[burst + 1]).toBe('{"n":51}\n');
    expect(writes[burst + 2]).toBe('{"n":52}\n');
    expect(writes[burst + 3]).toBe('{"n":53}\n');
  });

  it("have written the first batch when the handler's response is ready", async () => {
    const seen: string[] = [];
    const app = new Hono();
    app.use("*", async (_c, next) => {
      await next();
      seen.push("middleware after next");
    });
    app.post("/s", async (c) => {
      const out = (c.env as { outgoing: ServerResponse }).outgoing;
      const write = out.write.bind(out) as (chunk: unknown) => boolean;
      out.write = ((chunk: unknown) => {
        seen.push(`write ${String(chunk).trim()}`);
        return write(chunk);
      }) as typeof out.write;
      const res = await ndjsonResponse(c, events(), () => undefined);
      seen.push("handler returns");
      return res;
    });
    const port = await new Promise<number>((resolve) => {
      server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => resolve(info.port));
    });
    const res = await fetch(`http://127.0.0.1:${port}/s`, { method: "POST", body: "{}" });
    const text = await res.text();
    expect(text.trim().split("\n").map((l) => JSON.parse(l) as { response: string })).toEqual([
      { response: "first", done: false },
      { response: "", done: true },
    ]);
    expect(seen.slice(0, 3)).toEqual(['write {"response":"first","done":false}', "handler returns", "middleware after next"]);
  });
});
