// Pull from a hostile or broken registry (issue 13, rows 3, 7 and 8): a server without Range
// support, redirects to other schemes and in loops, wrong statuses, Content-Ranges and body
// lengths, manifests of the wrong type or with absurd sizes, and a full disk. Each fails at once
// with a clear error (or, for a plain 200 carrying the whole blob, succeeds as one stream); no
// retries of a final error; the daemon stays up; the store verifies and holds no partial files.
import { execFileSync } from "node:child_process";
import { open, rm, statfs } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestDaemon } from "../helpers/daemon.js";
import { partStates, RegistryFixture } from "../helpers/registry-fixture.js";
import { listTree, ndjson, postJson, startFaultProxy, verifyBlobs, type FaultProxy, type Faults } from "../helpers/registry.js";
import { need } from "../helpers/need.js";

const run = describe;
const PART = 1 << 20;

const fx = new RegistryFixture(PART);
let proxy: FaultProxy;
let model: string;
let weights: { digest: string; size: number };

/** The daemon answers, and its store holds only verified blobs (no partial or temp files) and no manifest. */
async function healthyAndClean(d: TestDaemon): Promise<void> {
  const root = await fetch(d.url);
  expect(root.status).toBe(200);
  expect(await root.text()).toBe("Ollama is running");
  await verifyBlobs(d.models);
  expect(await listTree(path.join(d.models, "manifests"))).toEqual([]);
}

/** Range requests for the weights blob (the one-byte probe left out). */
function weightRanges(p: FaultProxy = proxy): string[] {
  return p.requests.filter((r) => r.path.endsWith(weights.digest) && r.range && r.range !== "bytes=0-0").map((r) => r.range as string);
}

async function failedPull(d: TestDaemon, faults: Faults, name = model): Promise<string> {
  proxy.reset();
  proxy.faults = faults;
  const t0 = Date.now();
  const res = await fx.pull(d, name);
  const body = (await res.json()) as { error?: string };
  expect(res.status, JSON.stringify(body)).toBe(500);
  // a final error is not retried with back-off (generous: a stall would be 30 s)
  expect(Date.now() - t0).toBeLessThan(15_000);
  return body.error ?? "";
}

/** No range was asked for twice and no retry was logged: the error was final. */
function notRetried(d: TestDaemon): void {
  const ranges = weightRanges();
  expect(new Set(ranges).size).toBe(ranges.length);
  expect(d.logs()).not.toMatch(/retrying/);
}

/** A tmpfs of `bytes` at a fresh directory, or null where mounting is not permitted (not root). */
async function smallDisk(bytes: number): Promise<string | null> {
  const dir = await fx.tempDir("ollamats-tmpfs-");
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir], { stdio: "ignore" });
    return dir;
  } catch {
    return null;
  }
}

function unmount(dir: string): void {
  try {
    execFileSync("umount", ["-l", dir], { stdio: "ignore" });
  } catch {
    // not mounted
  }
}

run("pull from a hostile registry", () => {
  beforeAll(async () => {
    await fx.start();
    ({ proxy, model, weights } = fx);
    expect(weights.size).toBeGreaterThan(10 * PART);
  }, 60_000);

  afterAll(() => fx.stop());

  it("a server without Range support (a plain 200 with the whole blob) is pulled as one stream; the daemon stays up", async () => {
    const d = await fx.daemon();
    proxy.reset();
    proxy.faults = { ignoreRange: "full", only: weights.digest };
    const res = await fx.pull(d, model);
    expect(await res.json()).toEqual({ status: "success" });
    expect(await verifyBlobs(d.models)).toContain(weights.digest.replace(":", "-"));
    expect((await fetch(d.url)).status).toBe(200);
    // one whole-blob stream, plus what the refused parallel answers carried before they were cut
    expect(proxy.blobBytes.get(weights.digest)).toBeLessThan(3 * weights.size);
    const generate = await postJson(`${d.url}/api/generate`, { model, prompt: "hi", stream: false, options: { num_predict: 2 } });
    expect(generate.status).toBe(200);
  });

  it("in process: without Range support the worker-thread hasher verifies the one stream and refuses a corrupted one", async () => {
    const { Store } = await import("../../src/registry/store.js");
    const { pullModel } = await import("../../src/registry/pull.js");
    const { parseModelName } = await import("../../src/registry/name.js");
    const name = parseModelName(model)!;
    const opts = { insecure: true, backoffMs: 10, tuning: { workerHashMin: 1, minPartSize: PART, maxPartSize: PART, minChunkSize: 256 << 10 } };
    const store = new Store(await fx.tempDir("ollamats-store-"));
    proxy.reset();
    proxy.faults = { ignoreRange: "full", only: weights.digest };
    await pullModel(store, name, opts, () => undefined);
    expect(await verifyBlobs(store.root)).toContain(weights.digest.replace(":", "-"));

    // a corrupted stream is still refused, and leaves nothing behind
    const bad = new Store(await fx.tempDir("ollamats-store-"));
    proxy.reset();
    proxy.faults = { ignoreRange: "full", only: weights.digest, corruptOffset: weights.size - 5, corruptDigest: weights.digest };
    await expect(pullModel(bad, name, opts, () => undefined)).rejects.toThrow(/^digest mismatch, file must be downloaded again/);
    expect((await listTree(bad.root)).filter((f) => f.includes("partial"))).toEqual([]);
    await verifyBlobs(bad.root);
  });

  it("a short plain 200 to a range request fails at once with a clear error and leaves nothing behind", async () => {
    const d = await fx.daemon();
    // the range's bytes alone, and a tiny body that has fully arrived when it is refused (a
    // destroyed body that was already complete used to throw an unhandled RequestAbortedError)
    for (const faults of [{ blobStatus: 200 }, { ignoreRange: "short" }] as const) {
      const error = await failedPull(d, { ...faults, only: weights.digest });
      expect(error).toMatch(/^registry answered the range request for bytes \d+-\d+ of sha256:[0-9a-f]{64} with a plain 200 of \d+ bytes; the blob is \d+ bytes/);
      notRetried(d);
      await healthyAndClean(d);
    }
  });

  it("a blob redirect to a non-http(s) URL fails at once, without retries", async () => {
    const d = await fx.daemon();
    for (const location of ["file:///etc/passwd", "ftp://127.0.0.1/x", "data:text/plain,hello", "gopher://127.0.0.1/x", "javascript:alert(1)"]) {
      const error = await failedPull(d, { blobRedirect: location, only: weights.digest });
      const scheme = location.slice(0, location.indexOf(":") + 1);
      expect(error).toBe(`registry redirected to an unsupported URL scheme "${scheme}" (only http and https are followed)`);
      expect(proxy.requests.filter((r) => r.path.endsWith(weights.digest))).toHaveLength(1);
      notRetried(d);
      await healthyAndClean(d);
    }
  });

  it("a redirect loop or chain fails at once, on one host and across two", async () => {
    const d = await fx.daemon();
    const error = await failedPull(d, { blobRedirect: "$path", only: weights.digest });
    expect(error).toMatch(/^redirect loop: http:\/\/127\.0\.0\.1:\d+\/v2\/test\/small\/blobs\/sha256:[0-9a-f]{64} was visited twice$/);
    await healthyAndClean(d);
    // a chain of ever new URLs ends after 10 redirects
    const chain = await failedPull(d, { blobRedirect: "$path?x", only: weights.digest });
    expect(chain).toMatch(/^maximum redirects exceeded \(10\) for http:\/\/127\.0\.0\.1:\d+\/v2\/test\/small\/blobs\/sha256:[0-9a-f]{64}$/);
    expect(proxy.requests.filter((r) => r.path.includes(weights.digest))).toHaveLength(11);
    await healthyAndClean(d);

    // the registry sends blobs to a "CDN" on another host name, which sends them back
    const cdn = await startFaultProxy(fx.reg.url);
    try {
      cdn.faults = { blobRedirect: `${proxy.url}$path`, only: weights.digest };
      const err2 = await failedPull(d, { redirectBlobsTo: `http://localhost:${new URL(cdn.url).port}` });
      expect(err2).toMatch(/^redirect loop: /);
      notRetried(d);
      await healthyAndClean(d);
    } finally {
      await cdn.stop();
    }
  });

  it("wrong statuses, Content-Ranges and body lengths are final errors: no retries, nothing left behind", async () => {
    const d = await fx.daemon();
    const cases: Array<[Faults, RegExp]> = [
      [{ blobStatus: 403 }, /^403: injected status$/],
      [{ blobStatus: 410 }, /^410: injected status$/],
      [{ blobStatus: 204 }, /^unexpected status code 204 for /],
      [{ badContentRange: "start" }, /^unexpected Content-Range "bytes \d+-\d+\/\d+" for bytes \d+-\d+ of sha256:[0-9a-f]{64} \(\d+ bytes\)$/],
      [{ badContentRange: "total" }, /^unexpected Content-Range "bytes \d+-\d+\/\d+" for bytes \d+-\d+ of sha256:/],
      [{ bodyShort: 1000 }, /^the registry's answer for sha256:[0-9a-f]{64} ended after \d+ of \d+ bytes$/],
      [{ bodyExtra: 100 }, /^the registry sent more than the \d+ bytes asked for of sha256:[0-9a-f]{64}$/],
    ];
    for (const [faults, want] of cases) {
      const error = await failedPull(d, { ...faults, only: weights.digest });
      expect(error, JSON.stringify(faults)).toMatch(want);
      notRetried(d);
      await healthyAndClean(d);
      expect(await partStates(d.models)).toEqual([]);
    }
  });

  it("only transient failures are retried: 429 and 503 answers, then success", async () => {
    const d = await fx.daemon();
    for (const status of [429, 503]) {
      proxy.reset();
      proxy.faults = { fail500: 2, failWith: status };
      const res = await fx.pull(d, model);
      expect(await res.json()).toEqual({ status: "success" });
      expect(proxy.requests.filter((r) => r.status === status)).toHaveLength(2);
      await verifyBlobs(d.models);
      expect((await postJson(`${d.url}/api/delete`, { model }, "DELETE")).status).toBe(200);
    }
  });

  it("transient failures are bounded in total: a server that drops every connection after a few bytes fails the pull; the next pull resumes", async () => {
    const d = await fx.daemon();
    const error = await failedPull(d, { dropAfter: 1000, dropCount: 1e9, only: weights.digest });
    expect(error).toMatch(/^max retries exceeded: 96 failed transfers of sha256:[0-9a-f]{64}; last: /);
    expect((await fetch(d.url)).status).toBe(200);
    // what arrived is kept for the next pull (the registry may come back)
    const kept = (await partStates(d.models)).reduce((n, p) => n + p.Completed, 0);
    expect(kept).toBeGreaterThan(0);
    proxy.reset();
    expect(await (await fx.pull(d, model)).json()).toEqual({ status: "success" });
    // the rest, and the probe's byte (counted per request: the failed pull's last answers may still be draining)
    const sent = proxy.requests.filter((r) => r.path.endsWith(weights.digest)).reduce((n, r) => n + (r.bytes ?? 0), 0);
    expect(sent).toBe(weights.size - kept + 1);
    await verifyBlobs(d.models);
    expect((await listTree(path.join(d.models, "blobs"))).filter((f) => f.includes("partial"))).toEqual([]);
  });

  it("a manifest of the wrong content type or kind is refused at once", async () => {
    const d = await fx.daemon();
    const good = await (await fetch(`${fx.reg.url}/v2/test/small/manifests/latest`, { headers: { accept: "application/vnd.docker.distribution.manifest.v2+json" } })).text();
    const cases: Array<[string, string, RegExp]> = [
      ["text/html; charset=utf-8", "<html>login</html>", /^pull model manifest: the registry answered with text\/html, not a manifest/],
      ["text/html", good, /^pull model manifest: the registry answered with text\/html, not a manifest/],
      ["application/vnd.oci.image.index.v1+json", JSON.stringify({ schemaVersion: 2, manifests: [] }), /^pull model manifest: .*is an image index/],
      ["application/vnd.docker.distribution.manifest.list.v2+json", JSON.stringify({ schemaVersion: 2, manifests: [] }), /^pull model manifest: .*is an image index/],
    ];
    for (const [i, [type, body, want]] of cases.entries()) {
      proxy.reset();
      proxy.faults = { manifestType: type };
      proxy.manifests.set(`odd/m${i}:latest`, body);
      const res = await fx.pull(d, `${proxy.host}/odd/m${i}:latest`);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toMatch(want);
      expect(proxy.requests.filter((r) => r.path.includes("/manifests/"))).toHaveLength(1);
      expect(await listTree(d.models)).toEqual([]);
    }
    // the types registries really use are accepted
    for (const type of ["application/vnd.docker.distribution.manifest.v2+json", "application/vnd.oci.image.manifest.v1+json", "application/json", "text/plain"]) {
      proxy.reset();
      proxy.faults = { manifestType: type };
      proxy.manifests.set("test/small:latest", good);
      expect(await (await fx.pull(d, model)).json()).toEqual({ status: "success" });
    }
    await verifyBlobs(d.models);
  });

  it("a manifest claiming more than the free space is refused before anything is allocated; absurd sizes are invalid", async () => {
    const d = await fx.daemon();
    const layer = (size: unknown, n: number) =>
      JSON.stringify({
        schemaVersion: 2,
        mediaType: "application/vnd.docker.distribution.manifest.v2+json",
        layers: [{ mediaType: "application/vnd.ollama.image.model", digest: `sha256:${String(n).repeat(64).slice(0, 64)}`, size }],
      });
    proxy.reset();
    proxy.manifests.set("huge/m:latest", layer(1e12, 1));
    const lines = await ndjson(await postJson(`${d.url}/api/pull`, { model: `${proxy.host}/huge/m:latest`, insecure: true }));
    const error = String(lines[lines.length - 1]?.error);
    const free = Number(/but only [\d.]+ [KMGT]?B \((\d+) bytes\) are free/.exec(error)?.[1]);
    expect(error).toMatch(/^not enough disk space: pulling 127\.0\.0\.1:\d+\/huge\/m:latest needs 1 TB \(1000000000000 bytes\) but only [\d.]+ [KMGT]?B \(\d+ bytes\) are free; free up space or set OLLAMA_MODELS to a larger disk$/);
    const fsFree = await statfs(d.models);
    expect(Math.abs(free - fsFree.bavail * fsFree.bsize)).toBeLessThan(1 << 30);
    expect(proxy.requests.filter((r) => r.path.includes("/blobs/"))).toEqual([]);
    expect(await listTree(d.models)).toEqual([]);

    for (const [i, size] of [2 ** 53, 2 ** 64, 1e300, -1, 0.5].entries()) {
      proxy.reset();
      proxy.manifests.set(`absurd/m${i}:latest`, layer(size, i + 2));
      const res = await fx.pull(d, `${proxy.host}/absurd/m${i}:latest`);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toMatch(/^pull model manifest: invalid size .* in layer 0$/);
      expect(proxy.requests.filter((r) => r.path.includes("/blobs/"))).toEqual([]);
      expect(await listTree(d.models)).toEqual([]);
    }
    expect((await fetch(d.url)).status).toBe(200);
  });

  describe("onto a full disk", diskTests);
});

function diskTests(): void {
  it("a disk too small for the model: refused by the free-space check before any byte is fetched", async () => {
    const disk = await smallDisk(4 << 20);
    need(disk, "a small tmpfs as OLLAMA_MODELS (mount -t tmpfs)");
    try {
      const d = await fx.daemon({ OLLAMA_MODELS: disk });
      proxy.reset();
      const res = await fx.pull(d, model);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toMatch(/^not enough disk space: pulling .* needs [\d.]+ MB \(\d+ bytes\) but only [\d.]+ [KM]B \(\d+ bytes\) are free/);
      expect(proxy.requests.filter((r) => r.path.includes("/blobs/"))).toEqual([]);
      expect(await listTree(disk)).toEqual([]);
      expect((await fetch(d.url)).status).toBe(200);
    } finally {
      unmount(disk);
    }
  });

  it("the disk fills up during the pull: a clear error, no partial files, and the next pull succeeds", async () => {
    const disk = await smallDisk(weights.size + (8 << 20));
    need(disk, "a small tmpfs as OLLAMA_MODELS (mount -t tmpfs)");
    const filler = path.join(disk, "filler");
    try {
      const d = await fx.daemon({ OLLAMA_MODELS: disk });
      proxy.reset();
      proxy.faults = { throttleMs: 100 }; // ~640 KB/s a connection: seconds for the whole blob
      const pending = fx.pull(d, model);
      // once bytes are arriving, take the rest of the disk
      for (let i = 0; i < 200 && (await partStates(disk)).reduce((n, p) => n + p.Completed, 0) === 0; i++) await new Promise((r) => setTimeout(r, 50));
      const fh = await open(filler, "w");
      const block = Buffer.alloc(1 << 20, 1);
      try {
        for (;;) await fh.write(block);
      } catch (e) {
        expect((e as NodeJS.ErrnoException).code).toBe("ENOSPC");
      } finally {
        await fh.close();
      }
      const res = await pending;
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toMatch(/^no space left on device while writing sha256-[0-9a-f]{64}-partial; free up space and pull again$/);
      expect((await fetch(d.url)).status).toBe(200);
      expect((await listTree(path.join(disk, "blobs"))).filter((f) => f.includes("partial"))).toEqual([]);
      await verifyBlobs(disk);
      expect(await listTree(path.join(disk, "manifests"))).toEqual([]);

      await rm(filler);
      proxy.reset();
      expect(await (await fx.pull(d, model)).json()).toEqual({ status: "success" });
      await verifyBlobs(disk);
    } finally {
      unmount(disk);
    }
  }, 60_000);
}
