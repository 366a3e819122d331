// Push to a real registry (Debian's docker-registry) and pull back into a fresh store: the exact
// progress lines, monolithic and chunked uploads, a cross-repository mount, cache hits, copy and
// delete, the CLI, and the pulled model generating the same text for a fixed seed.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { CLI, createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import {
  generateText,
  ndjson,
  postJson,
  registryEnv,
  startFaultProxy,
  startRegistry,
  verifyBlobs,
  type FaultProxy,
  type TestRegistry,
} from "../helpers/registry.js";

const run = describe;

let reg: TestRegistry;
let proxy: FaultProxy;
let a: TestDaemon;
let b: TestDaemon;
let home: string;
let name: string;
let modelDigest: string;

const statuses = (lines: Array<Record<string, unknown>>) => lines.map((l) => String(l.status));

run("push and pull through a real registry", () => {
  beforeAll(async () => {
    reg = await startRegistry();
    proxy = await startFaultProxy(reg.url);
    home = await mkdtemp(path.join(os.tmpdir(), "ollamats-home-"));
    // A uploads in 64 KB parts, so the 140 KB weights go up as PATCH parts
    a = await startDaemon(registryEnv(home, { OLLAMATS_TRANSFER_PART_SIZE: "65536" }));
    b = await startDaemon(registryEnv(home));
    name = `${proxy.host}/test/tiny:latest`;
    const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
    const r = await createModelFromFile(a.url, name, file, { system: "You are a test.", parameters: { stop: ["<|im_end|>"] } });
    expect(r.status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await proxy?.stop();
    await reg?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("pushes with Ollama's progress lines, PATCH parts for a large blob and a PUT for a small one", async () => {
    proxy.reset();
    const res = await postJson(`${a.url}/api/push`, { model: name, insecure: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    const lines = await ndjson(res);
    const st = statuses(lines);
    expect(st[0]).toBe("retrieving manifest");
    expect(st.slice(-2)).toEqual(["pushing manifest", "success"]);
    const layers = lines.filter((l) => l.digest);
    for (const l of layers) {
      expect(l.status).toBe(`pushing ${String(l.digest).slice(7, 19)}`);
      expect(typeof l.total).toBe("number");
    }
    // every blob ends complete
    const last = new Map(layers.map((l) => [l.digest, l]));
    for (const l of last.values()) expect(l.completed).toBe(l.total);
    const weights = [...last.values()].find((l) => (l.total as number) > 100_000);
    expect(weights).toBeDefined();
    modelDigest = String(weights?.digest);
    const patches = proxy.requests.filter((r) => r.method === "PATCH");
    expect(patches.length).toBe(3); // 140384 bytes in 65536-byte parts
    const puts = proxy.requests.filter((r) => r.method === "PUT" && r.path.includes("/blobs/uploads/"));
    expect(puts.length).toBe(5); // the closing PUT of the weights + monolithic template (autodetected), system, params, config
    expect(puts.every((p) => /digest=sha256%3A[0-9a-f]{64}/.test(p.path))).toBe(true);
    expect(proxy.requests.some((r) => r.method === "PUT" && r.path.endsWith("/manifests/latest"))).toBe(true);
  });

  it("a failed PATCH is resumed from the offset the registry reports", async () => {
    const other = `${proxy.host}/test/retry:latest`;
    expect((await postJson(`${a.url}/api/copy`, { source: name, destination: other })).status).toBe(200);
    proxy.reset();
    proxy.faults = { patch500: 2 };
    const res = await postJson(`${a.url}/api/push`, { model: other, insecure: true, stream: false });
    expect(await res.json()).toEqual({ status: "success" });
    expect(proxy.requests.filter((r) => r.method === "PATCH" && r.status === 500).length).toBe(2);
    // the upload's state was asked for, then it went on
    expect(proxy.requests.some((r) => r.method === "GET" && r.path.includes("/blobs/uploads/"))).toBe(true);
    proxy.reset();
    const back = await postJson(`${b.url}/api/pull`, { model: other, insecure: true, stream: false });
    expect(await back.json()).toEqual({ status: "success" });
    await verifyBlobs(b.models);
    expect((await postJson(`${b.url}/api/delete`, { model: other }, "DELETE")).status).toBe(200);
  });

  it("a second push finds every blob in the registry and uploads nothing", async () => {
    proxy.reset();
    const res = await postJson(`${a.url}/api/push`, { model: name, insecure: true, stream: false });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "success" });
    expect(proxy.requests.filter((r) => r.method === "PATCH" || r.method === "POST")).toEqual([]);
  });

  it("pulls into a fresh store with Ollama's exact progress lines; every blob verifies", async () => {
    proxy.reset();
    const res = await postJson(`${b.url}/api/pull`, { model: name, insecure: true });
    expect(res.status).toBe(200);
    const lines = await ndjson(res);
    const st = statuses(lines);
    expect(st[0]).toBe("pulling manifest");
    expect(st.slice(-3)).toEqual(["verifying sha256 digest", "writing manifest", "success"]);
    for (const l of lines.filter((x) => x.digest)) {
      expect(Object.keys(l).sort()).toEqual(["completed", "digest", "status", "total"]);
      expect(l.status).toBe(`pulling ${String(l.digest).slice(7, 19)}`);
      expect(l.completed as number).toBeLessThanOrEqual(l.total as number);
    }
    const blobs = await verifyBlobs(b.models);
    expect(blobs).toContain(modelDigest.replace(":", "-"));
    // parts and temp files are gone
    expect((await readdir(path.join(b.models, "blobs"))).every((n) => /^sha256-[0-9a-f]{64}$/.test(n))).toBe(true);
    const tags = (await (await fetch(`${b.url}/api/tags`)).json()) as { models: Array<{ name: string }> };
    expect(tags.models.map((m) => m.name)).toEqual([name]);
  });

  it("the pulled model generates the same text as the original for a fixed seed", async () => {
    const original = await generateText(a.url, name);
    const pulled = await generateText(b.url, name);
    expect(original.length).toBeGreaterThan(0);
    expect(pulled).toBe(original);
    const show = (await (await postJson(`${b.url}/api/show`, { model: name })).json()) as { system: string; parameters: string };
    expect(show.system).toBe("You are a test.");
    expect(show.parameters).toContain("<|im_end|>");
  }, 60_000);

  it("pulling again is all cache hits: completed == total, no blob bytes, stream:false gives success", async () => {
    proxy.reset();
    const res = await postJson(`${b.url}/api/pull`, { model: name, insecure: true });
    const lines = await ndjson(res);
    for (const l of lines.filter((x) => x.digest)) expect(l.completed).toBe(l.total);
    expect(proxy.blobBytes.size).toBe(0);
    const quiet = await postJson(`${b.url}/api/pull`, { name, insecure: true, stream: false });
    expect(quiet.status).toBe(200);
    expect(await quiet.json()).toEqual({ status: "success" });
  });

  it("mounts a blob from another repository instead of uploading it", async () => {
    const derived = `${proxy.host}/test/derived:v1`;
    const c = await postJson(`${a.url}/api/create`, { model: derived, from: name, system: "Derived.", stream: false });
    expect(c.status).toBe(200);
    proxy.reset();
    const res = await postJson(`${a.url}/api/push`, { model: derived, insecure: true, stream: false });
    expect(res.status).toBe(200);
    const mount = proxy.requests.find((r) => r.method === "POST" && r.path.includes(`mount=${encodeURIComponent(modelDigest)}`));
    expect(mount?.status).toBe(201);
    expect(mount?.path).toContain(`from=${encodeURIComponent("test/tiny")}`);
    expect(proxy.requests.some((r) => r.method === "PATCH")).toBe(false);
  });

  it("a model missing from the registry is `pull model manifest: file does not exist`", async () => {
    const res = await postJson(`${b.url}/api/pull`, { model: `${proxy.host}/test/nothing:latest`, insecure: true, stream: false });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: "pull model manifest: file does not exist" });
    const plain = await postJson(`${b.url}/api/pull`, { model: `http://${proxy.host}/test/tiny:latest` });
    expect(await plain.json()).toEqual({ error: "insecure protocol http" });
  });

  it("copy shares blobs; delete (model or legacy name) unloads and removes only unreferenced blobs", async () => {
    const before = await verifyBlobs(b.models);
    expect((await postJson(`${b.url}/api/copy`, { source: name, destination: "mine" })).status).toBe(200);
    expect((await postJson(`${b.url}/api/copy`, { source: name, destination: "../evil" })).status).toBe(400);
    expect((await postJson(`${b.url}/api/delete`, { model: name }, "DELETE")).status).toBe(200);
    expect((await verifyBlobs(b.models)).sort()).toEqual(before.sort());
    const missing = await postJson(`${b.url}/api/delete`, { model: name }, "DELETE");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: `model '${name}' not found` });
    expect((await postJson(`${b.url}/api/delete`, { name: "mine" }, "DELETE")).status).toBe(200);
    expect(await verifyBlobs(b.models)).toEqual([]);
    expect(await readdir(path.join(b.models, "manifests"))).toEqual([]);
  });

  it("ollamats push / pull print progress lines when stderr is not a terminal", async () => {
    const cli = (args: string[], d: TestDaemon) =>
      new Promise<{ code: number; out: string; err: string }>((resolve) => {
        const p = spawn(process.execPath, [CLI, ...args], { env: { ...d.env, OLLAMA_HOST: d.host } });
        let out = "";
        let err = "";
        p.stdout.on("data", (x: Buffer) => (out += x.toString()));
        p.stderr.on("data", (x: Buffer) => (err += x.toString()));
        p.on("close", (code) => resolve({ code: code ?? -1, out, err }));
      });
    const pushed = await cli(["push", "--insecure", name], a);
    expect(pushed.code).toBe(0);
    expect(pushed.err.split("\n")[0]).toBe("retrieving manifest");
    expect(pushed.err).toMatch(/^pushing [0-9a-f]{12} 100% /m);
    expect(pushed.err).toContain("success");
    expect(pushed.err).not.toContain("\x1b[");
    expect(pushed.out).toBe(`\nYou can find your model at:\n\n\t${name}\n`);
    const pulled = await cli(["pull", "--insecure", name], b);
    expect(pulled.code).toBe(0);
    expect(pulled.err).toMatch(/^pulling manifest\npulling [0-9a-f]{12}: 100% /);
    expect(pulled.err.trimEnd().split("\n").slice(-3)).toEqual(["verifying sha256 digest", "writing manifest", "success"]);
    const bad = await cli(["pull", `${proxy.host}/test/tiny:latest`], b);
    expect(bad.code).toBe(1);
  }, 30_000);
});
