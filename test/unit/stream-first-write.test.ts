// A stream's first batch is on the socket before the route handler returns: hono's and the
// middleware's work on the way out must not come between the first token and the client. Every
// line is a write of its own, a millisecond apart at most, and the final line three: clients
// that parse each read as one JSON line (genkitx-ollama) failed when two came together.
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
async function serveRecorded(events: () => AsyncGenerator<object[]>): Promise<{ text: string; writes: string[]; times: number[] }> {
  const writes: string[] = [];
  const times: number[] = [];
  const app = new Hono();
  app.use("*", async (_c, next) => next()); // as in the daemon: the answer passes through middleware
  app.post("/s", async (c) => {
    const out = (c.env as { outgoing: ServerResponse }).outgoing;
    const write = out.write.bind(out) as (chunk: unknown) => boolean;
    out.write = ((chunk: unknown) => {
      writes.push(String(chunk));
      times.push(performance.now());
      return write(chunk);
    }) as typeof out.write;
    return ndjsonResponse(c, events(), () => undefined);
  });
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => resolve(info.port));
  });
  const res = await fetch(`http://127.0.0.1:${port}/s`, { method: "POST", body: "{}" });
  return { text: await res.text(), writes, times };
}

describe("streamed answers under @hono/node-server", () => {
  it("write every line apart, a millisecond apart at most in a burst and the final line three, in order", async () => {
    const { text, writes, times } = await serveRecorded(async function* () {
      yield [{ n: 0 }];
      for (let n = 1; n <= 50; n++) {
        await Promise.resolve();
        yield [{ n }];
      }
      await new Promise((r) => setTimeout(r, 30));
      yield [{ n: 51 }, { n: 52, done: true }]; // the last token and the final line, together
    });
    const ns = Array.from({ length: 53 }, (_, i) => i);
    expect(text.trim().split("\n").map((l) => (JSON.parse(l) as { n: number }).n)).toEqual(ns);
    // one line a write: a client reading a write a line never meets two
    expect(writes.map((w) => (JSON.parse(w) as { n: number }).n)).toEqual(ns);
    // the burst spaced (timers fire no sooner than asked; 0.9 for the clock's rounding)
    for (let i = 2; i <= 50; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(0.9);
    expect(times[52]! - times[51]!).toBeGreaterThanOrEqual(2.9);
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
