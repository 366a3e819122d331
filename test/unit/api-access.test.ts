// The API-key and inference-only middleware as composed by createApp (host guard, CORS, request
// log, access): who gets 401 / 403 with which body and challenge, that the table of routes covers
// every route the app registers, and that no log line holds a key. Requests that pass stop at
// routes that need no backend (/api/version, unknown paths); test/integration/api-keys.test.ts runs
// the real daemon.
import { describe, expect, it } from "vitest";
import { mergeApiKeys, parseApiKeysFile, type ApiKey } from "../../src/api-keys.js";
import { loadConfig } from "../../src/config.js";
import type { Deps } from "../../src/daemon/deps.js";
import { createLogger } from "../../src/daemon/log.js";
import { INFERENCE_SCOPE, INVALID_KEY, MISSING_KEY, NO_MANAGEMENT } from "../../src/daemon/middleware/api-access.js";
import { routeAccess } from "../../src/daemon/routes/access.js";
import { createApp } from "../../src/daemon/server.js";
import { keyedRequest } from "../helpers/app-request.js";
import { OLLAMA_API_VERSION } from "../../src/daemon/api-version.js";

const ALL = "all-0123456789abcdef0123456789";
const INFER = "inf-0123456789abcdef0123456789";
const DIGEST = `sha256:${"a".repeat(64)}`;

function app(env: Record<string, string>, keys: ApiKey[] = []) {
  const config = loadConfig({ OLLAMA_MODELS: "/nonexistent", ...env });
  const lines: string[] = [];
  const deps = {
    config,
    log: createLogger(2, (l) => void lines.push(l)),
    version: "0.0.0-test",
    keys: mergeApiKeys(config.apiKeys, keys),
  } as unknown as Deps; // store, models and scheduler are never reached by these requests
  const a = createApp(deps);
  const req = keyedRequest(a);
  return { app: a, req, lines };
}

const withKeys = () => app({ OLLAMA_API_KEYS: ALL }, parseApiKeysFile(`${INFER} inference`, "F"));

const MANAGEMENT: [string, string][] = [
  ["POST", "/api/pull"],
  ["POST", "/api/push"],
  ["POST", "/api/create"],
  ["POST", "/api/copy"],
  ["DELETE", "/api/delete"],
  ["POST", `/api/blobs/${DIGEST}`],
  ["HEAD", `/api/blobs/${DIGEST}`],
  ["GET", `/api/blobs/${DIGEST}`],
];

describe("GET /api/status", () => {
  it("says Ollama's cloud is disabled, and by whom", async () => {
    expect(await (await app({}).req("/api/status")).json()).toEqual({ cloud: { disabled: true, source: "none" } });
    expect(await (await app({ OLLAMA_NO_CLOUD: "1" }).req("/api/status")).json()).toEqual({ cloud: { disabled: true, source: "env" } });
  });
});

describe("the route access table", () => {
  it("classifies every route the app registers; management is exactly pull, push, create, copy, delete, blobs", () => {
    const { app: a } = app({});
    const registered = a.routes.filter((r) => r.method !== "ALL").map((r) => r.path.replace(/:[^/]+/g, "x"));
    expect(registered.length).toBeGreaterThan(20);
    const unclassified = registered.filter((p) => routeAccess(p) === undefined);
    expect(unclassified).toEqual([]);
    const management = [...new Set(registered.filter((p) => routeAccess(p) === "management"))].sort();
    expect(management).toEqual(["/api/blobs/x", "/api/copy", "/api/create", "/api/delete", "/api/pull", "/api/push"]);
    expect([...new Set(registered.filter((p) => routeAccess(p) === "open"))]).toEqual(["/"]);
  });
});

describe("off by default", () => {
  it("without OLLAMA_API_KEYS or OLLAMA_NO_MANAGEMENT nothing asks for a key or refuses a route", async () => {
    const { req } = app({});
    expect(await (await req("/api/version")).json()).toEqual({ version: OLLAMA_API_VERSION, ollamats_version: "0.0.0-test" });
    const pull = await req("/api/pull", { method: "POST", body: "{" });
    expect(pull.status).toBe(400); // the route's own validation answered
    expect((await req("/nope")).status).toBe(404);
  });
});

describe("API keys", () => {
  it("GET and HEAD / stay open (health checks, `ollamats serve` readiness)", async () => {
    const { req } = withKeys();
    expect(await (await req("/")).text()).toBe("Ollama is running");
    expect((await req("/", { method: "HEAD" })).status).toBe(200);
  });

  it("no key: 401, Ollama's error shape and a Bearer challenge", async () => {
    const { req } = withKeys();
    for (const headers of [{}, { authorization: "Basic dXNlcjpwYXNz" }, { authorization: "Bearer" }, { authorization: "Bearer  " }, { "x-api-key": ALL }] as Record<string, string>[]) {
      const r = await req("/api/version", { headers });
      expect(r.status, JSON.stringify(headers)).toBe(401);
      expect(r.headers.get("www-authenticate")).toBe('Bearer realm="ollamats"');
      expect(await r.json()).toEqual({ error: MISSING_KEY });
    }
  });

  it("a wrong key: 401 with error=invalid_token; the key is not echoed", async () => {
    const { req } = withKeys();
    for (const key of ["wrong-key-0123456789abcdef", ALL.slice(0, -1), `${ALL}0`, ALL.toUpperCase()]) {
      const r = await req("/api/tags", { key });
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toBe('Bearer realm="ollamats", error="invalid_token"');
      const text = await r.text();
      expect(JSON.parse(text)).toEqual({ error: INVALID_KEY });
      expect(text).not.toContain(key);
    }
  });

  it("the right key passes, whatever the scheme's case", async () => {
    const { req } = withKeys();
    for (const authorization of [`Bearer ${ALL}`, `bearer ${INFER}`, `BEARER   ${ALL}  `]) {
      const r = await req("/api/version", { headers: { authorization } });
      expect(r.status, authorization).toBe(200);
    }
  });

  it("on /v1: OpenAI's error shape, with code invalid_api_key for a wrong key", async () => {
    const { req } = withKeys();
    const missing = await req("/v1/models");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="ollamats"');
    expect(await missing.json()).toEqual({ error: { message: MISSING_KEY, type: "invalid_request_error", param: null, code: null } });
    const wrong = await req("/v1/chat/completions", { method: "POST", key: "sk-wrong-0123456789abcdef", body: "{}" });
    expect(await wrong.json()).toEqual({ error: { message: INVALID_KEY, type: "invalid_request_error", param: null, code: "invalid_api_key" } });
  });

  it("an unknown path needs a key too (nothing to learn about the server without one), then 404s", async () => {
    const { req } = withKeys();
    expect((await req("/api/secret")).status).toBe(401);
    expect((await req("/api/secret", { key: ALL })).status).toBe(404);
  });

  it("CORS: a preflight is answered without a key, and a 401 carries the CORS headers", async () => {
    const { req } = withKeys();
    const origin = "http://localhost:3000";
    const pre = await req("/api/chat", { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization" } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe(origin);
    expect(pre.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
    const denied = await req("/api/tags", { headers: { origin } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get("access-control-allow-origin")).toBe(origin);
    expect((await req("/api/tags", { headers: { origin: "https://evil.example" } })).status).toBe(403);
  });

  it("an inference key is refused every management route with 403 and error=insufficient_scope", async () => {
    const { req } = withKeys();
    for (const [method, path] of MANAGEMENT) {
      const r = await req(path, { method, key: INFER, ...(method === "GET" || method === "HEAD" ? {} : { body: "{}" }) });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.headers.get("www-authenticate")).toBe('Bearer realm="ollamats", error="insufficient_scope"');
      if (method !== "HEAD") expect(await r.json()).toEqual({ error: INFERENCE_SCOPE });
    }
    // ...while a key with scope all reaches the route itself (its own 400 for a bad body).
    expect((await req("/api/pull", { method: "POST", key: ALL, body: "{" })).status).toBe(400);
    // A management route without a key is a 401 first: scopes are not shown to strangers.
    expect((await req("/api/pull", { method: "POST", body: "{}" })).status).toBe(401);
  });

  it("no log line holds a key, at trace level, for right and wrong keys", async () => {
    const { req, lines } = withKeys();
    const wrong = "wrong-secret-0123456789abcdef";
    for (const key of [ALL, INFER, wrong]) {
      await req("/api/version", { key });
      await req("/api/pull", { method: "POST", key, body: "{" });
      await req("/v1/models", { key });
    }
    expect(lines.length).toBeGreaterThanOrEqual(9);
    expect(lines.join("")).toMatch(/status=401/);
    for (const key of [ALL, INFER, wrong]) expect(lines.join("")).not.toContain(key.slice(4));
  });
});

describe("OLLAMA_NO_MANAGEMENT", () => {
  it("refuses every management route with 403 and serves the rest, without keys", async () => {
    const { req } = app({ OLLAMA_NO_MANAGEMENT: "1" });
    for (const [method, path] of MANAGEMENT) {
      const r = await req(path, { method, ...(method === "GET" || method === "HEAD" ? {} : { body: "{}" }) });
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.headers.get("www-authenticate")).toBeNull();
      if (method !== "HEAD") expect(await r.json()).toEqual({ error: NO_MANAGEMENT });
    }
    expect((await req("/api/version")).status).toBe(200);
  });

  it("matches paths as the router does: an encoded management path is refused, near misses are 404s", async () => {
    const { req } = app({ OLLAMA_NO_MANAGEMENT: "1" });
    expect((await req("/api/%70ull", { method: "POST", body: "{}" })).status).toBe(403);
    for (const path of ["/api/pull/", "/API/PULL", "//api/pull", "/api/pull/x"]) {
      expect((await req(path, { method: "POST", body: "{}" })).status, path).toBe(404);
    }
  });

  it("with keys: no key is 401 first; even a key with scope all cannot manage", async () => {
    const { req } = app({ OLLAMA_NO_MANAGEMENT: "true", OLLAMA_API_KEYS: ALL });
    expect((await req("/api/create", { method: "POST", body: "{}" })).status).toBe(401);
    const r = await req("/api/create", { method: "POST", key: ALL, body: "{}" });
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({ error: NO_MANAGEMENT });
  });
});
