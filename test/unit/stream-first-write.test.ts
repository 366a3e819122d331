// A stream's first batch is on the socket before the route handler returns: hono's and the
// middleware's work on the way out must not come between the first token and the client.
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

describe("streamed answers under @hono/node-server", () => {
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
