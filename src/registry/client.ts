// Docker Registry v2 client for Ollama-style registries (server/images.go makeRequest*,
// download.go, upload.go): manifests, blobs, uploads, the Bearer token dance, `insecure` plain
// http, and HTTP(S)_PROXY / NO_PROXY through undici's EnvHttpProxyAgent. The host of a model name
// is the registry host (`localhost:5000/ns/model:tag` → http(s)://localhost:5000).
import type { Dispatcher } from "undici";
import { BodyTooLargeError, discardBody as discardResponseBody, readBounded } from "../http/bounded-body.js";
import { challengeUrl, ensureIdentity, identityPath, parseChallenge, signWith, tokenRequestSigningText, type Challenge } from "./auth.js";
import { type ModelName } from "./name.js";
import { MEDIA_TYPE_MANIFEST } from "./manifest.js";
import { unreachableMessage } from "./unreachable.js";

export class RegistryError extends Error {
  override name = "RegistryError";
  /**
   * Worth another try: by default a 5xx (but 501 Not Implemented and 505, which will not change),
   * 408 or 429 answer; anything else the registry said is final.
   */
  readonly transient: boolean;
  constructor(
    message: string,
    readonly status?: number,
    transient?: boolean,
    /** The wait the registry asked for (Retry-After) before another try. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.transient = transient ?? (status !== undefined && ((status >= 500 && status !== 501 && status !== 505) || status === 408 || status === 429));
  }
}

/** The longest Retry-After waited for; a registry asking for more is told to the user at once. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** Retry-After in ms (delta-seconds or an HTTP-date), or undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d{1,9}$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wait before another try: the back-off, or longer when the registry asked for it. */
export function retryDelay(err: unknown, base: number, attempt: number): number {
  const asked = err instanceof RegistryError ? (err.retryAfterMs ?? 0) : 0;
  return Math.max(backoffDelay(base, attempt), asked);
}

/** Transient failures retried until the bound ran out: what is on disk stays for a later pull. */
export class RetriesExhaustedError extends RegistryError {
  override name = "RetriesExhaustedError";
  constructor(message: string) {
    super(message, undefined, false);
  }
}

/** Ollama's os.ErrNotExist text, which its pull error wraps: `pull model manifest: file does not exist`. */
export const NOT_EXIST = "file does not exist";
export const ERR_UNAUTHORIZED = "unauthorized: access denied";

export interface RegistryOptions {
  insecure?: boolean;
  /** Override the undici dispatcher (tests, benchmarks). */
  dispatcher?: Dispatcher;
  userAgent?: string;
  /** ed25519 identity used to sign token requests to the registry's own realm. */
  identityFile?: string;
  signal?: AbortSignal;
  /** Base of the exponential back-off between retries (default 1000 ms). */
  backoffMs?: number;
  /** Tries for idempotent requests that fail with a network error or a 5xx (default 6). */
  tries?: number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** A request failed and is tried again (shown to the user as it happens). */
  onRetry?: (r: { error: string; attempt: number; tries: number; waitMs: number }) => void;
}

type Body = Dispatcher.DispatchOptions["body"];

export interface SendOptions {
  headers?: Record<string, string>;
  /** A factory, so the body can be sent again after an auth challenge. */
  body?: () => Body;
  /** Send the bearer token (only ever to the registry's own host). Default true. */
  auth?: boolean;
  signal?: AbortSignal;
}

let sharedDispatcher: Dispatcher | undefined;

/** One process-wide agent: keep-alive pools per origin, proxies from the environment. */
export async function defaultDispatcher(): Promise<Dispatcher> {
  if (!sharedDispatcher) {
    const { EnvHttpProxyAgent } = await import("undici");
    // headersTimeout: a registry that accepts the connection but never answers; bodyTimeout: a
    // stalled transfer (Ollama's 30 s "part stalled"), retried by the caller.
    // proxyTunnel false: plain-http registries are reached with absolute-form requests (as Go's
    // transport does; many proxies refuse CONNECT to ports other than 443), https through CONNECT.
    sharedDispatcher = new EnvHttpProxyAgent({ headersTimeout: 60_000, bodyTimeout: 30_000, keepAliveTimeout: 10_000, proxyTunnel: false });
  }
  return sharedDispatcher;
}

/** `http(s)://host` of the registry a name lives on; `http` needs `insecure` (Ollama's rule). */
export function registryBase(name: ModelName, insecure: boolean): URL {
  const scheme = name.scheme ?? "https";
  if (scheme === "http" && !insecure) throw new RegistryError("insecure protocol http");
  return new URL(`${insecure ? "http" : scheme}://${name.host}`);
}

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason ?? new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** Exponential back-off with jitter: base·2^try · (0.5..1.5), at most 30 s. */
export function backoffDelay(base: number, attempt: number): number {
  return Math.min(base * 2 ** attempt, 30_000) * (0.5 + Math.random());
}

export function isAbort(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted) return true;
  const e = err as { name?: string; code?: string } | null;
  return e?.name === "AbortError" || e?.code === "UND_ERR_ABORTED" || e?.code === "ABORT_ERR";
}

/** Network failures that another try may not meet: resets, refusals, timeouts, a dropped body. */
const TRANSIENT_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/**
 * Whether a failed request is worth another try. Only transient failures are: the answers
 * RegistryError marks so and the network errors above (looked for along `cause`). Everything else
 * (another 4xx, a wrong body, a bad redirect, a local error such as ENOSPC, a cancel) is final.
 */
export function isTransient(err: unknown, signal?: AbortSignal): boolean {
  if (isAbort(err, signal)) return false;
  if (err instanceof RegistryError) return err.transient;
  let e = err as { code?: unknown; cause?: unknown } | null | undefined;
  for (let depth = 0; e && depth < 4; depth++, e = e.cause as typeof e) {
    if (typeof e.code === "string" && TRANSIENT_CODES.has(e.code)) return true;
  }
  return false;
}

const noop = () => undefined;

/** Throw away a body that will not be read (http/bounded-body.ts). */
export function discardBody(res: Dispatcher.ResponseData): void {
  discardResponseBody(res.body);
}

/** Read at most `limit` bytes of a response body (error texts, manifests, small blobs). */
export async function readBody(res: Dispatcher.ResponseData, limit = 4 << 20, tooLong = `response body exceeds ${limit} bytes`): Promise<Buffer> {
  try {
    return await readBounded(res.body, limit);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new RegistryError(tooLong);
    throw err;
  }
}

/** Text of a header value from the registry, clipped for an error message. */
const clip = (v: string) => (v.length > 200 ? `${v.slice(0, 200)}…` : v);

/** A URL the registry sent us to (Location, an upload location): http(s) only. */
export function registryUrl(value: string, base: URL): URL {
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    throw new RegistryError(`registry redirected to an invalid URL ${JSON.stringify(clip(value))}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new RegistryError(`registry redirected to an unsupported URL scheme ${JSON.stringify(clip(url.protocol))} (only http and https are followed)`);
  }
  return url;
}

function headerValue(res: Dispatcher.ResponseData, name: string): string | undefined {
  const h = res.headers[name];
  return Array.isArray(h) ? h[0] : h;
}

/** Where an upload continues: Docker-Upload-Location, else Location. */
export function locationOf(res: Dispatcher.ResponseData, base: URL): URL | null {
  const v = headerValue(res, "docker-upload-location") ?? headerValue(res, "location");
  return v ? registryUrl(v, base) : null;
}

/** The target of a redirect, or null when it names none. */
export function redirectOf(res: Dispatcher.ResponseData, base: URL): URL | null {
  const v = headerValue(res, "location");
  return v ? registryUrl(v, base) : null;
}

export const MAX_REDIRECTS = 10;

/** The target of a redirect that must name one. */
function redirectTarget(res: Dispatcher.ResponseData, at: URL): URL {
  const next = redirectOf(res, at);
  if (!next) throw new RegistryError(`unexpected status code ${res.statusCode} (a redirect without a Location)`);
  return next;
}

/** Record a redirect hop from `start`: never the same URL twice, at most MAX_REDIRECTS. */
function visit(next: URL, seen: Set<string>, start: URL): URL {
  if (seen.has(next.href)) throw new RegistryError(`redirect loop: ${next.href} was visited twice`);
  if (seen.size > MAX_REDIRECTS) throw new RegistryError(`maximum redirects exceeded (${MAX_REDIRECTS}) for ${start.href}`);
  seen.add(next.href);
  return next;
}

/**
 * Manifest content types that are certainly not a model manifest: a web page (a login portal,
 * a host that is no registry), a multi-platform index, Docker's schema 1. Others are parsed, so
 * that registries and file servers that label JSON loosely keep working.
 */
function checkManifestType(contentType: string | undefined, host: string): void {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === "text/html" || type === "application/xhtml+xml") {
    throw new RegistryError(`the registry answered with ${type}, not a manifest (is ${host} a model registry?)`);
  }
  checkManifestKind(type);
}

/** An image index or a schema 1 manifest, named by a Content-Type or the manifest's mediaType. */
export function checkManifestKind(type: string): void {
  if (type === "application/vnd.oci.image.index.v1+json" || type === "application/vnd.docker.distribution.manifest.list.v2+json") {
    throw new RegistryError(`${type} is an image index (a list of manifests), not an Ollama model manifest`);
  }
  if (type.startsWith("application/vnd.docker.distribution.manifest.v1+")) {
    throw new RegistryError(`${type} is a Docker schema 1 manifest, not an Ollama model manifest`);
  }
}

/** Options of RegistryClient.get. */
export interface GetOptions extends SendOptions {
  /** Retry transient failures of each request (sendRetry); chunk fetches retry on their own. */
  retry?: boolean;
  /** Return this redirect target unrequested (resolveBlobUrl stops at a CDN). */
  stopAt?: (next: URL, from: URL) => boolean;
}

/** Accept header for manifests (Ollama sends only Docker's schema 2). */
const MANIFEST_ACCEPT = MEDIA_TYPE_MANIFEST;

export class RegistryClient {
  readonly base: URL;
  /** `<namespace>/<model>` */
  readonly repo: string;
  private token: string | undefined;
  /** The token request in flight: requests refused together wait for one token. */
  private tokenFetch: Promise<string> | undefined;
  private dispatcher: Dispatcher | undefined;
  /** Something was received from the registry (see unreachable.ts). */
  private reached = false;
  private readonly userAgent: string;
  readonly backoffMs: number;
  readonly tries: number;

  constructor(
    readonly name: ModelName,
    readonly opts: RegistryOptions = {},
  ) {
    this.base = registryBase(name, opts.insecure === true);
    this.repo = `${name.namespace}/${name.model}`;
    this.dispatcher = opts.dispatcher;
    this.userAgent = opts.userAgent ?? `ollamats (${process.arch} ${process.platform}) Node/${process.version}`;
    this.backoffMs = opts.backoffMs ?? 1000;
    this.tries = opts.tries ?? 6;
  }

  /** `<base>/v2/<ns>/<model>/<...rest>` */
  url(...rest: string[]): URL {
    return new URL(`/v2/${this.repo}/${rest.join("/")}`, this.base);
  }

  async getDispatcher(): Promise<Dispatcher> {
    this.dispatcher ??= await defaultDispatcher();
    return this.dispatcher;
  }

  /**
   * True when a request to `url` may carry this registry's token or signature: the same scheme,
   * host and port (an https registry's token never goes out over plain http).
   */
  sameHost(url: URL): boolean {
    return url.origin === this.base.origin;
  }

  /**
   * Every request of the client goes through here. Each body gets an error listener at once: a
   * body that fails or is destroyed while nobody reads it must not take the process down; readers
   * (for await, dump) still see its error.
   */
  private async request(url: URL, o: { method: string; headers: Record<string, string>; body?: Body; signal?: AbortSignal }): Promise<Dispatcher.ResponseData> {
    const { request } = await import("undici");
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: o.method as Dispatcher.HttpMethod,
        headers: o.headers,
        body: o.body,
        signal: o.signal ?? this.opts.signal,
        dispatcher: await this.getDispatcher(),
      });
    } catch (err) {
      // a registry never reached, or spoken to in the wrong protocol: final, and said plainly
      const final = unreachableMessage(err, url.host, !this.reached);
      if (final !== undefined) throw new RegistryError(final);
      throw err;
    }
    this.reached = true;
    res.body.on("error", noop);
    return res;
  }

  /** One request, without redirects; Authorization only to the registry's own host. */
  async raw(method: string, url: URL, o: SendOptions = {}): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { "user-agent": this.userAgent, ...o.headers };
    if (o.auth !== false && this.token && this.sameHost(url)) headers.authorization = `Bearer ${this.token}`;
    return this.request(url, { method, headers, body: o.body?.(), signal: o.signal });
  }

  /**
   * A request with Ollama's auth handling (makeRequestWithRetry): a 401 with a Bearer challenge
   * fetches a token and tries once more; a second 401 is `unauthorized: access denied`.
   * 404 → RegistryError("file does not exist", 404); other ≥ 400 → `<code>: <body>`.
   * `okStatuses` lets a caller take some answers itself (HEAD 404, PATCH 307). A write (not GET
   * or HEAD) follows 307/308 redirects; GETs follow theirs in follow().
   */
  async send(method: string, url: URL, o: SendOptions = {}, okStatuses: number[] = []): Promise<Dispatcher.ResponseData> {
    if (method === "GET" || method === "HEAD") return this.sendAuthed(method, url, o, okStatuses);
    // A write answered by a redirect: 307 and 308 keep the method and body (an upload sent on to
    // object storage) and are followed; any other 3xx would drop the body, so it is an error,
    // never a success for bytes that were not stored.
    const seen = new Set([url.href]);
    for (let at = url; ; ) {
      const res = await this.sendAuthed(method, at, o, okStatuses);
      if (res.statusCode < 300 || res.statusCode >= 400 || okStatuses.includes(res.statusCode)) return res;
      await res.body.dump({ limit: 64 << 10 }).catch(noop);
      if (res.statusCode !== 307 && res.statusCode !== 308) {
        throw new RegistryError(`the registry answered ${method} ${at.pathname} with a ${res.statusCode} redirect; an upload can only follow a 307 or 308`);
      }
      at = visit(redirectTarget(res, at), seen, url);
    }
  }

  /** send() without following redirects. */
  private async sendAuthed(method: string, url: URL, o: SendOptions, okStatuses: number[]): Promise<Dispatcher.ResponseData> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const sent = this.token;
      const res = await this.raw(method, url, o);
      if (okStatuses.includes(res.statusCode)) return res;
      // a 401 from elsewhere (a storage host the registry redirected to) is no challenge of the
      // registry's: its token would go to the wrong host, or the registry get a stranger's
      if (res.statusCode === 401 && this.sameHost(url)) {
        const header = res.headers["www-authenticate"];
        await res.body.dump().catch(() => undefined);
        const ch = parseChallenge(Array.isArray(header) ? header[0] : header);
        if (!ch || attempt > 0) break;
        if (this.token === sent) {
          this.tokenFetch ??= this.fetchToken(ch, o.signal).finally(() => (this.tokenFetch = undefined));
          this.token = await this.tokenFetch;
        }
        continue;
      }
      if (res.statusCode === 404) {
        await res.body.dump().catch(() => undefined);
        throw new RegistryError(NOT_EXIST, 404);
      }
      if (res.statusCode >= 400) {
        const text = (await readBody(res, 64 << 10).catch(() => Buffer.alloc(0))).toString("utf8").trim();
        const message = `${res.statusCode}: ${text}`;
        const after = retryAfterMs(res.headers["retry-after"]);
        if (after !== undefined && after > MAX_RETRY_AFTER_MS && new RegistryError(message, res.statusCode).transient) {
          // waiting that long in a pull or push is worse than saying so (and keeping what arrived)
          throw new RetriesExhaustedError(`${message} (the registry at ${url.host} asks to wait ${Math.ceil(after / 1000)} s before trying again; try again later)`);
        }
        throw new RegistryError(message, res.statusCode, undefined, after);
      }
      return res;
    }
    throw new RegistryError(ERR_UNAUTHORIZED, 401);
  }

  /**
   * send() for idempotent requests, retried with back-off on transient failures (isTransient:
   * network errors, 5xx, 408, 429), `tries` in all. Ollama does not retry these; a flaky proxy is
   * common enough that we do.
   */
  async sendRetry(method: string, url: URL, o: SendOptions = {}, okStatuses: number[] = []): Promise<Dispatcher.ResponseData> {
    return this.withRetry(`${method} ${url.pathname}`, o.signal ?? this.opts.signal, () => this.send(method, url, o, okStatuses));
  }

  /** `attempt` until it succeeds, its failure is final, or `tries` ran out. */
  private async withRetry<T>(what: string, signal: AbortSignal | undefined, attempt: () => Promise<T>): Promise<T> {
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (err) {
        if (!isTransient(err, signal) || n + 1 >= this.tries) throw err;
        const wait = retryDelay(err, this.backoffMs, n);
        this.retryNotice(what, err, n + 2, this.tries, wait);
        await sleep(wait, signal);
      }
    }
  }

  /** Tell the log and the user's progress that `what` failed and try `attempt` follows in `waitMs`. */
  retryNotice(what: string, err: unknown, attempt: number, tries: number, waitMs: number): void {
    const error = err instanceof Error ? err.message : String(err);
    this.opts.log?.(`${what} failed: ${error}; retrying in ${Math.round(waitMs)} ms`);
    this.opts.onRetry?.({ error, attempt, tries, waitMs });
  }

  /**
   * Token for a challenge (getAuthorizationToken). The realm on the registry's own host gets a
   * request signed with the ed25519 identity; a realm elsewhere an anonymous one.
   */
  private async fetchToken(ch: Challenge, signal?: AbortSignal): Promise<string> {
    let url: URL;
    try {
      url = challengeUrl(ch);
    } catch {
      throw new RegistryError(`invalid authentication realm "${ch.realm}"`);
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new RegistryError(`invalid authentication realm "${ch.realm}"`);
    const signature = this.sameHost(url) ? signWith(await ensureIdentity(this.opts.identityFile ?? identityPath()), tokenRequestSigningText(url.toString())) : undefined;
    // redirects followed as Go's client does for Ollama; the signature only to the registry itself
    const seen = new Set([url.href]);
    let res: Dispatcher.ResponseData;
    for (let at = url; ; ) {
      const headers: Record<string, string> = { "user-agent": this.userAgent };
      if (signature && this.sameHost(at)) headers.authorization = signature;
      res = await this.request(at, { method: "GET", headers, signal });
      if (res.statusCode < 300 || res.statusCode >= 400) break;
      await res.body.dump({ limit: 64 << 10 }).catch(noop);
      at = visit(redirectTarget(res, at), seen, url);
    }
    const body = await readBody(res, 1 << 20);
    if (res.statusCode >= 400) {
      const text = body.toString("utf8").trim();
      throw new RegistryError(text ? `${res.statusCode}: ${text}` : String(res.statusCode), res.statusCode);
    }
    let parsed: { token?: unknown; access_token?: unknown };
    try {
      parsed = JSON.parse(body.toString("utf8")) as typeof parsed;
    } catch (e) {
      throw new RegistryError(`invalid token response: ${(e as Error).message}`);
    }
    const token = typeof parsed.token === "string" ? parsed.token : typeof parsed.access_token === "string" ? parsed.access_token : "";
    if (!token) throw new RegistryError("token response carries no token");
    return token;
  }

  // ---- pull ----------------------------------------------------------------------------------

  /**
   * GET following redirects: at most MAX_REDIRECTS, never the same URL twice, http(s) only (every
   * one of these a final error). The token goes only to the registry's own host (raw). With
   * `stopAt`, the first redirect target it accepts is returned unrequested (`res` null).
   */
  async follow(start: URL, o: GetOptions = {}): Promise<{ res: Dispatcher.ResponseData | null; url: URL }> {
    const seen = new Set([start.href]);
    for (let url = start; ; ) {
      const res = o.retry ? await this.sendRetry("GET", url, o) : await this.send("GET", url, o);
      if (res.statusCode < 300 || res.statusCode >= 400) return { res, url };
      await res.body.dump({ limit: 64 << 10 }).catch(noop);
      const next = redirectTarget(res, url);
      if (o.stopAt?.(next, url)) return { res: null, url: next };
      url = visit(next, seen, start);
    }
  }

  /** follow() to the end: the final (non-redirect) answer. */
  async get(start: URL, o: Omit<GetOptions, "stopAt"> = {}): Promise<Dispatcher.ResponseData> {
    const { res } = await this.follow(start, o);
    if (!res) throw new Error("internal: follow stopped without stopAt");
    return res;
  }

  /** GET the manifest for `tag`: the raw bytes (kept verbatim on disk). */
  async getManifest(tag: string, signal?: AbortSignal): Promise<Buffer> {
    const url = this.url("manifests", tag);
    // the body is read inside the retry: a connection dropped mid-manifest is tried again too
    return this.withRetry(`GET ${url.pathname}`, signal ?? this.opts.signal, async () => {
      const res = await this.get(url, { headers: { accept: MANIFEST_ACCEPT }, signal });
      try {
        if (res.statusCode !== 200) throw new RegistryError(`unexpected status code ${res.statusCode}`);
        checkManifestType(headerValue(res, "content-type"), this.base.host);
      } catch (e) {
        discardBody(res);
        throw e;
      }
      return readBody(res, 4 << 20, "manifest exceeds 4194304 bytes");
    });
  }

  /**
   * Where a blob's bytes are served from: the blob URL, or where it redirects to. Redirects are
   * followed while the host stays the same; the first redirect to another host (a CDN) gives
   * the direct URL (download.go). A `Range: bytes=0-0` keeps the probe to one byte on registries
   * that serve the blob themselves.
   */
  async resolveBlobUrl(digest: string, signal?: AbortSignal): Promise<URL> {
    const { res, url } = await this.follow(this.url("blobs", digest), {
      headers: { range: "bytes=0-0" },
      signal,
      retry: true,
      stopAt: (next, from) => next.hostname !== from.hostname,
    });
    if (!res) return url;
    await res.body.dump({ limit: 64 << 10 }).catch(noop);
    if (res.statusCode === 200 || res.statusCode === 206) return url;
    throw new RegistryError(`unexpected status code ${res.statusCode} for ${digest}`);
  }

  /** GET a whole blob, following redirects (the token goes only to the registry's own host). */
  async getBlob(digest: string, signal?: AbortSignal): Promise<Dispatcher.ResponseData> {
    const res = await this.get(this.url("blobs", digest), { signal, retry: true });
    if (res.statusCode !== 200) {
      discardBody(res);
      throw new RegistryError(`unexpected status code ${res.statusCode} for ${digest}`);
    }
    return res;
  }

  // ---- push ----------------------------------------------------------------------------------

  /** HEAD the blob in this repository: true when the registry has it. */
  async hasBlob(digest: string, signal?: AbortSignal): Promise<boolean> {
    const res = await this.sendRetry("HEAD", this.url("blobs", digest), { signal }, [404]);
    await res.body.dump().catch(() => undefined);
    return res.statusCode !== 404;
  }

  /**
   * POST an upload session; with `mountFrom` (`ns/model`) ask for a cross-repository mount.
   * Returns mounted:true on 201, else the upload location.
   */
  async startUpload(digest: string, mountFrom?: string, signal?: AbortSignal): Promise<{ mounted: true } | { mounted: false; location: URL }> {
    const url = this.url("blobs", "uploads/");
    if (mountFrom) {
      url.searchParams.set("mount", digest);
      url.searchParams.set("from", mountFrom);
    }
    const res = await this.send("POST", url, { headers: { "content-length": "0" }, signal });
    await res.body.dump().catch(() => undefined);
    if (res.statusCode === 201 && mountFrom) return { mounted: true };
    const location = locationOf(res, url);
    if (!location) throw new RegistryError(`upload for ${digest} started without a location (status ${res.statusCode})`);
    return { mounted: false, location };
  }

  async putManifest(tag: string, raw: Buffer, signal?: AbortSignal): Promise<void> {
    const res = await this.send("PUT", this.url("manifests", tag), {
      headers: { "content-type": MEDIA_TYPE_MANIFEST, "content-length": String(raw.length) },
      body: () => raw,
      signal,
    });
    await res.body.dump().catch(() => undefined);
  }
}
