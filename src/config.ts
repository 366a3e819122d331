// Every OLLAMA_* environment variable, read once into a typed, frozen Config.
// Behaviour follows Ollama's envconfig/config.go; where Ollama logs a warning and falls back to a
// default (bad integers, bad ports, unparsable durations) we throw ConfigError instead, so a typo
// is reported at startup rather than silently ignored.
import { isIP } from "node:net";
import os from "node:os";
import path from "node:path";
import { ApiKeySyntaxError, keyProblem, parseApiKeyList, type ApiKey } from "./api-keys.js";

export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface HostConfig {
  scheme: "http" | "https";
  /** Bind host as given: "127.0.0.1", "" (all interfaces), "0.0.0.0", "::1", a hostname. */
  host: string;
  port: number;
  /** "" or "/prefix" (no trailing slash). */
  path: string;
  /** Base URL a client connects to, no trailing slash; 0.0.0.0/"" → 127.0.0.1 and :: → [::1]. */
  url: string;
}

export interface Config {
  host: HostConfig;
  models: string;
  keepAliveMs: number;
  numParallel: number;
  maxLoadedModels: number;
  maxQueue: number;
  contextLength: number;
  flashAttention: boolean | undefined;
  kvCacheType: string;
  kvCacheTypeK: string;
  kvCacheTypeV: string;
  gpuOverhead: number;
  loadTimeoutMs: number;
  /** Only the OLLAMA_ORIGINS entries; see allowedOrigins() for the full CORS list. */
  origins: string[];
  debug: number;
  /** OLLAMATS_LOG_FORMAT: "text" (Ollama's slog lines, the default) or "json" (one object a line). */
  logFormat: "text" | "json";
  noPrune: boolean;
  schedSpread: boolean;
  noHistory: boolean;
  noCloud: boolean;
  auth: boolean;
  llmLibrary: string;
  remotes: string[];
  editor: string;
  goTemplate: boolean;
  debugLogRequests: boolean;
  /** Keep a warm spare runner process, so a load pays only for the model (OLLAMATS_SPARE_RUNNER, default on). */
  spareRunner: boolean;
  /** A draft model's token below this probability ends its proposal for the step
   *  (OLLAMATS_DRAFT_P_MIN, 0..1, default 0.6: node-llama-cpp's; llama-server's --draft-p-min). */
  draftMinConfidence: number;
  maxTransferStreams: number;
  vulkan: boolean | undefined;
  experiment: string[];
  /** OLLAMA_API_KEYS (digests only). With these or a keys file, every request but `GET /` needs a key. */
  apiKeys: readonly ApiKey[];
  /** OLLAMA_API_KEYS_FILE, resolved; "" when unset. Read by the daemon at start (daemon/keys-file.ts). */
  apiKeysFile: string;
  /** OLLAMA_NO_MANAGEMENT: serve inference only; pull, push, create, copy, delete and blobs get 403. */
  noManagement: boolean;
  /** OLLAMA_API_KEY: the key the CLI sends as `Authorization: Bearer`; "" when unset. */
  apiKey: string;
  /** Remote models' upstreams: keys, timeout, routing, health checks (OLLAMATS_REMOTE_*). */
  remote: RemoteSettings;
}

export type RemoteRouting = "affinity" | "least" | "round-robin";

export interface RemoteSettings {
  /** OLLAMATS_REMOTE_KEYS: `host:port=key,…`, each sent to that upstream as a bearer token. */
  keys: Readonly<Record<string, string>>;
  /** OLLAMATS_REMOTE_TIMEOUT: the most an upstream may stay silent (to headers, between chunks). */
  timeoutMs: number;
  /** OLLAMATS_REMOTE_ROUTING: how a request picks among replicas. */
  routing: RemoteRouting;
  /** OLLAMATS_REMOTE_HEALTH_INTERVAL: health checks of a loaded remote model's upstreams. */
  healthIntervalMs: number;
}

const DEFAULT_PORT = 11434;
const KV_CACHE_TYPES = ["", "f16", "q8_0", "q4_0"];
/** Largest Go time.Duration (max int64 ns), in ms: "forever" values beyond it become Infinity. */
const MAX_DURATION_MS = 9223372036854.775;

// ---------------------------------------------------------------------------------------------
// Go time.ParseDuration

const NS_PER_UNIT: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n, // micro sign
  "\u03bcs": 1_000n, // Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const TWO_63 = 1n << 63n;

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
const goQuote = (s: string): string => JSON.stringify(s);

/** Go's time.ParseDuration in nanoseconds, with its exact error messages. */
function parseGoDurationNs(input: string): bigint {
  const invalid = () => new Error(`time: invalid duration ${goQuote(input)}`);
  let s = input;
  let neg = false;
  if (s[0] === "-" || s[0] === "+") {
    neg = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0n;
  if (s === "") throw invalid();
  let total = 0n;
  while (s !== "") {
    if (!(s[0] === "." || isDigit(s[0]))) throw invalid();
    let i = 0;
    while (isDigit(s[i])) i++;
    const pre = i > 0;
    let v = pre ? BigInt(s.slice(0, i)) : 0n;
    if (v > TWO_63) throw invalid();
    s = s.slice(i);
    // Fraction: Go keeps accumulating digits until the value would overflow, then ignores the rest.
    let frac = 0n;
    let scale = 1;
    let post = false;
    if (s[0] === ".") {
      s = s.slice(1);
      let j = 0;
      let overflow = false;
      while (isDigit(s[j])) {
        const next = frac * 10n + BigInt(s.charCodeAt(j) - 48);
        if (!overflow && next <= TWO_63 && frac <= (TWO_63 - 1n) / 10n) {
          frac = next;
          scale *= 10;
        } else overflow = true;
        j++;
      }
      post = j > 0;
      s = s.slice(j);
    }
    if (!pre && !post) throw invalid();
    let k = 0;
    while (k < s.length && s[k] !== "." && !isDigit(s[k])) k++;
    if (k === 0) throw new Error(`time: missing unit in duration ${goQuote(input)}`);
    const unitName = s.slice(0, k);
    s = s.slice(k);
    const unit = Object.hasOwn(NS_PER_UNIT, unitName) ? NS_PER_UNIT[unitName] : undefined;
    if (unit === undefined) {
      throw new Error(`time: unknown unit ${goQuote(unitName)} in duration ${goQuote(input)}`);
    }
    if (v > TWO_63 / unit) throw invalid();
    v *= unit;
    if (frac > 0n) {
      v += BigInt(Math.trunc(Number(frac) * (Number(unit) / scale)));
      if (v > TWO_63) throw invalid();
    }
    total += v;
    if (total > TWO_63) throw invalid();
  }
  if (neg) return -total;
  if (total > TWO_63 - 1n) throw invalid();
  return total;
}

/** Go time.ParseDuration → milliseconds (may be fractional, e.g. "1500us" → 1.5). */
export function parseGoDuration(s: string): number {
  return Number(parseGoDurationNs(s)) / 1e6;
}

const forever = (ms: number): number => (ms < 0 || ms > MAX_DURATION_MS ? Infinity : ms);

function goTypeName(v: unknown): string {
  if (v === null) return "<nil>";
  if (typeof v === "boolean") return "bool";
  if (Array.isArray(v)) return "[]interface {}";
  return "map[string]interface {}";
}

/**
 * A request's keep_alive (api.Duration.UnmarshalJSON): number = seconds, string = Go duration
 * (a bare "300" is an error with Go's message); negative → Infinity (forever). Returns ms.
 * Callers treat an absent or null keep_alive as "not given" before calling this.
 */
export function parseKeepAliveRequest(v: unknown): number {
  if (typeof v === "number") {
    if (Number.isNaN(v)) throw new Error("invalid keep_alive NaN");
    return forever(v < 0 ? -1 : v * 1000);
  }
  if (typeof v === "string") return forever(parseGoDuration(v));
  throw new Error(`Unsupported type: '${goTypeName(v)}'`);
}

const DURATION_FORM = 'use a Go duration such as "5m", "1h30m", or a number of seconds';

function envDurationMs(name: string, s: string): number {
  try {
    return parseGoDuration(s);
  } catch {
    // Ollama's fallback: a bare integer counts as seconds.
    if (/^[+-]?\d+$/.test(s)) return Number(s) * 1000;
    throw new ConfigError(`${name}: invalid duration ${goQuote(s)} (${DURATION_FORM})`);
  }
}

/** OLLAMA_KEEP_ALIVE form: Go duration or bare integer seconds; negative → Infinity. */
export function parseKeepAliveEnv(s: string): number {
  return forever(envDurationMs("OLLAMA_KEEP_ALIVE", cleanValue(s)));
}

// ---------------------------------------------------------------------------------------------
// OLLAMA_HOST

/** Go's net.SplitHostPort; null where Go returns an error. */
function splitHostPort(hp: string): { host: string; port: string } | null {
  const i = hp.lastIndexOf(":");
  if (i < 0) return null;
  let host: string;
  let j = 0;
  let k = 0;
  if (hp[0] === "[") {
    const end = hp.indexOf("]");
    if (end < 0 || end + 1 !== i) return null;
    host = hp.slice(1, end);
    j = 1;
    k = end + 1;
  } else {
    host = hp.slice(0, i);
    if (host.includes(":")) return null;
  }
  if (hp.slice(j).includes("[") || hp.slice(k).includes("]")) return null;
  return { host, port: hp.slice(i + 1) };
}

/** Canonical text of an IP address (as Go's net.IP.String()), or null if s is not an IP. */
function canonicalIp(s: string): string | null {
  const kind = isIP(s);
  if (kind === 4) return s;
  if (kind === 6) return new URL(`http://[${s}]/`).hostname.slice(1, -1);
  return null;
}

function connectableHost(host: string): string {
  if (host === "" || host === "0.0.0.0") return "127.0.0.1";
  const ip = canonicalIp(host);
  if (ip === "::") return "[::1]";
  return ip !== null && ip.includes(":") ? `[${ip}]` : host;
}

/** OLLAMA_HOST, `[scheme://]host[:port][/path]`, per envconfig.Host(). */
export function parseHost(value: string | undefined): HostConfig {
  const raw = cleanValue(value ?? "");
  let schemeText = "http";
  let hostport = raw;
  let defaultPort = DEFAULT_PORT;
  const sep = raw.indexOf("://");
  if (sep >= 0) {
    schemeText = raw.slice(0, sep).toLowerCase();
    hostport = raw.slice(sep + 3);
    if (schemeText === "http") defaultPort = 80;
    else if (schemeText === "https") defaultPort = 443;
    else {
      throw new ConfigError(`OLLAMA_HOST: unsupported scheme "${schemeText}" in ${goQuote(raw)} (use http:// or https://)`);
    }
  } else if (raw === "ollama.com") {
    schemeText = "https";
    hostport = "ollama.com:443";
  }
  const scheme = schemeText as "http" | "https";

  const slash = hostport.indexOf("/");
  const rest = slash >= 0 ? hostport.slice(slash + 1) : "";
  if (slash >= 0) hostport = hostport.slice(0, slash);
  const urlPath = rest.replace(/\/+$/, "") === "" ? "" : `/${rest.replace(/\/+$/, "")}`;

  let host: string;
  let portText: string;
  const split = splitHostPort(hostport);
  if (split) {
    ({ host, port: portText } = split);
  } else {
    portText = String(defaultPort);
    host = canonicalIp(hostport.replace(/^\[+|\]+$/g, "")) ?? (hostport === "" ? "127.0.0.1" : hostport);
  }
  if (!/^[+-]?\d+$/.test(portText) || Number(portText) < 0 || Number(portText) > 65535) {
    throw new ConfigError(`OLLAMA_HOST: invalid port ${goQuote(portText)} in ${goQuote(raw)} (use a number from 0 to 65535)`);
  }
  if (/[\s/\\@?#[\]]/.test(host) || (host.includes(":") && isIP(host) !== 6)) {
    throw new ConfigError(`OLLAMA_HOST: invalid host ${goQuote(host)} in ${goQuote(raw)} (use [scheme://]host[:port][/path])`);
  }
  const port = Number(portText);
  return Object.freeze({
    scheme,
    host,
    port,
    path: urlPath,
    url: `${scheme}://${connectableHost(host)}:${port}${urlPath}`,
  });
}

// ---------------------------------------------------------------------------------------------
// Scalar parsers (each takes the variable name so errors can name it)

/** envconfig.Var: trim whitespace, strip surrounding quotes (and the spaces they enclosed). */
function cleanValue(s: string): string {
  return s.trim().replace(/^["']+|["']+$/g, "").trim();
}

const GO_TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const GO_FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** Go strconv.ParseBool, or undefined when s is not one of its accepted spellings. */
function goParseBool(s: string): boolean | undefined {
  if (GO_TRUE.has(s)) return true;
  if (GO_FALSE.has(s)) return false;
  return undefined;
}

/** envconfig.BoolWithDefault: unset → default; any non-empty value ParseBool rejects → true. */
function envBool<D extends boolean | undefined>(s: string, dflt: D): boolean | D {
  if (s === "") return dflt;
  return goParseBool(s) ?? true;
}

function envUint(name: string, s: string, dflt: number): number {
  if (s === "") return dflt;
  const n = /^\d+$/.test(s) ? Number(s) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw new ConfigError(`${name}: invalid value ${goQuote(s)} (use a non-negative integer)`);
  }
  return n;
}

function envProbability(name: string, s: string, dflt: number): number {
  if (s === "") return dflt;
  const n = /^\d*\.?\d+$/.test(s) ? Number(s) : NaN;
  if (!(n >= 0 && n <= 1)) throw new ConfigError(`${name}: invalid value ${goQuote(s)} (use a number from 0 to 1)`);
  return n;
}

/** OLLAMA_DEBUG: bool (true → 1) or an integer level (2 = trace); anything else is an error. */
function envDebug(s: string): number {
  if (s === "") return 0;
  const b = goParseBool(s);
  if (b !== undefined) return b ? 1 : 0;
  if (/^[+-]?\d+$/.test(s)) return Number(s);
  throw new ConfigError(`OLLAMA_DEBUG: invalid value ${goQuote(s)} (use 0/false, 1/true, or a level number such as 2)`);
}

function envLogFormat(s: string): "text" | "json" {
  const v = s.toLowerCase();
  if (v === "" || v === "text") return "text";
  if (v === "json") return "json";
  throw new ConfigError(`OLLAMATS_LOG_FORMAT: invalid value ${goQuote(s)} (use text or json)`);
}

function envKvCacheType(name: string, s: string): string {
  const v = s.toLowerCase(); // Ollama lower-cases it before use
  if (!KV_CACHE_TYPES.includes(v)) {
    throw new ConfigError(`${name}: invalid cache type ${goQuote(s)} (use f16, q8_0 or q4_0)`);
  }
  return v;
}

function envList(s: string): string[] {
  return s
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "");
}

function envApiKeys(s: string): readonly ApiKey[] {
  if (s === "") return [];
  try {
    return parseApiKeyList(s);
  } catch (err) {
    if (err instanceof ApiKeySyntaxError) throw new ConfigError(err.message);
    throw err;
  }
}

/** OLLAMA_API_KEY, the client's key: it must fit in a header unchanged. The key is not echoed. */
function envClientApiKey(s: string): string {
  const problem = s === "" ? undefined : keyProblem(s);
  if (problem !== undefined) throw new ConfigError(`OLLAMA_API_KEY: ${problem}`);
  return s;
}

const ROUTINGS: readonly RemoteRouting[] = ["affinity", "least", "round-robin"];

function remoteKeys(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of envList(s)) {
    const eq = item.indexOf("=");
    const host = eq > 0 ? item.slice(0, eq).trim().toLowerCase() : "";
    const key = eq > 0 ? item.slice(eq + 1).trim() : "";
    if (!/^[^\s:/=]+:\d+$/.test(host) || key === "" || /[\s,]/.test(key)) {
      throw new ConfigError("OLLAMATS_REMOTE_KEYS: each entry must be host:port=key (the key is not echoed)");
    }
    out[host] = key;
  }
  return Object.freeze(out);
}

function remoteSettings(v: (name: string) => string): RemoteSettings {
  const routing = v("OLLAMATS_REMOTE_ROUTING") || "affinity";
  if (!(ROUTINGS as readonly string[]).includes(routing)) {
    throw new ConfigError(`OLLAMATS_REMOTE_ROUTING: ${goQuote(routing)} is not one of ${ROUTINGS.join(", ")}`);
  }
  const ms = (name: string, dflt: number) => {
    const raw = v(name);
    const n = raw === "" ? dflt : envDurationMs(name, raw);
    if (!(n > 0)) throw new ConfigError(`${name}: must be a positive duration`);
    return n;
  };
  return Object.freeze({
    keys: remoteKeys(v("OLLAMATS_REMOTE_KEYS")),
    timeoutMs: ms("OLLAMATS_REMOTE_TIMEOUT", 5 * 60_000),
    routing: routing as RemoteRouting,
    healthIntervalMs: ms("OLLAMATS_REMOTE_HEALTH_INTERVAL", 10_000),
  });
}

// ---------------------------------------------------------------------------------------------

/** Parse every OLLAMA_* variable once. Throws ConfigError naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const v = (name: string): string => cleanValue(env[name] ?? "");
  const homeDir = env.HOME || env.USERPROFILE || os.homedir();
  const kvCacheType = envKvCacheType("OLLAMA_KV_CACHE_TYPE", v("OLLAMA_KV_CACHE_TYPE"));
  const kvOverride = (name: string) => (v(name) === "" ? kvCacheType : envKvCacheType(name, v(name)));
  const keepAlive = v("OLLAMA_KEEP_ALIVE");
  const loadTimeout = v("OLLAMA_LOAD_TIMEOUT");
  const loadTimeoutMs = loadTimeout === "" ? 5 * 60_000 : envDurationMs("OLLAMA_LOAD_TIMEOUT", loadTimeout);
  const remotes = envList(v("OLLAMA_REMOTES"));

  const config: Config = {
    host: parseHost(env.OLLAMA_HOST),
    models: v("OLLAMA_MODELS") !== "" ? path.resolve(v("OLLAMA_MODELS")) : path.join(homeDir, ".ollama", "models"),
    keepAliveMs: keepAlive === "" ? 5 * 60_000 : parseKeepAliveEnv(keepAlive),
    // The scheduler treats 0 as 1 (max(NumParallel, 1)); fold that in here.
    numParallel: Math.max(envUint("OLLAMA_NUM_PARALLEL", v("OLLAMA_NUM_PARALLEL"), 1), 1),
    maxLoadedModels: envUint("OLLAMA_MAX_LOADED_MODELS", v("OLLAMA_MAX_LOADED_MODELS"), 0),
    maxQueue: envUint("OLLAMA_MAX_QUEUE", v("OLLAMA_MAX_QUEUE"), 512),
    contextLength: envUint("OLLAMA_CONTEXT_LENGTH", v("OLLAMA_CONTEXT_LENGTH"), 0),
    flashAttention: envBool(v("OLLAMA_FLASH_ATTENTION"), undefined),
    kvCacheType,
    kvCacheTypeK: kvOverride("OLLAMA_KV_CACHE_TYPE_K"),
    kvCacheTypeV: kvOverride("OLLAMA_KV_CACHE_TYPE_V"),
    gpuOverhead: envUint("OLLAMA_GPU_OVERHEAD", v("OLLAMA_GPU_OVERHEAD"), 0),
    loadTimeoutMs: loadTimeoutMs <= 0 || loadTimeoutMs > MAX_DURATION_MS ? Infinity : loadTimeoutMs,
    origins: envList(v("OLLAMA_ORIGINS")),
    debug: envDebug(v("OLLAMA_DEBUG")),
    logFormat: envLogFormat(v("OLLAMATS_LOG_FORMAT")),
    noPrune: envBool(v("OLLAMA_NOPRUNE"), false),
    schedSpread: envBool(v("OLLAMA_SCHED_SPREAD"), false),
    noHistory: envBool(v("OLLAMA_NOHISTORY"), false),
    noCloud: envBool(v("OLLAMA_NO_CLOUD"), false),
    auth: envBool(v("OLLAMA_AUTH"), false),
    llmLibrary: v("OLLAMA_LLM_LIBRARY"),
    remotes: remotes.length > 0 ? remotes : ["ollama.com"],
    editor: v("OLLAMA_EDITOR"),
    goTemplate: envBool(v("OLLAMA_GO_TEMPLATE"), true),
    debugLogRequests: envBool(v("OLLAMA_DEBUG_LOG_REQUESTS"), false),
    spareRunner: envBool(v("OLLAMATS_SPARE_RUNNER"), true),
    draftMinConfidence: envProbability("OLLAMATS_DRAFT_P_MIN", v("OLLAMATS_DRAFT_P_MIN"), 0.6),
    maxTransferStreams: envUint("OLLAMA_MAX_TRANSFER_STREAMS", v("OLLAMA_MAX_TRANSFER_STREAMS"), 4),
    vulkan: envBool(v("OLLAMA_VULKAN"), undefined),
    experiment: envList(v("OLLAMA_EXPERIMENT")),
    apiKeys: Object.freeze(envApiKeys(v("OLLAMA_API_KEYS"))),
    apiKeysFile: v("OLLAMA_API_KEYS_FILE") !== "" ? path.resolve(v("OLLAMA_API_KEYS_FILE")) : "",
    noManagement: envBool(v("OLLAMA_NO_MANAGEMENT"), false),
    apiKey: envClientApiKey(v("OLLAMA_API_KEY")),
    remote: remoteSettings(v),
  };
  Object.freeze(config.origins);
  Object.freeze(config.remotes);
  Object.freeze(config.experiment);
  return Object.freeze(config);
}

/** The full CORS allow-list, as envconfig.AllowedOrigins(): OLLAMA_ORIGINS first, then defaults. */
export function allowedOrigins(config: Pick<Config, "origins">): string[] {
  const out = [...config.origins];
  for (const h of ["localhost", "127.0.0.1", "0.0.0.0"]) {
    out.push(`http://${h}`, `https://${h}`, `http://${h}:*`, `https://${h}:*`);
  }
  out.push("app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*");
  return out;
}
