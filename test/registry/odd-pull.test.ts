// Pull from registries and storage servers that bend the distribution spec
// (test/helpers/odd-registry.ts, in process): rate limits with Retry-After, and the like.
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { digestOf, manifestFor, startOddRegistry, type OddRegistry } from "../helpers/odd-registry.js";
import { Store } from "../../src/registry/store.js";
import { pullModel } from "../../src/registry/pull.js";
import { pushModel } from "../../src/registry/push.js";
import { parseModelName } from "../../src/registry/name.js";

const weights = randomBytes(5 << 20); // over the small-blob size: ranged parts
const config = Buffer.from('{"model_format":"gguf"}');
const tuning = { minPartSize: 1 << 20, maxPartSize: 1 << 20, minChunkSize: 256 << 10 };
let reg: OddRegistry;
let cdn: OddRegistry;
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), "ollamats-odd-pull-"));
  dirs.push(d);
  return d;
}

interface Pulled {
  store: Store;
  statuses: string[];
  error?: string;
  ms: number;
}

async function pull(model = `${reg.host}/a/b:latest`): Promise<Pulled> {
  const root = await tempDir();
  const store = new Store(root);
  const statuses: string[] = [];
  const t0 = Date.now();
  try {
    await pullModel(store, parseModelName(model)!, { insecure: true, backoffMs: 10, tuning, identityFile: path.join(root, "id") }, (p) => statuses.push(p.status));
    return { store, statuses, ms: Date.now() - t0 };
  } catch (e) {
    return { store, statuses, error: (e as Error).message, ms: Date.now() - t0 };
  }
}

/** The pulled blobs, all verified and complete. */
async function pulledAll(p: Pulled): Promise<void> {
  expect(p.error).toBeUndefined();
  expect((await readdir(p.store.blobsDir)).filter((f) => !f.endsWith(".lock")).sort()).toEqual([digestOf(weights), digestOf(config)].map((d) => d.replace(":", "-")).sort());
}

describe("pull from an odd registry", () => {
  beforeAll(async () => {
    reg = await startOddRegistry();
    cdn = await startOddRegistry();
  });
  afterAll(async () => {
    await reg.stop();
    await cdn.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });
  beforeEach(() => {
    for (const r of [reg, cdn]) {
      r.hook = undefined;
      r.requests.length = 0;
      r.blobs.set(digestOf(weights), weights);
      r.blobs.set(digestOf(config), config);
      r.manifests.set("a/b:latest", manifestFor(config, [weights]));
    }
  });

  describe("rate limits (429, 503 with Retry-After)", () => {
    it("a part answered 429 with Retry-After in seconds waits that long, says so in the progress, then succeeds", async () => {
      const times: number[] = [];
      reg.hook = (req, res) => {
        if (req.headers.range !== "bytes=0-262143") return false;
        times.push(Date.now());
        if (times.length > 2) return false;
        res.writeHead(429, { "retry-after": "1" }).end("slow down");
        return true;
      };
      const p = await pull();
      await pulledAll(p);
      expect(times).toHaveLength(3);
      expect((times[1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(950);
      expect((times[2] as number) - (times[1] as number)).toBeGreaterThanOrEqual(950);
      expect(p.statuses).toContain("429: slow down; retrying in 1.0s (try 2 of 6)");
    });

    it("a manifest answered 503 with an HTTP-date Retry-After waits until then", async () => {
      const times: number[] = [];
      reg.hook = (req, res, u) => {
        if (!u.pathname.includes("/manifests/")) return false;
        times.push(Date.now());
        if (times.length > 1) return false;
        res.writeHead(503, { "retry-after": new Date(Date.now() + 2500).toUTCString() }).end("maintenance");
        return true;
      };
      const p = await pull();
      await pulledAll(p);
      // an HTTP-date has whole seconds: 1.5 to 2.5 s from now
      expect((times[1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(1400);
      expect(p.statuses.some((s) => /^503: maintenance; retrying in [12]\.\ds \(try 2 of 6\)$/.test(s))).toBe(true);
    });

    it("a Retry-After past a minute fails at once, saying when to try again", async () => {
      reg.hook = (req, res, u) => {
        if (!u.pathname.includes("/manifests/")) return false;
        res.writeHead(429, { "retry-after": "3600" }).end("quota");
        return true;
      };
      const p = await pull();
      expect(p.error).toBe(`pull model manifest: 429: quota (the registry at ${reg.host} asks to wait 3600 s before trying again; try again later)`);
      expect(p.ms).toBeLessThan(5000);
      expect(reg.requests.filter((r) => r.url.includes("/manifests/"))).toHaveLength(1);
    });

    it("push: an upload answered 429 with Retry-After waits, says so, then succeeds", async () => {
      const root = await tempDir();
      const store = new Store(root);
      for (const b of [weights, config]) await store.writeBlobStream(digestOf(b), [b]);
      const name = parseModelName(`${reg.host}/up/m:latest`)!;
      await store.writeManifestRaw(name, manifestFor(config, [config]));
      reg.blobs.clear();
      const times: number[] = [];
      reg.hook = (req, res, u) => {
        if (req.method !== "PUT" || !u.pathname.startsWith("/upload/")) return false;
        times.push(Date.now());
        if (times.length > 1) return false;
        req.resume();
        res.writeHead(429, { "retry-after": "1" }).end("slow down");
        return true;
      };
      const statuses: string[] = [];
      await pushModel(store, name, { insecure: true, backoffMs: 10, identityFile: path.join(root, "id") }, (p) => statuses.push(p.status));
      expect(reg.blobs.has(digestOf(config))).toBe(true);
      expect((times[1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(950);
      expect(statuses).toContain("429: slow down; retrying in 1.0s (try 2 of 6)");
    });
  });
});
