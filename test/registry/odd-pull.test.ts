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
import { RegistryClient } from "../../src/registry/client.js";
import type { IncomingMessage, ServerResponse } from "node:http";

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

  describe("credentials", () => {
    /** Token auth on `reg`: tokens from /token, valid while in `valid`; `issued` counts them. */
    function tokens(): { valid: Set<string>; issued: () => number; check: (req: IncomingMessage, res: ServerResponse, u: URL) => boolean } {
      const valid = new Set<string>();
      let n = 0;
      return {
        valid,
        issued: () => n,
        check: (req, res, u) => {
          if (u.pathname === "/token") {
            const t = `T${++n}`;
            valid.add(t);
            res.end(JSON.stringify({ access_token: t }));
            return true;
          }
          if (valid.has((req.headers.authorization ?? "").replace(/^Bearer /, ""))) return false;
          res.writeHead(401, { "www-authenticate": `Bearer realm="${reg.url}/token",service="odd",scope="repository:a/b:pull"` }).end();
          return true;
        },
      };
    }

    it("a token that expires mid-pull is renewed once for all the parts it failed, not once per part", async () => {
      const t = tokens();
      reg.hook = (req, res, u) => {
        if (t.check(req, res, u)) return true;
        if (req.headers.range === "bytes=1048576-1310719") t.valid.clear(); // expires while parts are in flight
        return false;
      };
      const p = await pull();
      await pulledAll(p);
      expect(t.issued()).toBe(2);
    });

    it("a 401 from the storage host a blob redirects to is not answered with the registry's token dance", async () => {
      const t = tokens();
      reg.hook = (req, res, u) => {
        if (t.check(req, res, u)) return true;
        if (!u.pathname.includes("/blobs/")) return false;
        res.writeHead(307, { location: `${cdn.url}${u.pathname}?sig=expired` }).end();
        return true;
      };
      cdn.hook = (req, res, u) => {
        if (u.pathname === "/cdn-token") return Boolean(res.end(JSON.stringify({ token: "CDN-TOKEN" })));
        res.writeHead(401, { "www-authenticate": `Bearer realm="${cdn.url}/cdn-token"` }).end("signature expired");
        return true;
      };
      const p = await pull();
      expect(p.error).toMatch(/^401: signature expired$/);
      expect(cdn.requests.filter((r) => r.url.startsWith("/cdn-token"))).toEqual([]);
      expect(cdn.requests.every((r) => r.authorization === undefined)).toBe(true);
      expect(reg.requests.filter((r) => !r.url.startsWith("/token") && r.authorization && r.authorization !== "Bearer T1").map((r) => r.authorization)).toEqual([]);
      expect((await readdir(p.store.blobsDir).catch(() => [])).filter((f) => f.includes(digestOf(weights).slice(7)))).toEqual([]);
    });

    it("a token realm that redirects is followed; the signed request's signature goes only to the registry itself", async () => {
      reg.hook = (req, res, u) => {
        if (u.pathname === "/token") return Boolean(res.writeHead(302, { location: `/token/v2${u.search}` }).end());
        if (u.pathname === "/token/v2") return Boolean(res.writeHead(307, { location: `${cdn.url}/issue${u.search}` }).end());
        if (req.headers.authorization === "Bearer FROM-CDN") return false;
        res.writeHead(401, { "www-authenticate": `Bearer realm="${reg.url}/token",service="odd"` }).end();
        return true;
      };
      cdn.hook = (req, res, u) => (u.pathname === "/issue" ? Boolean(res.end(JSON.stringify({ token: "FROM-CDN" }))) : false);
      await pulledAll(await pull());
      expect(reg.requests.filter((r) => r.url.startsWith("/token")).every((r) => /^[\w+/=]+:[\w+/=]+$/.test(r.authorization ?? ""))).toBe(true);
      expect(cdn.requests.map((r) => [r.url.split("?")[0], r.authorization])).toEqual([["/issue", undefined]]);
    });

    it("a token is for the registry's own scheme, host and port: never sent over http for an https registry", () => {
      const client = new RegistryClient(parseModelName("registry.example/a/b")!);
      expect(client.sameHost(new URL("https://registry.example/v2/x"))).toBe(true);
      expect(client.sameHost(new URL("https://registry.example:443/v2/x"))).toBe(true);
      expect(client.sameHost(new URL("http://registry.example/v2/x"))).toBe(false);
      expect(client.sameHost(new URL("https://registry.example:8443/v2/x"))).toBe(false);
      expect(client.sameHost(new URL("https://cdn.registry.example/v2/x"))).toBe(false);
    });
  });

  describe("signed storage URLs", () => {
    /** The registry redirects blobs to `cdn` with a signature; `valid` says which ones the cdn takes. */
    function signedRedirects(valid: (sig: number, served: number) => boolean): { resolves: () => number } {
      let sig = 0;
      let served = 0;
      reg.hook = (req, res, u) => {
        if (!u.pathname.includes("/blobs/")) return false;
        res.writeHead(307, { location: `${cdn.url}${u.pathname}?X-Amz-Signature=${++sig}` }).end();
        return true;
      };
      cdn.hook = (req, res, u) => {
        if (valid(Number(u.searchParams.get("X-Amz-Signature")), served++)) return false;
        res.writeHead(403, { "content-type": "application/xml" }).end("<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>");
        return true;
      };
      return { resolves: () => sig };
    }

    it("a signed URL that expires mid-download is renewed from the registry and the download goes on", async () => {
      // each signature is good for 6 requests to the storage host
      let current = 1;
      let uses = 0;
      const r = signedRedirects((sig) => {
        if (sig > current) [current, uses] = [sig, 0];
        return sig === current && ++uses <= 6;
      });
      const p = await pull();
      await pulledAll(p);
      expect(r.resolves()).toBeGreaterThan(3);
      expect(cdn.requests.some((q) => q.method === "GET" && q.url.includes("X-Amz-Signature=1"))).toBe(true);
    });

    it("a storage host that refuses every fresh URL fails the pull at once, after one renewal", async () => {
      const r = signedRedirects(() => false);
      const p = await pull();
      expect(p.error).toMatch(/^403: <Error><Code>AccessDenied<\/Code>/);
      expect(p.ms).toBeLessThan(5000);
      expect(r.resolves()).toBeLessThanOrEqual(3); // the small blob's, the probe's, one renewal
    });
  });

  describe("manifests", () => {
    it("a manifest whose connection drops mid-body is fetched again, saying so", async () => {
      let cut = 0;
      reg.hook = (req, res, u) => {
        if (!u.pathname.includes("/manifests/") || cut++ > 0) return false;
        const body = reg.manifests.get("a/b:latest") as Buffer;
        res.writeHead(200, { "content-length": String(body.length) });
        res.write(body.subarray(0, 20));
        setTimeout(() => res.socket?.destroy(), 20);
        return true;
      };
      const p = await pull();
      await pulledAll(p);
      expect(p.statuses.some((s) => /; retrying in \d+ms \(try 2 of 6\)$/.test(s))).toBe(true);
    });

    it("an image index or a schema 1 manifest served as plain JSON is named as such", async () => {
      const cases: Array<[object, RegExp]> = [
        [{ schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: [{ mediaType: "application/vnd.oci.image.manifest.v1+json", digest: digestOf("x"), size: 1 }] }, /is an image index \(a list of manifests\), not an Ollama model manifest$/],
        [{ schemaVersion: 2, mediaType: "application/vnd.docker.distribution.manifest.list.v2+json", manifests: [] }, /is an image index/],
        [{ schemaVersion: 1, name: "a/b", tag: "latest", fsLayers: [{ blobSum: digestOf("x") }] }, /is a Docker schema 1 manifest, not an Ollama model manifest$/],
      ];
      for (const [body, want] of cases) {
        reg.hook = (req, res, u) => (u.pathname.includes("/manifests/") ? Boolean(res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body))) : false);
        const p = await pull();
        expect(p.error).toMatch(/^pull model manifest: /);
        expect(p.error).toMatch(want);
        expect(reg.requests.filter((r) => r.url.includes("/blobs/"))).toEqual([]);
      }
    });
  });
});
