// Pull through a fault-injecting proxy in front of a real registry: retries after 500s and dropped
// connections, resume after `kill -9` of the daemon (only the missing bytes are transferred),
// digest rejection of a corrupted byte, cooperation of concurrent pulls (one daemon and two
// processes sharing a store), Bearer token auth with a signed request, HTTP_PROXY, and path safety.
import { readFile, readdir, stat } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestDaemon } from "../helpers/daemon.js";
import { partStates, RegistryFixture } from "../helpers/registry-fixture.js";
import { listTree, ndjson, postJson, startFaultProxy, verifyBlobs, type FaultProxy, type TestRegistry } from "../helpers/registry.js";

const run = describe;
const PART = 1 << 20;

const fx = new RegistryFixture(PART);
let reg: TestRegistry;
let proxy: FaultProxy;
let small: string; // name through the proxy
let weights: { digest: string; size: number };
const daemon = (extra: Record<string, string> = {}) => fx.daemon(extra);
const tempDir = (prefix: string) => fx.tempDir(prefix);
const pull = (d: TestDaemon, model: string, extra: object = {}) => fx.pull(d, model, extra);

run("pull under faults", () => {
  beforeAll(async () => {
    await fx.start();
    ({ reg, proxy, model: small, weights } = fx);
    expect(weights.size).toBeGreaterThan(10 * PART);
  }, 60_000);

  afterAll(() => fx.stop());

  it("retries 500s (manifest and blob) and resumes dropped connections from where they stopped", async () => {
    const d = await daemon();
    proxy.reset();
    proxy.faults = { manifest500: 1, fail500: 2, dropAfter: 200_000, dropCount: 4 };
    const res = await pull(d, small);
    expect(await res.json()).toEqual({ status: "success" });
    expect(proxy.requests.filter((r) => r.status === 500).length).toBe(3);
    // each drop costs at most what was in flight, never a restart of the part
    expect(proxy.blobBytes.get(weights.digest)).toBeLessThan(weights.size + 4 * 200_000);
    const ranges = proxy.requests.filter((r) => r.range && r.path.endsWith(weights.digest)).map((r) => r.range);
    expect(ranges.length).toBeGreaterThan(Math.ceil(weights.size / PART)); // retried ranges
    await verifyBlobs(d.models);
  });

  it("kill -9 mid-pull, restart, pull again: only the missing bytes are transferred and the store verifies", async () => {
    const models = await tempDir("ollamats-models-kill-");
    const first = await daemon({ OLLAMA_MODELS: models });
    proxy.reset();
    proxy.faults = { stallAfter: 300_000 };
    const pending = postJson(`${first.url}/api/pull`, { model: small, insecure: true }).catch(() => undefined);
    // wait until the part states stop moving (every part stalled and saved)
    let last = -1;
    let stable = 0;
    for (let i = 0; i < 200 && stable < 4; i++) {
      await new Promise((r) => setTimeout(r, 250));
      const sum = (await partStates(models)).reduce((n, p) => n + p.Completed, 0);
      stable = sum > 0 && sum === last ? stable + 1 : 0;
      last = sum;
    }
    expect(last).toBeGreaterThan(0);
    first.proc.kill("SIGKILL");
    await new Promise((r) => first.proc.once("exit", r));
    await pending;
    fx.forget(first);

    const parts = await partStates(models);
    expect(parts.length).toBe(Math.ceil(weights.size / PART));
    const have = parts.reduce((n, p) => n + p.Completed, 0);
    expect(have).toBeGreaterThan(0);
    expect(have).toBeLessThan(weights.size);
    expect(await readdir(path.join(models, "blobs"))).not.toContain(weights.digest.replace(":", "-"));

    proxy.reset();
    const second = await daemon({ OLLAMA_MODELS: models });
    const t0 = Date.now();
    const res = await pull(second, small);
    expect(await res.json()).toEqual({ status: "success" });
    // the missing bytes, plus the one-byte probe that resolves the blob URL
    expect(proxy.blobBytes.get(weights.digest)).toBe(weights.size - have + 1);
    const blobs = await verifyBlobs(models);
    expect(blobs).toContain(weights.digest.replace(":", "-"));
    expect((await listTree(path.join(models, "blobs"))).every((n) => /^sha256-[0-9a-f]{64}$/.test(n))).toBe(true);
    // the dead process's lock went stale (10 s) rather than blocking forever
    expect(Date.now() - t0).toBeLessThan(25_000);
  }, 60_000);

  it("a corrupted byte fails the pull with a digest error; no blob with that digest and no partial stays", async () => {
    const d = await daemon();
    proxy.reset();
    proxy.faults = { corruptOffset: 5_000_123, corruptDigest: weights.digest };
    const res = await pull(d, small);
    expect(res.status).toBe(500);
    const { error } = (await res.json()) as { error: string };
    expect(error).toMatch(new RegExp(`^digest mismatch, file must be downloaded again: want ${weights.digest}, got sha256:[0-9a-f]{64}$`));
    const files = await listTree(path.join(d.models, "blobs"));
    expect(files.filter((f) => f.includes(weights.digest.slice(7)))).toEqual([]);
    await verifyBlobs(d.models);
    expect(await listTree(path.join(d.models, "manifests"))).toEqual([]);
    // streamed: progress first, then the error as the last line
    proxy.faults = { corruptOffset: 77, corruptDigest: weights.digest };
    const lines = await ndjson(await postJson(`${d.url}/api/pull`, { model: small, insecure: true }));
    expect(lines[0]).toEqual({ status: "pulling manifest" });
    expect(String(lines[lines.length - 1]?.error)).toMatch(/^digest mismatch/);
    // and it recovers once the registry behaves
    proxy.reset();
    expect(await (await pull(d, small)).json()).toEqual({ status: "success" });
    await verifyBlobs(d.models);
  });

  it("in process: the worker-thread hasher verifies (and rejects) like the inline one; a bad small blob is refused too", async () => {
    const { Store } = await import("../../src/registry/store.js");
    const { pullModel } = await import("../../src/registry/pull.js");
    const { parseModelName } = await import("../../src/registry/name.js");
    const name = parseModelName(small)!;
    const tuning = { workerHashMin: 1, minPartSize: PART, maxPartSize: PART, minChunkSize: 256 << 10 };
    const opts = { insecure: true, tuning, backoffMs: 10 };
    const good = new Store(await tempDir("ollamats-store-"));
    proxy.reset();
    await pullModel(good, name, opts, () => undefined);
    await verifyBlobs(good.root);
    expect(proxy.requests.filter((r) => r.range && r.path.endsWith(weights.digest)).length).toBeGreaterThan(40); // 256 KB chunks

    const bad = new Store(await tempDir("ollamats-store-"));
    proxy.faults = { corruptOffset: weights.size - 3, corruptDigest: weights.digest };
    await expect(pullModel(bad, name, opts, () => undefined)).rejects.toThrow(/^digest mismatch, file must be downloaded again/);
    expect(await listTree(bad.root)).toEqual([]);

    const cfg = JSON.parse(await readFile(path.join(good.root, "manifests", proxy.host, "test", "small", "latest"), "utf8")).config.digest as string;
    proxy.faults = { corruptOffset: 0, corruptDigest: cfg };
    await expect(pullModel(bad, name, opts, () => undefined)).rejects.toThrow(new RegExp(`^digest mismatch, file must be downloaded again: want ${cfg}`));
    expect((await listTree(path.join(bad.root, "blobs"))).filter((f) => f.includes(cfg.slice(7)))).toEqual([]);
    await verifyBlobs(bad.root);
  });

  it("concurrent pulls of one model cooperate: one daemon twice, and two processes on one store", async () => {
    const d = await daemon();
    proxy.reset();
    proxy.faults = { throttleMs: 10 };
    const [x, y] = await Promise.all([pull(d, small), pull(d, small)]);
    expect(await x.json()).toEqual({ status: "success" });
    expect(await y.json()).toEqual({ status: "success" });
    expect(proxy.blobBytes.get(weights.digest)).toBe(weights.size + 1);

    const shared = await tempDir("ollamats-models-shared-");
    const [p1, p2] = await Promise.all([daemon({ OLLAMA_MODELS: shared }), daemon({ OLLAMA_MODELS: shared })]);
    proxy.reset();
    proxy.faults = { throttleMs: 10 };
    const [r1, r2] = await Promise.all([pull(p1, small), pull(p2, small)]);
    expect(await r1.json()).toEqual({ status: "success" });
    expect(await r2.json()).toEqual({ status: "success" });
    expect(proxy.blobBytes.get(weights.digest)).toBe(weights.size + 1);
    await verifyBlobs(shared);
  }, 60_000);

  it("answers a Bearer challenge with a token fetched by an ed25519-signed request", async () => {
    const authed = await startFaultProxy(reg.url);
    try {
      authed.faults = { requireAuth: true };
      const keyHome = await tempDir("ollamats-keyhome-");
      const d = await daemon({ HOME: keyHome });
      const res = await pull(d, `${authed.host}/test/small:latest`);
      expect(await res.json()).toEqual({ status: "success" });
      expect(authed.tokenRequests.length).toBeGreaterThan(0);
      expect(authed.tokenRequests.every((t) => t.signed && t.verified)).toBe(true);
      expect(authed.tokenRequests[0]?.url).toMatch(/\/token\?nonce=[\w-]{22}&scope=repository%3Atest%2Fsmall%3Apull%2Cpush&service=test-registry&ts=\d+$/);
      const key = await stat(path.join(keyHome, ".ollama", "id_ed25519"));
      expect(key.mode & 0o777).toBe(0o600);
      expect(await readFile(path.join(keyHome, ".ollama", "id_ed25519.pub"), "utf8")).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA[\w+/=]+\n$/);
      // push needs the token as well
      const pushed = await postJson(`${d.url}/api/push`, { model: `${authed.host}/test/small:latest`, insecure: true, stream: false });
      expect(await pushed.json()).toEqual({ status: "success" });
    } finally {
      await authed.stop();
    }
  });

  it("follows a blob redirect to another host (a CDN) and sends it no token", async () => {
    const authed = await startFaultProxy(reg.url);
    const cdn = await startFaultProxy(reg.url);
    try {
      // the "CDN": another proxy in front of the registry, under another host name
      authed.faults = { requireAuth: true, redirectBlobsTo: `http://localhost:${new URL(cdn.url).port}` };
      const d = await daemon({ HOME: await tempDir("ollamats-keyhome-") });
      const res = await pull(d, `${authed.host}/test/small:latest`);
      expect(await res.json()).toEqual({ status: "success" });
      expect(authed.requests.some((r) => r.method === "GET" && r.path.includes("/blobs/") && r.status === 307 && r.auth)).toBe(true);
      expect(authed.blobBytes.size).toBe(0);
      expect(cdn.blobBytes.get(weights.digest)).toBe(weights.size); // the probe stopped at the redirect
      expect(cdn.requests.length).toBeGreaterThan(0);
      expect(cdn.requests.every((r) => !r.auth)).toBe(true);
      await verifyBlobs(d.models);
    } finally {
      await authed.stop();
      await cdn.stop();
    }
  });

  it("goes through HTTP_PROXY when one is set", async () => {
    const d = await daemon({ HTTP_PROXY: proxy.url, http_proxy: proxy.url });
    proxy.reset();
    const res = await pull(d, `${reg.host}/test/small:latest`);
    expect(await res.json()).toEqual({ status: "success" });
    expect(proxy.forwardProxied).toBeGreaterThan(0);
  });

  it("refuses unsafe digests in a manifest before touching a file", async () => {
    const d = await daemon();
    const hex = "a".repeat(64);
    const bad: Array<Record<string, unknown>> = [
      { digest: "sha256:../../../../../../tmp/evil", size: 1 },
      { digest: `sha256:${hex}/../../x`, size: 1 },
      { digest: "../../etc/passwd", size: 1 },
      { digest: `sha256-${hex}`, size: 1 },
      { digest: `sha256:${hex.toUpperCase()}`, size: 1 },
      { digest: `sha512:${hex}${hex}`, size: 1 },
      { digest: `sha256:${hex}`, size: -1 },
      { digest: `sha256:${hex}`, size: 1.5 },
      { digest: `sha256:${hex}`, size: "12" },
    ];
    for (const [i, layer] of bad.entries()) {
      proxy.reset();
      proxy.manifests.set(`evil/m${i}:latest`, JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.docker.distribution.manifest.v2+json", config: { mediaType: "application/vnd.docker.container.image.v1+json", digest: `sha256:${"b".repeat(64)}`, size: 2 }, layers: [{ mediaType: "application/vnd.ollama.image.model", ...layer }] }));
      const res = await pull(d, `${proxy.host}/evil/m${i}:latest`);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toMatch(/^pull model manifest: (invalid|corrupt)/);
      expect(proxy.requests.filter((r) => r.path.includes("/blobs/"))).toEqual([]);
      expect(await listTree(d.models)).toEqual([]);
    }
    // a bad config digest too
    proxy.manifests.set("evil/cfg:latest", JSON.stringify({ schemaVersion: 2, config: { digest: "sha256:../x", size: 1 }, layers: [] }));
    expect((await pull(d, `${proxy.host}/evil/cfg:latest`)).status).toBe(500);
    expect(await listTree(d.models)).toEqual([]);
  });

  it("refuses names with `..`, absolute paths or odd characters everywhere with a 400", async () => {
    const d = await daemon();
    const names = ["../x", "a/../../b", "/etc/passwd", "..", "a b", "x/y/z/w/v", "%2e%2e/x", "C:\\x", "m:../t", "ns/../m", "host/../../m:t", "a\u0000b", "é"];
    for (const n of names) {
      for (const route of ["/api/pull", "/api/push"]) {
        const r = await postJson(`${d.url}${route}`, { model: n, insecure: true });
        expect(r.status, `${route} ${JSON.stringify(n)}`).toBe(400);
        expect(await r.json()).toEqual({ error: "invalid model name" });
      }
      expect((await postJson(`${d.url}/api/create`, { model: n, from: "x" })).status).toBe(400);
      expect((await postJson(`${d.url}/api/copy`, { source: "x", destination: n })).status).toBe(400);
      expect((await postJson(`${d.url}/api/delete`, { model: n }, "DELETE")).status).toBe(400);
    }
    for (const f of ["../m.gguf", "/abs/m.gguf", "a/../../m.gguf", "./m.gguf", "a//b"]) {
      const r = await postJson(`${d.url}/api/create`, { model: "ok", files: { [f]: `sha256:${"c".repeat(64)}` } });
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ error: "file path must be relative" });
    }
    expect(await listTree(d.models)).toEqual([]);
  });
});
