// The pure rules of the registry client under a hostile or broken registry: which failures are
// retried, which URLs a redirect may lead to, what a blob answer must look like, the disk-space
// messages, the partial files a failed download removes, and a push body over a vanished file.
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkRangeAnswer, checkWholeAnswer, contentLength, NoRangeSupport } from "../../src/registry/blob-answers.js";
import { discardPartialFiles } from "../../src/registry/blob-parts.js";
import { allOf } from "../../src/registry/blob-ranges.js";
import { isTransient, RegistryError, registryUrl, RetriesExhaustedError } from "../../src/registry/client.js";
import { checkFreeSpace, freeBytes, NoSpaceError, noSpaceWhileWriting } from "../../src/registry/disk-space.js";
import { rangeBody } from "../../src/registry/push.js";

const tmp: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), "ollamats-answers-"));
  tmp.push(d);
  return d;
}
afterEach(async () => {
  for (const d of tmp.splice(0)) await rm(d, { recursive: true, force: true });
});

const D = `sha256:${"a".repeat(64)}`;
const errno = (code: string) => Object.assign(new Error(code), { code });

describe("what is retried", () => {
  it("transient: network errors (also as a cause), 5xx, 408, 429", () => {
    for (const code of ["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "EAI_AGAIN", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]) {
      expect(isTransient(errno(code)), code).toBe(true);
    }
    expect(isTransient(new TypeError("fetch failed", { cause: errno("ECONNRESET") }))).toBe(true);
    for (const status of [500, 502, 503, 504, 408, 429]) expect(isTransient(new RegistryError("x", status)), String(status)).toBe(true);
  });

  it("final: other answers, local errors, wrong bodies, bad URLs, cancels, exhausted retries", () => {
    for (const status of [400, 401, 403, 404, 410, 416, 501, 505]) expect(isTransient(new RegistryError("x", status)), String(status)).toBe(false);
    expect(isTransient(new RegistryError("unexpected Content-Range"))).toBe(false);
    expect(isTransient(new RegistryError("overloaded", 503, false))).toBe(false);
    expect(isTransient(new RetriesExhaustedError("max retries exceeded: x"))).toBe(false);
    for (const code of ["ENOSPC", "EDQUOT", "EACCES", "ENOTFOUND", "UND_ERR_INVALID_ARG", "UND_ERR_RES_CONTENT_LENGTH_MISMATCH"]) {
      expect(isTransient(errno(code)), code).toBe(false);
    }
    expect(isTransient(new Error("plain"))).toBe(false);
    const ac = new AbortController();
    ac.abort();
    expect(isTransient(errno("ECONNRESET"), ac.signal)).toBe(false);
    expect(isTransient(Object.assign(new Error("aborted"), { name: "AbortError" }))).toBe(false);
  });
});

describe("URLs from the registry", () => {
  const base = new URL("http://127.0.0.1:5000/v2/a/b/blobs/x");
  it("http(s) only, relative ones resolved", () => {
    expect(registryUrl("/v2/a/b/blobs/y", base).href).toBe("http://127.0.0.1:5000/v2/a/b/blobs/y");
    expect(registryUrl("https://cdn.example/x?sig=1", base).href).toBe("https://cdn.example/x?sig=1");
    for (const [loc, scheme] of [
      ["file:///etc/passwd", "file:"],
      ["FTP://h/x", "ftp:"],
      ["data:text/plain,hi", "data:"],
      ["javascript:alert(1)", "javascript:"],
      ["gopher://h/", "gopher:"],
    ]) {
      expect(() => registryUrl(loc as string, base)).toThrow(`registry redirected to an unsupported URL scheme "${scheme}" (only http and https are followed)`);
    }
    expect(() => registryUrl("http://[::1", base)).toThrow(/^registry redirected to an invalid URL "http:\/\/\[::1"$/);
  });
});

describe("blob answers", () => {
  const h = (o: Record<string, string>) => o;
  it("a 206 must carry exactly the range asked for, of a blob of the manifest's size", () => {
    expect(() => checkRangeAnswer(206, h({ "content-range": "bytes 10-19/100", "content-length": "10" }), 10, 20, 100, D)).not.toThrow();
    expect(() => checkRangeAnswer(206, h({ "content-range": "bytes 10-19/*" }), 10, 20, 100, D)).not.toThrow();
    for (const cr of ["bytes 11-20/100", "bytes 10-18/100", "bytes 10-19/101", "bytes 10-19", "", "items 10-19/100"]) {
      expect(() => checkRangeAnswer(206, h({ "content-range": cr }), 10, 20, 100, D), cr).toThrow(`unexpected Content-Range ${JSON.stringify(cr)} for bytes 10-19 of ${D} (100 bytes)`);
    }
    expect(() => checkRangeAnswer(206, h({ "content-range": "bytes 10-19/100", "content-length": "9" }), 10, 20, 100, D)).toThrow(/^Content-Length 9 does not match/);
  });

  it("a plain 200: the whole blob means no Range support; any other length is final", () => {
    expect(() => checkRangeAnswer(200, h({ "content-length": "100" }), 10, 20, 100, D)).toThrow(NoRangeSupport);
    expect(() => checkRangeAnswer(200, h({}), 10, 20, 100, D)).toThrow(NoRangeSupport);
    expect(() => checkRangeAnswer(200, h({ "content-length": "100" }), 0, 100, 100, D)).not.toThrow();
    const short = () => checkRangeAnswer(200, h({ "content-length": "10" }), 10, 20, 100, D);
    expect(short).toThrow(`registry answered the range request for bytes 10-19 of ${D} with a plain 200 of 10 bytes; the blob is 100 bytes`);
    expect(short).toThrow(RegistryError);
  });

  it("other statuses and malformed lengths are final", () => {
    for (const status of [201, 204, 304]) expect(() => checkRangeAnswer(status, h({}), 0, 10, 100, D)).toThrow(`unexpected status code ${status} for bytes 0-9 of ${D}`);
    expect(() => contentLength(h({ "content-length": "-5" }))).toThrow('invalid Content-Length "-5"');
    expect(() => contentLength(h({ "content-length": "1e3" }))).toThrow(/^invalid Content-Length/);
    expect(contentLength(h({}))).toBeUndefined();
    expect(() => checkWholeAnswer(200, h({ "content-length": "99" }), 100, D)).toThrow(`registry sent a body of 99 bytes for ${D}; the manifest says 100 bytes`);
    expect(() => checkWholeAnswer(206, h({}), 100, D)).toThrow(`unexpected status code 206 for ${D}`);
    expect(() => checkWholeAnswer(200, h({ "content-length": "100" }), 100, D)).not.toThrow();
  });
});

describe("download workers", () => {
  it("all of them are waited for, also those started while waiting (the ramp adds some)", async () => {
    const done: string[] = [];
    const later = new Promise<void>((r) => setTimeout(r, 50)).then(() => void done.push("late"));
    const running: Array<Promise<void>> = [
      new Promise<void>((r) => setTimeout(r, 10)).then(() => {
        done.push("first");
        running.push(later); // started while the first was being waited for, ends after it
      }),
    ];
    await allOf(running);
    expect(done).toEqual(["first", "late"]);
  });
});

describe("disk space", () => {
  it("refuses more than the free space, naming both in bytes and what to do", async () => {
    const dir = await tempDir();
    const free = await freeBytes(dir);
    expect(free).toBeGreaterThan(0);
    await expect(checkFreeSpace(dir, 1, "pulling x")).resolves.toBeUndefined();
    const err = await checkFreeSpace(dir, 2 ** 52, "pulling x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoSpaceError);
    expect((err as Error).message).toMatch(/^not enough disk space: pulling x needs 4503 TB \(4503599627370496 bytes\) but only [\d.]+ [KMGT]?B \(\d+ bytes\) are free; free up space or set OLLAMA_MODELS to a larger disk$/);
    // a store whose directories do not exist yet: the nearest existing parent's file system
    expect(await freeBytes(path.join(dir, "no", "such", "dir"))).toBeGreaterThan(0);
  });

  it("a full disk while writing becomes one clear error; other errors pass unchanged", () => {
    for (const code of ["ENOSPC", "EDQUOT"]) {
      const e = noSpaceWhileWriting(errno(code), "sha256-x-partial");
      expect(e).toBeInstanceOf(NoSpaceError);
      expect((e as Error).message).toBe("no space left on device while writing sha256-x-partial; free up space and pull again");
    }
    const other = errno("EIO");
    expect(noSpaceWhileWriting(other, "f")).toBe(other);
  });
});

describe("files of a failed download", () => {
  it("removes the data file, the part files and their temp files, nothing else", async () => {
    const dir = await tempDir();
    const hex = "b".repeat(64);
    const other = "c".repeat(64);
    const names = [
      `sha256-${hex}-partial`,
      `sha256-${hex}-partial-0`,
      `sha256-${hex}-partial-12`,
      `.sha256-${hex}-partial-3.0a1b2c3d.tmp`,
      `sha256-${hex}`,
      `sha256-${other}-partial`,
      `sha256-${other}-partial-0`,
      `.sha256-${other}-partial-0.0a1b2c3d.tmp`,
      `sha256-${hex}-partial-x`,
    ];
    for (const n of names) await writeFile(path.join(dir, n), "x");
    await discardPartialFiles(dir, path.join(dir, `sha256-${hex}-partial`));
    expect((await readdir(dir)).sort()).toEqual(
      [`sha256-${hex}`, `sha256-${other}-partial`, `sha256-${other}-partial-0`, `.sha256-${other}-partial-0.0a1b2c3d.tmp`, `sha256-${hex}-partial-x`].sort(),
    );
  });
});

describe("push bodies", () => {
  it("a blob that vanished fails the body's reader, not the process", async () => {
    const dir = await tempDir();
    const body = rangeBody(path.join(dir, "gone"), 0, 10, { completed: 0 })() as AsyncIterable<Buffer>;
    await new Promise((r) => setTimeout(r, 50)); // the open fails before anyone reads
    const read = async () => {
      for await (const _ of body) void _;
    };
    await expect(read()).rejects.toThrow(/ENOENT/);
  });
});
