// Docker Registry v2 client for Ollama-style registries (server/images.go makeRequest*,
// download.go, upload.go): manifests, blobs, uploads, the Bearer token dance, `insecure` plain
// http, and HTTP(S)_PROXY / NO_PROXY through undici's EnvHttpProxyAgent. The host of a model name
// is the registry host (`localhost:5000/ns/model:tag` → http(s)://localhost:5000).
import type { Dispatcher } from "undici";
import { challengeUrl, ensureIdentity, identityPath, parseChallenge, signWith, tokenRequestSigningText, type Challenge } from "./auth.js";
import { type ModelName } from "./name.js";
import { MEDIA_TYPE_MANIFEST } from "./manifest.js";

export class RegistryError extends Error {
  override name = "RegistryError";
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
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

/** Read at most `limit` bytes of a response body (error texts, manifests). */
export async function readBody(res: Dispatcher.ResponseData, limit = 4 << 20): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of res.body as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > limit) {
      res.body.destroy();
      throw new RegistryError(`response body exceeds ${limit} bytes`, 0); // status 0: not worth a retry
    }
    chunks.push(c);
  }
  return Buffer.concat(chunks);
}

export function locationOf(res: Dispatcher.ResponseData, base: URL): URL | null {
  const h = res.headers["docker-upload-location"] ?? res.headers["location"];
  const v = Array.isArray(h) ? h[0] : h;
  return v ? new URL(v, base) : null;
}

/** Accept header for manifests (Ollama sends only Docker's schema 2). */
const MANIFEST_ACCEPT = MEDIA_TYPE_MANIFEST;

export class RegistryClient {
  readonly base: URL;
  /** `<namespace>/<model>` */
  readonly repo: string;
  private token: string | undefined;
  private dispatcher: Dispatcher | undefined;
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

  /** True when a request to `url` may carry this registry's token (same host and port). */
  sameHost(url: URL): boolean {
    return url.host === this.base.host;
  }

  /** One request, without redirects; Authorization only to the registry's own host. */
  async raw(method: string, url: URL, o: SendOptions = {}): Promise<Dispatcher.ResponseData> {
    const { request } = await import("undici");
    const headers: Record<string, string> = { "user-agent": this.userAgent, ...o.headers };
    if (o.auth !== false && this.token && this.sameHost(url)) headers.authorization = `Bearer ${this.token}`;
    return request(url, {
      method: method as Dispatcher.HttpMethod,
      headers,
      body: o.body?.(),
      signal: o.signal ?? this.opts.signal,
      dispatcher: await this.getDispatcher(),
    });
  }

  /**
   * A request with Ollama's auth handling (makeRequestWithRetry): a 401 with a Bearer challenge
   * fetches a token and tries once more; a second 401 is `unauthorized: access denied`.
   * 404 → RegistryError("file does not exist", 404); other ≥ 400 → `<code>: <body>`.
   * `okStatuses` lets a caller take some ≥ 400 answers itself (HEAD 404).
   */
  async send(method: string, url: URL, o: SendOptions = {}, okStatuses: number[] = []): Promise<Dispatcher.ResponseData> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const res = await this.raw(method, url, o);
      if (okStatuses.includes(res.statusCode)) return res;
      if (res.statusCode === 401) {
        const header = res.headers["www-authenticate"];
        await res.body.dump().catch(() => undefined);
        const ch = parseChallenge(Array.isArray(header) ? header[0] : header);
        if (!ch || attempt > 0) break;
        this.token = await this.fetchToken(ch, o.signal);
        continue;
      }
      if (res.statusCode === 404) {
        await res.body.dump().catch(() => undefined);
        throw new RegistryError(NOT_EXIST, 404);
      }
      if (res.statusCode >= 400) {
        const text = (await readBody(res, 64 << 10).catch(() => Buffer.alloc(0))).toString("utf8").trim();
        throw new RegistryError(`${res.statusCode}: ${text}`, res.statusCode);
      }
      return res;
    }
    throw new RegistryError(ERR_UNAUTHORIZED, 401);
  }

  /**
   * send() for idempotent requests, retried with back-off on network errors and 5xx answers
   * (a 4xx is final). Ollama does not retry these; a flaky proxy is common enough that we do.
   */
  async sendRetry(method: string, url: URL, o: SendOptions = {}, okStatuses: number[] = []): Promise<Dispatcher.ResponseData> {
    const signal = o.signal ?? this.opts.signal;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.send(method, url, o, okStatuses);
      } catch (err) {
        const status = (err as RegistryError).status;
        const retryable = !isAbort(err, signal) && (status === undefined || status >= 500);
        if (!retryable || attempt + 1 >= this.tries) throw err;
        const wait = backoffDelay(this.backoffMs, attempt);
        this.opts.log?.(`${method} ${url.pathname} failed: ${(err as Error).message}; retrying in ${Math.round(wait)} ms`);
        await sleep(wait, signal);
      }
    }
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
    const headers: Record<string, string> = { "user-agent": this.userAgent };
    if (url.host === this.base.host) {
      const id = await ensureIdentity(this.opts.identityFile ?? identityPath());
      headers.authorization = signWith(id, tokenRequestSigningText(url.toString()));
    }
    const { request } = await import("undici");
    const res = await request(url, { method: "GET", headers, signal: signal ?? this.opts.signal, dispatcher: await this.getDispatcher() });
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

  /** GET the manifest for `tag`: the raw bytes (kept verbatim on disk). */
  async getManifest(tag: string, signal?: AbortSignal): Promise<Buffer> {
    const res = await this.sendRetry("GET", this.url("manifests", tag), { headers: { accept: MANIFEST_ACCEPT }, signal });
    return readBody(res, 4 << 20);
  }

  /**
   * Where a blob's bytes are served from: the blob URL, or where it redirects to. Redirects are
   * followed while the host stays the same; the first redirect to another host (a CDN) gives
   * the direct URL (download.go). A `Range: bytes=0-0` keeps the probe to one byte on registries
   * that serve the blob themselves.
   */
  async resolveBlobUrl(digest: string, signal?: AbortSignal): Promise<URL> {
    let url = this.url("blobs", digest);
    for (let hops = 0; hops <= 10; hops++) {
      const res = await this.sendRetry("GET", url, { headers: { range: "bytes=0-0" }, signal });
      await res.body.dump({ limit: 64 << 10 }).catch(() => undefined);
      if (res.statusCode >= 300 && res.statusCode < 400) {
        const next = locationOf(res, url);
        if (!next) throw new RegistryError(`unexpected status code ${res.statusCode}`);
        if (next.hostname !== url.hostname) return next;
        url = next;
        continue;
      }
      if (res.statusCode === 200 || res.statusCode === 206) return url;
      throw new RegistryError(`unexpected status code ${res.statusCode}`);
    }
    throw new RegistryError("maximum redirects exceeded (10) for directURL");
  }

  /**
   * GET a whole blob: redirects are followed (the token goes only to the registry's own host).
   * The caller reads the body.
   */
  async getBlob(digest: string, signal?: AbortSignal): Promise<Dispatcher.ResponseData> {
    let url = this.url("blobs", digest);
    for (let hops = 0; hops <= 10; hops++) {
      const res = await this.sendRetry("GET", url, { signal, auth: this.sameHost(url) });
      if (res.statusCode >= 300 && res.statusCode < 400) {
        await res.body.dump({ limit: 64 << 10 }).catch(() => undefined);
        const next = locationOf(res, url);
        if (!next) throw new RegistryError(`unexpected status code ${res.statusCode}`);
        url = next;
        continue;
      }
      if (res.statusCode !== 200) {
        await res.body.dump({ limit: 64 << 10 }).catch(() => undefined);
        throw new RegistryError(`unexpected status code ${res.statusCode}`);
      }
      return res;
    }
    throw new RegistryError("maximum redirects exceeded (10) for directURL");
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
