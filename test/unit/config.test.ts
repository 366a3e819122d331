import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  ConfigError,
  allowedOrigins,
  loadConfig,
  parseGoDuration,
  parseHost,
  parseKeepAliveEnv,
  parseKeepAliveRequest,
} from "../../src/config.js";

describe("parseHost (OLLAMA_HOST, §3.2)", () => {
  const cases: Array<[string | undefined, Partial<ReturnType<typeof parseHost>>]> = [
    [undefined, { scheme: "http", host: "127.0.0.1", port: 11434, path: "", url: "http://127.0.0.1:11434" }],
    ["", { scheme: "http", host: "127.0.0.1", port: 11434, url: "http://127.0.0.1:11434" }],
    ["   ", { host: "127.0.0.1", port: 11434 }],
    ["1.2.3.4", { scheme: "http", host: "1.2.3.4", port: 11434, url: "http://1.2.3.4:11434" }],
    ["1.2.3.4:5678", { host: "1.2.3.4", port: 5678 }],
    ["0.0.0.0", { host: "0.0.0.0", port: 11434, url: "http://127.0.0.1:11434" }],
    ["0.0.0.0:8080", { host: "0.0.0.0", port: 8080, url: "http://127.0.0.1:8080" }],
    [":8080", { host: "", port: 8080, url: "http://127.0.0.1:8080" }],
    [":0", { host: "", port: 0 }],
    ["::1", { host: "::1", port: 11434, url: "http://[::1]:11434" }],
    ["[::1]", { host: "::1", port: 11434 }],
    ["[::1]:1234", { host: "::1", port: 1234, url: "http://[::1]:1234" }],
    ["[::]:1234", { host: "::", port: 1234, url: "http://[::1]:1234" }],
    ["::", { host: "::", port: 11434, url: "http://[::1]:11434" }],
    ["0:0:0:0:0:0:0:1", { host: "::1" }],
    ["example.com", { scheme: "http", host: "example.com", port: 11434, url: "http://example.com:11434" }],
    ["example.com:56789", { host: "example.com", port: 56789 }],
    ["http://example.com", { scheme: "http", host: "example.com", port: 80, url: "http://example.com:80" }],
    ["https://example.com", { scheme: "https", host: "example.com", port: 443, url: "https://example.com:443" }],
    ["http://example.com:8080", { port: 8080 }],
    ["https://example.com:56789", { scheme: "https", port: 56789 }],
    ["ollama.com", { scheme: "https", host: "ollama.com", port: 443, url: "https://ollama.com:443" }],
    ["http://ollama.com", { scheme: "http", host: "ollama.com", port: 80 }],
    ["example.com/path", { host: "example.com", port: 11434, path: "/path", url: "http://example.com:11434/path" }],
    ["example.com:56789/path/", { port: 56789, path: "/path", url: "http://example.com:56789/path" }],
    ["https://example.com:56789/a/b", { scheme: "https", path: "/a/b", url: "https://example.com:56789/a/b" }],
    ["example.com/", { path: "" }],
    ['"0.0.0.0:1234"', { host: "0.0.0.0", port: 1234 }],
    ["'127.0.0.1'", { host: "127.0.0.1", port: 11434 }],
    ["  localhost:1234  ", { host: "localhost", port: 1234, url: "http://localhost:1234" }],
  ];
  for (const [input, want] of cases) {
    it(`parses ${JSON.stringify(input)}`, () => {
      expect(parseHost(input)).toMatchObject(want);
    });
  }

  it("returns a frozen object", () => {
    expect(Object.isFrozen(parseHost("x"))).toBe(true);
  });

  const bad: Array<[string, RegExp]> = [
    ["example.com:abc", /OLLAMA_HOST: invalid port "abc"/],
    ["example.com:99999", /OLLAMA_HOST: invalid port "99999".*0 to 65535/],
    ["127.0.0.1:-1", /invalid port "-1"/],
    ["example.com:", /invalid port ""/],
    ["tcp://example.com", /OLLAMA_HOST: unsupported scheme "tcp"/],
    ["a:b:c", /OLLAMA_HOST: invalid host "a:b:c"/],
    ["[foo]", /OLLAMA_HOST: invalid host/],
  ];
  for (const [input, msg] of bad) {
    it(`rejects ${JSON.stringify(input)}`, () => {
      expect(() => parseHost(input)).toThrow(ConfigError);
      expect(() => parseHost(input)).toThrow(msg);
    });
  }
});

describe("parseGoDuration", () => {
  const ok: Array<[string, number]> = [
    ["0", 0],
    ["-0", 0],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["300ms", 300],
    ["1.5s", 1500],
    [".5s", 500],
    ["1.s", 1000],
    ["1500us", 1.5],
    ["1500µs", 1.5],
    ["1500μs", 1.5],
    ["100ns", 0.0001],
    ["2h45m30.5s", 9_930_500],
    ["-1m", -60_000],
    ["+10s", 10_000],
    ["1h1h", 7_200_000],
  ];
  for (const [s, ms] of ok) {
    it(`parses ${s}`, () => expect(parseGoDuration(s)).toBeCloseTo(ms, 9));
  }

  const errors: Array<[string, string]> = [
    ["300", 'time: missing unit in duration "300"'],
    ["-1", 'time: missing unit in duration "-1"'],
    ["", 'time: invalid duration ""'],
    ["-", 'time: invalid duration "-"'],
    ["s", 'time: invalid duration "s"'],
    [".s", 'time: invalid duration ".s"'],
    ["5 minutes", 'time: unknown unit " minutes" in duration "5 minutes"'],
    ["3d", 'time: unknown unit "d" in duration "3d"'],
    ["1h30", 'time: missing unit in duration "1h30"'],
    ["9999999999999999999h", 'time: invalid duration "9999999999999999999h"'],
    ["3000000h", 'time: invalid duration "3000000h"'],
  ];
  for (const [s, msg] of errors) {
    it(`rejects ${JSON.stringify(s)} with Go's message`, () => expect(() => parseGoDuration(s)).toThrow(msg));
  }
});

describe("keep_alive", () => {
  it("request numbers are seconds; negative is forever", () => {
    expect(parseKeepAliveRequest(0)).toBe(0);
    expect(parseKeepAliveRequest(30)).toBe(30_000);
    expect(parseKeepAliveRequest(1.5)).toBe(1500);
    expect(parseKeepAliveRequest(-1)).toBe(Infinity);
  });
  it("request strings are Go durations; bare numeric strings are errors", () => {
    expect(parseKeepAliveRequest("5m")).toBe(300_000);
    expect(parseKeepAliveRequest("0")).toBe(0);
    expect(parseKeepAliveRequest("-1m")).toBe(Infinity);
    expect(() => parseKeepAliveRequest("300")).toThrow('time: missing unit in duration "300"');
    expect(() => parseKeepAliveRequest("-1")).toThrow('time: missing unit in duration "-1"');
  });
  it("other JSON types are rejected as Go does", () => {
    expect(() => parseKeepAliveRequest(true)).toThrow("Unsupported type: 'bool'");
    expect(() => parseKeepAliveRequest([])).toThrow("Unsupported type: '[]interface {}'");
  });
  it("env form accepts Go durations and bare integer seconds", () => {
    expect(parseKeepAliveEnv("10m")).toBe(600_000);
    expect(parseKeepAliveEnv("300")).toBe(300_000);
    expect(parseKeepAliveEnv("0")).toBe(0);
    expect(parseKeepAliveEnv("-1")).toBe(Infinity);
    expect(parseKeepAliveEnv("-1m")).toBe(Infinity);
    expect(() => parseKeepAliveEnv("5 minutes")).toThrow(
      'OLLAMA_KEEP_ALIVE: invalid duration "5 minutes" (use a Go duration such as "5m", "1h30m", or a number of seconds)',
    );
  });
});

describe("loadConfig", () => {
  const base = { HOME: "/home/tester" };

  it("has Ollama's defaults", () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({
      host: { scheme: "http", host: "127.0.0.1", port: 11434, path: "", url: "http://127.0.0.1:11434" },
      models: path.join("/home/tester", ".ollama", "models"),
      keepAliveMs: 300_000,
      numParallel: 1,
      maxLoadedModels: 0,
      maxQueue: 512,
      contextLength: 0,
      flashAttention: undefined,
      kvCacheType: "",
      kvCacheTypeK: "",
      kvCacheTypeV: "",
      gpuOverhead: 0,
      loadTimeoutMs: 300_000,
      origins: [],
      debug: 0,
      noPrune: false,
      schedSpread: false,
      noHistory: false,
      noCloud: false,
      auth: false,
      llmLibrary: "",
      remotes: ["ollama.com"],
      editor: "",
      goTemplate: true,
      debugLogRequests: false,
      maxTransferStreams: 4,
      vulkan: undefined,
      experiment: [],
    });
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.remotes)).toBe(true);
  });

  it("falls back to os.homedir() without HOME", () => {
    expect(loadConfig({}).models).toBe(path.join(os.homedir(), ".ollama", "models"));
  });

  it("reads every variable", () => {
    const c = loadConfig({
      OLLAMA_HOST: "0.0.0.0:9999",
      OLLAMA_MODELS: "/srv/models",
      OLLAMA_KEEP_ALIVE: "1h",
      OLLAMA_NUM_PARALLEL: "4",
      OLLAMA_MAX_LOADED_MODELS: "2",
      OLLAMA_MAX_QUEUE: "10",
      OLLAMA_CONTEXT_LENGTH: "8192",
      OLLAMA_FLASH_ATTENTION: "1",
      OLLAMA_KV_CACHE_TYPE: "Q8_0",
      OLLAMA_KV_CACHE_TYPE_V: "q4_0",
      OLLAMA_GPU_OVERHEAD: "1073741824",
      OLLAMA_LOAD_TIMEOUT: "10m",
      OLLAMA_ORIGINS: "http://a.example, https://b.example,,",
      OLLAMA_DEBUG: "2",
      OLLAMA_NOPRUNE: "true",
      OLLAMA_SCHED_SPREAD: "T",
      OLLAMA_NOHISTORY: "1",
      OLLAMA_NO_CLOUD: "TRUE",
      OLLAMA_AUTH: "True",
      OLLAMA_LLM_LIBRARY: "cpu",
      OLLAMA_REMOTES: "ollama.com,example.com",
      OLLAMA_EDITOR: "vim",
      OLLAMA_GO_TEMPLATE: "0",
      OLLAMA_DEBUG_LOG_REQUESTS: "t",
      OLLAMA_MAX_TRANSFER_STREAMS: "8",
      OLLAMA_VULKAN: "false",
      OLLAMA_EXPERIMENT: "a, b",
    });
    expect(c).toMatchObject({
      host: { host: "0.0.0.0", port: 9999, url: "http://127.0.0.1:9999" },
      models: "/srv/models",
      keepAliveMs: 3_600_000,
      numParallel: 4,
      maxLoadedModels: 2,
      maxQueue: 10,
      contextLength: 8192,
      flashAttention: true,
      kvCacheType: "q8_0",
      kvCacheTypeK: "q8_0",
      kvCacheTypeV: "q4_0",
      gpuOverhead: 1073741824,
      loadTimeoutMs: 600_000,
      origins: ["http://a.example", "https://b.example"],
      debug: 2,
      noPrune: true,
      schedSpread: true,
      noHistory: true,
      noCloud: true,
      auth: true,
      llmLibrary: "cpu",
      remotes: ["ollama.com", "example.com"],
      editor: "vim",
      goTemplate: false,
      debugLogRequests: true,
      maxTransferStreams: 8,
      vulkan: false,
      experiment: ["a", "b"],
    });
  });

  it("makes OLLAMA_MODELS absolute", () => {
    expect(loadConfig({ OLLAMA_MODELS: "rel/models" }).models).toBe(path.resolve("rel/models"));
  });

  it("uses Go ParseBool, counting any other non-empty value as true", () => {
    for (const v of ["1", "t", "T", "TRUE", "true", "True", "yes", "on", "enabled"]) {
      expect(loadConfig({ OLLAMA_NOPRUNE: v }).noPrune, v).toBe(true);
    }
    for (const v of ["0", "f", "F", "FALSE", "false", "False", "", "  "]) {
      expect(loadConfig({ OLLAMA_NOPRUNE: v }).noPrune, v).toBe(false);
    }
    expect(loadConfig({ OLLAMA_FLASH_ATTENTION: "0" }).flashAttention).toBe(false);
    expect(loadConfig({ OLLAMA_GO_TEMPLATE: "" }).goTemplate).toBe(true);
  });

  it("trims whitespace and strips surrounding quotes", () => {
    const c = loadConfig({ OLLAMA_KEEP_ALIVE: ' "10m" ', OLLAMA_NUM_PARALLEL: "'3'", OLLAMA_NOPRUNE: '"false"' });
    expect(c.keepAliveMs).toBe(600_000);
    expect(c.numParallel).toBe(3);
    expect(c.noPrune).toBe(false);
  });

  it("parses OLLAMA_DEBUG levels", () => {
    expect(loadConfig({ OLLAMA_DEBUG: "1" }).debug).toBe(1);
    expect(loadConfig({ OLLAMA_DEBUG: "true" }).debug).toBe(1);
    expect(loadConfig({ OLLAMA_DEBUG: "false" }).debug).toBe(0);
    expect(loadConfig({ OLLAMA_DEBUG: "0" }).debug).toBe(0);
    expect(loadConfig({ OLLAMA_DEBUG: "2" }).debug).toBe(2);
  });

  it("parses OLLAMATS_LOG_FORMAT: text (Ollama's) by default, or json", () => {
    expect(loadConfig({}).logFormat).toBe("text");
    expect(loadConfig({ OLLAMATS_LOG_FORMAT: "json" }).logFormat).toBe("json");
    expect(loadConfig({ OLLAMATS_LOG_FORMAT: "JSON" }).logFormat).toBe("json");
    expect(loadConfig({ OLLAMATS_LOG_FORMAT: "text" }).logFormat).toBe("text");
  });

  it("keep-alive and load-timeout edge values", () => {
    expect(loadConfig({ OLLAMA_KEEP_ALIVE: "0" }).keepAliveMs).toBe(0);
    expect(loadConfig({ OLLAMA_KEEP_ALIVE: "-1" }).keepAliveMs).toBe(Infinity);
    expect(loadConfig({ OLLAMA_KEEP_ALIVE: "60" }).keepAliveMs).toBe(60_000);
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: "0" }).loadTimeoutMs).toBe(Infinity);
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: "-5m" }).loadTimeoutMs).toBe(Infinity);
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: "30" }).loadTimeoutMs).toBe(30_000);
  });

  it("treats OLLAMA_NUM_PARALLEL=0 as 1, as the scheduler does", () => {
    expect(loadConfig({ OLLAMA_NUM_PARALLEL: "0" }).numParallel).toBe(1);
  });

  const bad: Array<[Record<string, string>, string]> = [
    [{ OLLAMA_KEEP_ALIVE: "5 minutes" }, 'OLLAMA_KEEP_ALIVE: invalid duration "5 minutes"'],
    [{ OLLAMA_LOAD_TIMEOUT: "soon" }, 'OLLAMA_LOAD_TIMEOUT: invalid duration "soon"'],
    [{ OLLAMA_NUM_PARALLEL: "four" }, 'OLLAMA_NUM_PARALLEL: invalid value "four" (use a non-negative integer)'],
    [{ OLLAMA_NUM_PARALLEL: "-1" }, "OLLAMA_NUM_PARALLEL: invalid value"],
    [{ OLLAMA_MAX_QUEUE: "1.5" }, "OLLAMA_MAX_QUEUE: invalid value"],
    [{ OLLAMA_MAX_LOADED_MODELS: "x" }, "OLLAMA_MAX_LOADED_MODELS: invalid value"],
    [{ OLLAMA_CONTEXT_LENGTH: "8k" }, 'OLLAMA_CONTEXT_LENGTH: invalid value "8k"'],
    [{ OLLAMA_GPU_OVERHEAD: "1GB" }, "OLLAMA_GPU_OVERHEAD: invalid value"],
    [{ OLLAMA_GPU_OVERHEAD: "99999999999999999999" }, "OLLAMA_GPU_OVERHEAD: invalid value"],
    [{ OLLAMA_MAX_TRANSFER_STREAMS: "many" }, "OLLAMA_MAX_TRANSFER_STREAMS: invalid value"],
    [{ OLLAMA_KV_CACHE_TYPE: "q5_1" }, 'OLLAMA_KV_CACHE_TYPE: invalid cache type "q5_1" (use f16, q8_0 or q4_0)'],
    [{ OLLAMA_KV_CACHE_TYPE_K: "int8" }, "OLLAMA_KV_CACHE_TYPE_K: invalid cache type"],
    [{ OLLAMA_DEBUG: "verbose" }, 'OLLAMA_DEBUG: invalid value "verbose"'],
    [{ OLLAMATS_LOG_FORMAT: "logfmt" }, 'OLLAMATS_LOG_FORMAT: invalid value "logfmt" (use text or json)'],
    [{ OLLAMA_HOST: "localhost:http" }, 'OLLAMA_HOST: invalid port "http"'],
  ];
  for (const [env, msg] of bad) {
    it(`rejects ${JSON.stringify(env)}`, () => {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(msg);
    });
  }
});

describe("allowedOrigins", () => {
  it("lists OLLAMA_ORIGINS first, then Ollama's defaults", () => {
    const list = allowedOrigins(loadConfig({ OLLAMA_ORIGINS: "https://x.example" }));
    expect(list[0]).toBe("https://x.example");
    expect(list).toContain("http://localhost:*");
    expect(list).toContain("https://0.0.0.0");
    expect(list.slice(-5)).toEqual(["app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"]);
  });
});
