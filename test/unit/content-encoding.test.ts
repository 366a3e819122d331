// Compressed request bodies (src/daemon/content-encoding.ts and parseBody): each coding undone,
// never past the body limit (a compression bomb is a 400, not a gigabyte), unknown codings a 415,
// zstd where Node has it (22.15+) and a 415 saying what to do where it does not; and through the
// app, a gzip-compressed JSON body parses as the plain one.
import zlib from "node:zlib";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseBody } from "../../src/daemon/body.js";
import { decodeBody } from "../../src/daemon/content-encoding.js";
import { ApiError } from "../../src/daemon/errors.js";

const json = Buffer.from(JSON.stringify({ model: "m", input: "héllo ".repeat(100) }));
const zstdCompress = (zlib as unknown as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;

async function refusal(p: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("decodeBody", () => {
  it.each([
    ["gzip", zlib.gzipSync(json)],
    ["x-gzip", zlib.gzipSync(json)],
    ["deflate", zlib.deflateSync(json)],
    ["br", zlib.brotliCompressSync(json)],
    ["identity", json],
    ["gzip, br", zlib.brotliCompressSync(zlib.gzipSync(json))],
    [" GZIP ", zlib.gzipSync(json)],
  ])("%s", async (coding, body) => {
    expect(await decodeBody(body, coding, 1 << 20)).toEqual(json);
  });

  it("a body that expands past the limit is refused as too large", async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(64 << 20)); // 64 MB of zeros in ~64 KB
    expect(bomb.length).toBeLessThan(1 << 20);
    expect(await refusal(decodeBody(bomb, "gzip", 1 << 20))).toEqual({ status: 400, message: `request body too large (limit ${1 << 20} bytes)` });
  });

  it("data that is not what its coding says, and codings nobody knows", async () => {
    const bad = await refusal(decodeBody(json, "gzip", 1 << 20));
    expect(bad.status).toBe(400);
    expect(bad.message).toMatch(/^the request body is not valid gzip data \(Content-Encoding: gzip\)/);
    // Names an object has by inheritance are no codings either.
    for (const coding of ["constructor", "__proto__", "toString"]) expect((await refusal(decodeBody(json, coding, 1 << 20))).status).toBe(415);
    expect(await refusal(decodeBody(json, "compress", 1 << 20))).toEqual({
      status: 415,
      message: 'unsupported Content-Encoding "compress": send the body uncompressed, or compressed with gzip, deflate, br or zstd',
    });
  });

  it("zstd: decoded where Node has it, else a 415 that says what to do", async () => {
    if (zstdCompress) {
      expect(await decodeBody(zstdCompress(json), "zstd", 1 << 20)).toEqual(json);
    } else {
      const r = await refusal(decodeBody(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), "zstd", 1 << 20));
      expect(r.status).toBe(415);
      expect(r.message).toContain("Node.js 22.15 or newer");
    }
  });
});

describe("parseBody", () => {
  const app = new Hono().post("/", async (c) => c.json(await parseBody(c, z.object({ model: z.string(), input: z.string() }))));
  app.onError((err, c) => c.json({ error: err.message }, (err as ApiError).status as 400));

  it("a gzip body parses as the plain one; a bomb is refused", async () => {
    const plain = await (await app.request("/", { method: "POST", body: json })).json();
    const r = await app.request("/", { method: "POST", body: zlib.gzipSync(json), headers: { "content-encoding": "gzip" } });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual(plain);
    const bomb = await app.request("/", { method: "POST", body: zlib.gzipSync(Buffer.alloc(80 << 20)), headers: { "content-encoding": "gzip" } });
    expect(bomb.status).toBe(400);
    expect(((await bomb.json()) as { error: string }).error).toMatch(/^request body too large/);
  });
});
