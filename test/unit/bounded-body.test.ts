import { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { describe, expect, it } from "vitest";
import { LineSplitter, LineTooLongError } from "../../src/http/lines.js";
import { BodyTooLargeError, readBounded, readErrorText } from "../../src/http/bounded-body.js";

/** A body of `n` chunks of `size` bytes that counts how many were pulled. */
function body(n: number, size: number) {
  const pulled = { chunks: 0 };
  const r = Readable.from(
    (function* () {
      for (let i = 0; i < n; i++) {
        pulled.chunks++;
        yield Buffer.alloc(size, 97 + (i % 26));
      }
    })(),
  );
  return { body: r as unknown as Dispatcher.ResponseData["body"], pulled, stream: r };
}

describe("bounded bodies", () => {
  it("reads a body within its limit whole", async () => {
    const b = body(3, 10);
    expect((await readBounded(b.body, 30)).toString()).toBe("a".repeat(10) + "b".repeat(10) + "c".repeat(10));
  });

  it("stops at the first chunk past the limit and destroys the rest", async () => {
    const b = body(1000, 1024);
    await expect(readBounded(b.body, 4096, "the answer")).rejects.toThrow(new BodyTooLargeError(4096, "the answer"));
    expect(b.pulled.chunks).toBeLessThan(10);
    expect(b.stream.destroyed).toBe(true);
  });

  it("an error text is the body's first bytes, the rest never read", async () => {
    const b = body(1000, 1024);
    const text = await readErrorText(b.body, 1500);
    expect(text).toBe("a".repeat(1024) + "b".repeat(476));
    expect(b.pulled.chunks).toBeLessThan(10);
  });
});

describe("LineSplitter", () => {
  it("cuts lines across chunks and drops CR and blank lines", () => {
    const s = new LineSplitter();
    expect(s.push("data: 1\r\n\r\ndata: ")).toEqual(["data: 1"]);
    expect(s.push("2\n")).toEqual(["data: 2"]);
    expect(s.end()).toEqual([]);
  });

  it("a line that grows past the limit without its end is an error, and nothing of it is kept", () => {
    const s = new LineSplitter(100);
    expect(s.push("ok\n" + "x".repeat(60))).toEqual(["ok"]);
    expect(() => s.push("x".repeat(60))).toThrow(LineTooLongError);
    expect(s.end()).toEqual([]);
    // a long line that ends within one push is a line like any other, up to the limit
    expect(new LineSplitter(100).push("y".repeat(90) + "\n")).toEqual(["y".repeat(90)]);
  });

  it("a line that comes in many reads is whole once its end comes, and the rest waits for its own", () => {
    const s = new LineSplitter();
    const line = "data: " + "z".repeat(10_000);
    for (let i = 0; i < line.length; i += 7) expect(s.push(line.slice(i, i + 7))).toEqual([]);
    expect(s.push("\r\ndata: next")).toEqual([line]);
    expect(s.push(" part\n\ndata: last")).toEqual(["data: next part"]);
    expect(s.end()).toEqual(["data: last"]);
  });

  it("a multi-byte character split across reads is decoded whole", () => {
    const s = new LineSplitter();
    const bytes = Buffer.from("héllo ✓\n", "utf8");
    const out = [...bytes].flatMap((b) => s.push(Buffer.from([b])));
    expect(out).toEqual(["héllo ✓"]);
  });

  it("the limit holds for the part after the last newline of a read too", () => {
    const s = new LineSplitter(100);
    expect(() => s.push("a\n" + "x".repeat(101))).toThrow(LineTooLongError);
    expect(s.push("b\n")).toEqual(["b"]);
  });

  it("SSE mode: CRLF, LF and a lone CR end lines, a CRLF cut between reads ends one, blank lines stay", () => {
    const s = new LineSplitter(100, true);
    expect(s.push("data: 1\r")).toEqual(["data: 1"]);
    expect(s.push("\n\r\ndata: 2\r\rdata: 3\n\n")).toEqual(["", "data: 2", "", "data: 3", ""]);
    expect(s.push("\r")).toEqual([""]);
    expect(s.push("\r")).toEqual([""]);
    expect(s.end()).toEqual([]);
  });
});
