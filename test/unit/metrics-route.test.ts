// GET /metrics as createApp composes it: who may scrape (with API keys, a key of either scope;
// inference-only mode leaves it on), the content type, and that every request, also one the host
// guard, CORS or the key check refuses, gets an id and a count.
import { describe, expect, it } from "vitest";
import { parseApiKeysFile } from "../../src/api-keys.js";
import { loadConfig } from "../../src/config.js";
import type { Deps } from "../../src/daemon/deps.js";
import { createLogger } from "../../src/daemon/log.js";
import { PrometheusMetrics } from "../../src/daemon/metrics/prometheus.js";
import { createApp } from "../../src/daemon/server.js";
import { keyedRequest } from "../helpers/app-request.js";
import { Scrape } from "../helpers/prometheus.js";

const ALL = "all-0123456789abcdef0123456789";
const INFER = "inf-0123456789abcdef0123456789";

function app(env: Record<string, string>) {
  const config = loadConfig({ OLLAMA_MODELS: "/nonexistent", ...env });
  const lines: string[] = [];
  const metrics = new PrometheusMetrics("0.0.0-test");
  const deps = {
    config,
    log: createLogger(0, (l) => void lines.push(l)),
    metrics,
    version: "0.0.0-test",
    keys: config.apiKeys.length > 0 ? [...config.apiKeys, ...parseApiKeysFile(`${INFER} inference`, "F")] : [],
  } as unknown as Deps; // store, models and scheduler are never reached by these requests
  const a = createApp(deps);
  const req = keyedRequest(a);
  const scrape = async () => new Scrape(await (await req("/metrics", { key: ALL })).text());
  return { req, lines, scrape };
}

describe("GET /metrics", () => {
  it("answers Prometheus' text format; HEAD too; other methods get 405", async () => {
    const { req } = app({});
    const r = await req("/metrics");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const s = new Scrape(await r.text());
    expect(s.problems("ollamats_")).toEqual([]);
    expect((await req("/metrics", { method: "HEAD" })).status).toBe(200);
    expect((await req("/metrics", { method: "POST" })).status).toBe(405);
  });

  it("with API keys needs one, of either scope; OLLAMA_NO_MANAGEMENT leaves it on", async () => {
    const { req } = app({ OLLAMA_API_KEYS: ALL });
    expect((await req("/metrics")).status).toBe(401);
    expect((await req("/metrics", { key: "wrong-0123456789abcdef0123" })).status).toBe(401);
    expect((await req("/metrics", { key: INFER })).status).toBe(200);
    expect((await req("/metrics", { key: ALL })).status).toBe(200);
    expect((await app({ OLLAMA_NO_MANAGEMENT: "1" }).req("/metrics")).status).toBe(200);
  });

  it("counts and ids every request, those refused before any route too; scrapes are not INFO lines", async () => {
    const { req, lines, scrape } = app({ OLLAMA_API_KEYS: ALL, OLLAMA_HOST: "127.0.0.1:11434" });
    const refusals = [
      await req("/api/tags"), // no key
      await req("/api/tags", { headers: { host: "evil.example" } }), // DNS rebinding guard
      await req("/api/tags", { headers: { origin: "https://evil.example" } }), // CORS
      await req("/api/blobs/sha256:abc", { key: ALL, method: "PUT" }), // a method no route has
    ];
    expect(refusals.map((r) => r.status)).toEqual([401, 403, 403, 405]);
    for (const r of refusals) expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const s = await scrape();
    expect(s.value("ollamats_http_requests_total", { route: "/api/tags", status: "401" })).toBe(1);
    expect(s.value("ollamats_http_requests_total", { route: "/api/tags", status: "403" })).toBe(2);
    expect(s.value("ollamats_http_requests_total", { route: "/api/blobs/:digest", method: "PUT", status: "405" })).toBe(1);
    expect(lines.filter((l) => l.includes("msg=request ")).map((l) => /status=(\d+)/.exec(l)?.[1])).toEqual(["401", "403", "403", "405"]);
    expect(lines.join("")).not.toContain("path=/metrics");
  });
});
