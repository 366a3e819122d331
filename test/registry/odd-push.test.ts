// Push to registries that bend the distribution spec (test/helpers/odd-registry.ts, in process):
// writes answered by redirects, upload locations that carry a query of their own.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { digestOf, manifestFor, startOddRegistry, type OddRegistry } from "../helpers/odd-registry.js";
import { Store } from "../../src/registry/store.js";
import { pushModel } from "../../src/registry/push.js";
import { parseModelName } from "../../src/registry/name.js";

const weights = randomBytes(300 << 10);
const config = Buffer.from('{"model_format":"gguf"}');
let reg: OddRegistry;
let storage: OddRegistry;
let store: Store;
let root: string;

function push(): Promise<void> {
  const name = parseModelName(`${reg.host}/a/b:latest`);
  if (!name) throw new Error("bad name");
  return pushModel(store, name, { insecure: true, backoffMs: 10, identityFile: path.join(root, "id") }, () => undefined);
}

/** Answer token requests and require the token on every other request to `reg`. */
function tokenAuth(u: URL, req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse): boolean {
  if (u.pathname === "/token") {
    res.end(JSON.stringify({ token: "REG-TOKEN" }));
    return true;
  }
  if (req.headers.authorization === "Bearer REG-TOKEN") return false;
  req.resume();
  res.writeHead(401, { "www-authenticate": `Bearer realm="${reg.url}/token",service="odd"` }).end();
  return true;
}

describe("push to an odd registry", () => {
  beforeAll(async () => {
    reg = await startOddRegistry();
    storage = await startOddRegistry();
    root = await mkdtemp(path.join(os.tmpdir(), "ollamats-odd-push-"));
    store = new Store(root);
    for (const b of [weights, config]) await store.writeBlobStream(digestOf(b), [b]);
    await store.writeManifestRaw(parseModelName(`${reg.host}/a/b:latest`)!, manifestFor(config, [weights]));
  });
  afterAll(async () => {
    await reg.stop();
    await storage.stop();
    await rm(root, { recursive: true, force: true });
  });
  beforeEach(() => {
    for (const r of [reg, storage]) {
      r.blobs.clear();
      r.manifests.clear();
      r.requests.length = 0;
      r.hook = undefined;
    }
  });

  it("a blob PUT answered 307 is sent again, body and all, to the Location, which gets no token", async () => {
    reg.hook = (req, res, u) => {
      if (tokenAuth(u, req, res)) return true;
      if (req.method !== "PUT" || !u.pathname.startsWith("/upload/")) return false;
      req.resume();
      res.writeHead(307, { location: `${storage.url}/bucket${u.pathname}${u.search}&sig=1` }).end();
      return true;
    };
    storage.hook = async (req, res, u) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const digest = u.searchParams.get("digest") ?? "";
      if (digestOf(body) === digest) reg.blobs.set(digest, body);
      res.writeHead(digestOf(body) === digest ? 201 : 400).end();
      return true;
    };
    await push();
    expect([...reg.blobs.keys()].sort()).toEqual([digestOf(weights), digestOf(config)].sort());
    expect(storage.requests.map((r) => r.method)).toEqual(["PUT", "PUT"]);
    expect(storage.requests.every((r) => r.authorization === undefined)).toBe(true);
    expect(reg.manifests.has("a/b:latest")).toBe(true);
  });

  it("a write answered by a redirect that drops its body (301, 302, 303) fails: no success for a blob or manifest never stored", async () => {
    for (const status of [301, 302, 303]) {
      reg.hook = (req, res, u) => {
        if (req.method !== "PUT" || !u.pathname.startsWith("/upload/")) return false;
        req.resume();
        res.writeHead(status, { location: `${storage.url}/elsewhere` }).end();
        return true;
      };
      await expect(push()).rejects.toThrow(new RegExp(`^the registry answered PUT /upload/\\d+ with a ${status} redirect; an upload can only follow a 307 or 308$`));
      expect(storage.requests).toEqual([]);
      expect(reg.manifests.size).toBe(0);
    }
    reg.hook = (req, res, u) => {
      if (req.method !== "PUT" || !u.pathname.includes("/manifests/")) return false;
      req.resume();
      res.writeHead(301, { location: "/v2/a/b/manifests/moved" }).end();
      return true;
    };
    await expect(push()).rejects.toThrow(/^the registry answered PUT \/v2\/a\/b\/manifests\/latest with a 301 redirect; an upload can only follow a 307 or 308$/);
  });

  it("an upload Location with a query of its own keeps it byte for byte; digest= is appended with &", async () => {
    reg.uploadLocation = (id) => `/upload/${id}?_state=a~b%20c+d&X-Sig=x%2Fy`;
    await push();
    const puts = reg.requests.filter((r) => r.method === "PUT" && r.url.startsWith("/upload/"));
    expect(puts).toHaveLength(2);
    for (const p of puts) expect(p.url).toMatch(/^\/upload\/\d+\?_state=a~b%20c\+d&X-Sig=x%2Fy&digest=sha256%3A[0-9a-f]{64}$/);
    // a Location without a query gets one
    reg.uploadLocation = (id) => `${reg.url}/upload/${id}`;
    reg.blobs.clear();
    reg.requests.length = 0;
    await push();
    for (const p of reg.requests.filter((r) => r.method === "PUT" && r.url.startsWith("/upload/"))) expect(p.url).toMatch(/^\/upload\/\d+\?digest=sha256%3A[0-9a-f]{64}$/);
    reg.uploadLocation = (id) => `/upload/${id}?_state=s${id}`;
  });
});
