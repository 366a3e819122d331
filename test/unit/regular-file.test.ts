// Files the CLI reads for the user (issue 13, row 9): only regular files, checked on the opened
// handle, read for exactly their size. Every consumer (FROM/ADAPTER hashing, the blob upload,
// images in a prompt, the Modelfile) refuses /dev/zero, FIFOs, sockets and directories at once
// and reports a file that changes while it is read. Each hang would show as a test timeout.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync } from "node:fs";
import { appendFile, mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "../../src/api/client.js";
import { readAttachment } from "../../src/cli/images.js";
import { buildCreatePlan, fileDigest } from "../../src/cli/modelfile-request.js";
import { openRegularFile, readChunks } from "../../src/fs/regular-file.js";
import { parseModelfile, parseParameterValue } from "../../src/registry/modelfile.js";

let dir: string;
let fifo: string;
let sock: string;
let server: net.Server;
const specials: Array<[string, () => string, RegExp]> = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-regular-"));
  fifo = path.join(dir, "pipe.gguf");
  execFileSync("mkfifo", [fifo]);
  sock = path.join(dir, "sock.gguf");
  server = net.createServer();
  await new Promise<void>((r) => server.listen(sock, r));
  specials.push(
    ["/dev/zero", () => "/dev/zero", /^\/dev\/zero is a character device, not a regular file$/],
    ["a FIFO", () => fifo, /pipe\.gguf is a FIFO \(named pipe\), not a regular file$/],
    ["a socket", () => sock, /sock\.gguf is a socket, not a regular file$/],
    ["a directory", () => dir, /is a directory, not a regular file$/],
  );
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await rm(dir, { recursive: true, force: true });
});

const sha = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

describe("openRegularFile / readChunks", () => {
  it("refuses every kind of non-regular file at once, naming its kind", async () => {
    for (const [, file, message] of specials) await expect(openRegularFile(file())).rejects.toThrow(message);
  });
  it("follows a symlink to a regular file, and refuses one to a device", async () => {
    const data = Buffer.from("hello");
    await writeFile(path.join(dir, "real"), data);
    execFileSync("ln", ["-sf", path.join(dir, "real"), path.join(dir, "link")]);
    execFileSync("ln", ["-sf", "/dev/zero", path.join(dir, "zero-link")]);
    expect(await fileDigest(path.join(dir, "link"))).toBe(sha(data));
    await expect(openRegularFile(path.join(dir, "zero-link"))).rejects.toThrow("is a character device, not a regular file");
  });
  it("reads exactly the file; one that grows, shrinks or is rewritten while read is an error", async () => {
    const big = Buffer.alloc(3 << 20, 7);
    const file = path.join(dir, "changing");
    const readAll = async (change: () => Promise<void>) => {
      await writeFile(file, big);
      const f = await openRegularFile(file);
      try {
        let first = true;
        for await (const _chunk of readChunks(f)) {
          if (first) await change();
          first = false;
        }
      } finally {
        await f.handle.close();
      }
    };
    await expect(readAll(async () => undefined)).resolves.toBeUndefined();
    await expect(readAll(() => appendFile(file, "more"))).rejects.toThrow(`changing grew past ${3 << 20} bytes while it was being read`);
    await expect(readAll(() => truncate(file, 1 << 20))).rejects.toThrow(`changing shrank from ${3 << 20} to ${1 << 20} bytes while it was being read`);
    await expect(readAll(async () => writeFile(file, Buffer.alloc(3 << 20, 8)))).rejects.toThrow("changing was modified while it was being read");
  });
  it("a /proc file, whose size says 0, is not taken as empty", async () => {
    await expect(fileDigest("/proc/self/status")).rejects.toThrow("grew past 0 bytes");
  });
});

describe("the CLI's readers", () => {
  it("FROM and ADAPTER: hashing refuses at once", async () => {
    const plan = (text: string) => buildCreatePlan(parseModelfile(text, { onWarning: () => {} }), dir, parseParameterValue);
    for (const [what, file, message] of specials) {
      if (what === "a directory") continue; // a directory is a model directory (cli-parse tests)
      await expect(plan(`FROM ${file()}\n`)).rejects.toThrow(message);
      await expect(plan(`FROM m\nADAPTER ${file()}\n`)).rejects.toThrow(message);
    }
  });
  it("images in a prompt: refused at once", async () => {
    for (const [, file, message] of specials) await expect(readAttachment(file())).rejects.toThrow(message);
  });
  it("the blob upload refuses before it sends anything", async () => {
    // No server listens here: a refusal must come before any connection is tried.
    const client = new Client("http://127.0.0.1:9");
    for (const [, file, message] of specials) await expect(client.createBlob(`sha256:${"0".repeat(64)}`, file())).rejects.toThrow(message);
  });
  it("a file that grows during the upload ends it with that error, not a bad blob", async () => {
    const received: number[] = [];
    const srv = http.createServer((req, res) => {
      if (req.method === "HEAD") return res.writeHead(404).end();
      let n = 0;
      req.on("data", (c: Buffer) => (n += c.length));
      req.on("end", () => {
        received.push(n);
        res.writeHead(201).end();
      });
      req.on("error", () => undefined);
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    try {
      const file = path.join(dir, "upload");
      await writeFile(file, Buffer.alloc(3 << 20, 1));
      const client = new Client(`http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`);
      let grown = false;
      const grow = (sent: number) => {
        if (!grown && sent > 0) appendFileSync(file, "x");
        grown = true;
      };
      await expect(client.createBlob(`sha256:${"1".repeat(64)}`, file, grow)).rejects.toThrow(`upload grew past ${3 << 20} bytes while it was being read`);
      expect(received.every((n) => n <= 3 << 20)).toBe(true); // never more than the file had when hashed
      await client.close();
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });
});
