// A real OCI distribution registry (Debian's `docker-registry`, /usr/bin/docker-registry) on
// 127.0.0.1 with a temporary storage directory, and a fault-injecting HTTP proxy of our own in front
// of it: it can drop a blob mid-body, answer 500s, flip a byte, stall, require a Bearer token
// (issued by its own /token endpoint against an ed25519-signed request, as registry.ollama.ai does),
// serve hand-made manifests, and counts the blob bytes it forwards.
import { spawn, type ChildProcess } from "node:child_process";
import { createReadStream, existsSync } from "node:fs";
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { createHash, randomBytes } from "node:crypto";
import { tokenRequestSigningText, verifySignature } from "../../src/registry/auth.js";
import { freePort } from "./daemon.js";

export const REGISTRY_BIN = process.env.OLLAMATS_REGISTRY_BIN ?? "/usr/bin/docker-registry";

export function haveRegistry(): boolean {
  return existsSync(REGISTRY_BIN);
}


/** openssl makes the self-signed certificate of a TLS registry. */
export function haveOpenssl(): boolean {
  return (process.env.PATH ?? "").split(path.delimiter).some((d) => d !== "" && existsSync(path.join(d, "openssl")));
}

export interface TestRegistry {
  /** `127.0.0.1:<port>`: the host part of model names. */
  host: string;
  url: string;
  /** With `tls`: the self-signed certificate (PEM file) to trust, e.g. via NODE_EXTRA_CA_CERTS. */
  caFile?: string;
  storage: string;
  logs: () => string;
  stop(): Promise<void>;
}

/** A self-signed certificate for 127.0.0.1 (openssl). */
async function selfSigned(dir: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, "cert.pem");
  const key = path.join(dir, "key.pem");
  await new Promise<void>((resolve, reject) => {
    const p = spawn("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert], { stdio: "ignore" });
    p.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`openssl exited ${code}`))));
    p.on("error", reject);
  });
  return { cert, key };
}

export async function startRegistry(opts: { tls?: boolean } = {}): Promise<TestRegistry> {
  const storage = await mkdtemp(path.join(os.tmpdir(), "ollamats-registry-"));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = path.join(storage, "config.yml");
  const tls = opts.tls ? await selfSigned(storage) : undefined;
  await writeFile(
    config,
    [
      "version: 0.1",
      "log:",
      "  level: warn",
      "  accesslog:",
      "    disabled: true",
      "storage:",
      "  filesystem:",
      `    rootdirectory: ${path.join(storage, "data")}`,
      "  delete:",
      "    enabled: true",
      "http:",
      `  addr: ${host}`,
      ...(tls ? ["  tls:", `    certificate: ${tls.cert}`, `    key: ${tls.key}`] : []),
      "",
    ].join("\n"),
  );
  // Registry suites never skip: without the registry they fail and say what to install.
  if (!haveRegistry()) throw new Error(`${REGISTRY_BIN} is missing: apt-get install -y docker-registry (or set OLLAMATS_REGISTRY_BIN)`);
  const proc: ChildProcess = spawn(REGISTRY_BIN, ["serve", config], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const url = `${tls ? "https" : "http"}://${host}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`docker-registry exited: ${out}`);
    if (await probe(url, tls?.cert)) break;
    if (Date.now() > deadline) throw new Error(`docker-registry did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    host,
    url,
    storage,
    ...(tls ? { caFile: tls.cert } : {}),
    logs: () => out,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        await new Promise((r) => proc.once("exit", r));
      }
      await rm(storage, { recursive: true, force: true });
    },
  };
}

/** GET /v2/ answers 200 (trusting `ca` for https). */
async function probe(url: string, ca?: string): Promise<boolean> {
  const { request, Agent } = await import("undici");
  const dispatcher = new Agent(ca ? { connect: { ca: await readFile(ca) } } : {});
  try {
    const r = await request(`${url}/v2/`, { dispatcher });
    await r.body.dump();
    return r.statusCode === 200;
  } catch {
    return false;
  } finally {
    await dispatcher.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Fault-injecting proxy

export interface Faults {
  /** Fail this many blob GETs with 500 (before any byte). */
  fail500?: number;
  /** The status of those failures instead of 500 (429, 503, …). */
  failWith?: number;
  /** Fail this many manifest GETs with 500. */
  manifest500?: number;
  /** Fail this many upload PATCHes with 500 (the body is read and dropped). */
  patch500?: number;
  /** Drop the connection after this many body bytes, for the next `dropCount` blob GETs. */
  dropAfter?: number;
  dropCount?: number;
  /** Flip the byte at this absolute blob offset (every response covering it), for `corruptDigest`. */
  corruptOffset?: number;
  corruptDigest?: string;
  /** Send this many body bytes of each blob GET, then hang (until the client goes away). */
  stallAfter?: number;
  /** Pause this long (ms) between forwarded 64 KB body chunks of blob GETs. */
  throttleMs?: number;
  /** Require `Authorization: Bearer <token>` on /v2/ requests, issued by /token. */
  requireAuth?: boolean;
  /** Answer blob GETs with a 307 to this origin (a "CDN" on another host name). */
  redirectBlobsTo?: string;
  // The faults below apply to the blob `only` names when it is set, else to every blob GET.
  only?: string;
  /** Answer ranged blob GETs with a plain 200 and no Content-Range, as a file server without
   *  Range support does: "full" sends the whole blob, "short" only the bytes asked for. */
  ignoreRange?: "full" | "short";
  /** Answer blob GETs with this status (and a short text body). */
  blobStatus?: number;
  /** Answer blob GETs with a 302 to this Location (`$path` is replaced by the request path). */
  blobRedirect?: string;
  /** Send blob bodies chunked (no Content-Length) and end them cleanly this many bytes early. */
  bodyShort?: number;
  /** Send blob bodies chunked and append this many extra bytes. */
  bodyExtra?: number;
  /** Rewrite the Content-Range of 206 answers: "start" moves the first byte, "total" the size. */
  badContentRange?: "start" | "total";
  /** Content-Type of the manifests served from `manifests`. */
  manifestType?: string;
}

export interface ProxyRequestLog {
  method: string;
  path: string;
  status: number;
  range?: string;
  /** The request carried an Authorization header. */
  auth?: boolean;
  /** Blob body bytes sent in answer (a request still running after reset() counts here only). */
  bytes?: number;
}

export interface FaultProxy {
  host: string;
  url: string;
  faults: Faults;
  /** Blob body bytes sent to clients, per digest. */
  blobBytes: Map<string, number>;
  requests: ProxyRequestLog[];
  /** Serve this raw body for GET /v2/<repo>/manifests/<tag> instead of asking the registry. */
  manifests: Map<string, string>;
  /** Requests that came in absolute form (the proxy used as HTTP_PROXY). */
  forwardProxied: number;
  /** Token requests seen and whether their signature verified. */
  tokenRequests: Array<{ url: string; verified: boolean; signed: boolean }>;
  reset(): void;
  stop(): Promise<void>;
}

const BLOB_GET = /^\/v2\/.+\/blobs\/(sha256:[0-9a-f]{64})$/;

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const t = new URL(target);
  const tokens = new Set<string>();
  const sockets = new Set<net.Socket>();
  const state: FaultProxy = {
    host: "",
    url: "",
    faults: {},
    blobBytes: new Map(),
    requests: [],
    manifests: new Map(),
    forwardProxied: 0,
    tokenRequests: [],
    reset() {
      this.faults = {};
      this.blobBytes.clear();
      this.requests.length = 0;
      this.manifests.clear();
      this.tokenRequests.length = 0;
      this.forwardProxied = 0;
    },
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const server = http.createServer((req, res) => {
    const f = state.faults;
    const u = new URL(req.url ?? "/", "http://x");
    if (/^https?:\/\//.test(req.url ?? "")) {
      // absolute form: we are somebody's HTTP_PROXY; serve it like an origin request
      state.forwardProxied++;
      req.url = u.pathname + u.search;
    }
    const log: ProxyRequestLog = {
      method: req.method ?? "",
      path: u.pathname + u.search,
      status: 0,
      ...(req.headers.range ? { range: req.headers.range } : {}),
      ...(req.headers.authorization ? { auth: true } : {}),
    };
    state.requests.push(log);
    const reply = (status: number, body: string, headers: Record<string, string> = {}) => {
      log.status = status;
      res.writeHead(status, { "content-length": String(Buffer.byteLength(body)), ...headers });
      res.end(body);
    };

    if (u.pathname === "/token") {
      const auth = req.headers.authorization;
      const signed = typeof auth === "string" && auth.length > 0;
      const full = `http://${state.host}${req.url}`;
      const verified = signed && verifySignature(auth, tokenRequestSigningText(full));
      state.tokenRequests.push({ url: full, verified, signed });
      if (!verified) return reply(401, JSON.stringify({ errors: [{ code: "UNAUTHORIZED", message: "bad signature" }] }));
      const token = randomBytes(12).toString("hex");
      tokens.add(token);
      return reply(200, JSON.stringify({ token }), { "content-type": "application/json" });
    }
    if (f.requireAuth && u.pathname.startsWith("/v2/") && u.pathname !== "/v2/") {
      const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
      if (!m || !tokens.has(m[1] as string)) {
        const repo = /^\/v2\/(.+?)\/(?:manifests|blobs)\//.exec(u.pathname)?.[1] ?? "";
        return reply(401, JSON.stringify({ errors: [{ code: "UNAUTHORIZED" }] }), {
          "www-authenticate": `Bearer realm="http://${state.host}/token",service="test-registry",scope="repository:${repo}:pull,push"`,
        });
      }
    }
    const mm = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(u.pathname);
    if (req.method === "GET" && mm) {
      const fake = state.manifests.get(`${mm[1]}:${mm[2]}`);
      if (fake !== undefined) return reply(200, fake, { "content-type": f.manifestType ?? "application/vnd.docker.distribution.manifest.v2+json" });
      if (f.manifest500 && f.manifest500 > 0) {
        f.manifest500--;
        return reply(500, "injected manifest failure");
      }
    }
    if (req.method === "PATCH" && f.patch500 && f.patch500 > 0) {
      f.patch500--;
      req.resume();
      req.on("end", () => reply(500, "injected upload failure"));
      return;
    }
    const blob = req.method === "GET" ? BLOB_GET.exec(u.pathname)?.[1] : undefined;
    if (blob && f.redirectBlobsTo) {
      return reply(307, "", { location: `${f.redirectBlobsTo}${u.pathname}${u.search}` });
    }
    if (blob && f.fail500 && f.fail500 > 0) {
      f.fail500--;
      return reply(f.failWith ?? 500, "injected failure");
    }
    const hit = blob !== undefined && (!f.only || f.only === blob);
    if (hit && f.blobStatus !== undefined) return reply(f.blobStatus, f.blobStatus === 204 ? "" : "injected status");
    if (hit && f.blobRedirect !== undefined) return reply(302, "", { location: f.blobRedirect.replace("$path", u.pathname + u.search) });

    const headers = { ...req.headers, host: t.host };
    if (hit && f.ignoreRange === "full") delete headers.range;
    const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers }, (ur) => {
      log.status = ur.statusCode ?? 0;
      // Registry redirects/locations point at the registry; clients must come back through us.
      const out: http.OutgoingHttpHeaders = { ...ur.headers };
      for (const h of ["location", "docker-upload-location"]) {
        const v = ur.headers[h];
        if (typeof v === "string") out[h] = v.replace(`http://${t.host}`, `http://${state.host}`);
      }
      let status = ur.statusCode ?? 502;
      if (hit && status === 206 && f.ignoreRange === "short") {
        status = 200;
        delete out["content-range"];
      }
      const cr0 = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(out["content-range"] ?? ""));
      if (hit && cr0 && f.badContentRange) {
        const [a, b, n] = [Number(cr0[1]), Number(cr0[2]), Number(cr0[3])];
        out["content-range"] = f.badContentRange === "start" ? `bytes ${a + 1}-${b + 1}/${n}` : `bytes ${a}-${b}/${n + 1}`;
      }
      // chunked, so that a body of another length than announced ends cleanly
      const reshape = hit && (f.bodyShort !== undefined || f.bodyExtra !== undefined) && status < 300;
      const announced = Number(ur.headers["content-length"] ?? 0);
      if (reshape) delete out["content-length"];
      res.writeHead(status, out);
      res.on("close", () => ur.destroy());
      if (!blob || (ur.statusCode ?? 0) >= 300) {
        ur.pipe(res);
        return;
      }
      // absolute offset of the first body byte
      const cr = /^bytes (\d+)-/.exec(String(ur.headers["content-range"] ?? ""));
      let offset = cr ? Number(cr[1]) : 0;
      let sent = 0;
      const drop = f.dropAfter !== undefined && (f.dropCount ?? 1) > 0 && (!f.only || f.only === blob);
      if (drop) f.dropCount = (f.dropCount ?? 1) - 1;
      let stopped = false;
      const count = (n: number) => {
        state.blobBytes.set(blob, (state.blobBytes.get(blob) ?? 0) + n);
        log.bytes = (log.bytes ?? 0) + n;
      };
      ur.on("data", (chunk: Buffer) => {
        if (stopped) return;
        let c = chunk;
        if (reshape && f.bodyShort !== undefined) c = c.subarray(0, Math.max(0, announced - f.bodyShort - sent));
        const limit = drop ? f.dropAfter : f.stallAfter;
        if (limit !== undefined && sent + c.length >= limit) {
          c = c.subarray(0, Math.max(0, limit - sent));
          stopped = true;
        }
        if (f.corruptOffset !== undefined && (!f.corruptDigest || f.corruptDigest === blob)) {
          const i = f.corruptOffset - offset;
          if (i >= 0 && i < c.length) {
            c = Buffer.from(c);
            c[i] = (c[i] as number) ^ 0xff;
          }
        }
        offset += c.length;
        sent += c.length;
        count(c.length);
        const ok = res.write(c);
        if (stopped) {
          ur.destroy();
          if (drop) setTimeout(() => res.socket?.destroy(), 20);
          // a stall keeps the socket open and silent
          return;
        }
        if (!ok || f.throttleMs) {
          ur.pause();
          const resume = () => setTimeout(() => ur.resume(), f.throttleMs ?? 0);
          if (!ok) res.once("drain", resume);
          else resume();
        }
      });
      ur.on("end", () => {
        if (stopped) return;
        if (reshape && f.bodyExtra) res.write(Buffer.alloc(f.bodyExtra, 0x55));
        res.end();
      });
      ur.on("error", () => res.destroy());
    });
    up.on("error", (e) => {
      if (!res.headersSent) reply(502, `proxy: ${e.message}`);
      else res.destroy();
    });
    req.pipe(up);
  });
  // CONNECT (an https target through us as HTTPS_PROXY): a plain tunnel, counted
  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    state.forwardProxied++;
    const [h, p] = (req.url ?? "").split(":");
    const upstream = net.connect(Number(p), h ?? "127.0.0.1", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  state.host = `127.0.0.1:${port}`;
  state.url = `http://${state.host}`;
  return state;
}

/** Stream an NDJSON response into an array of objects. */
export async function ndjson(res: Response): Promise<Array<Record<string, unknown>>> {
  const text = await res.text();
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

// ---------------------------------------------------------------------------------------------
// Daemon and store helpers for the registry tests

/** Environment for a test daemon: fast retries, small transfer parts, no proxy from the CI env. */
export function registryEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOME: home,
    OLLAMATS_TRANSFER_BACKOFF_MS: "20",
    HTTP_PROXY: "",
    HTTPS_PROXY: "",
    http_proxy: "",
    https_proxy: "",
    NO_PROXY: "",
    no_proxy: "",
    ...extra,
  };
}

/** Every file under `dir`, relative, sorted ([] when it does not exist). */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(path.join(d, e.name), r);
      else out.push(r);
    }
  };
  await walk(dir, "");
  return out.sort();
}

async function sha256Of(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const c of createReadStream(file)) h.update(c as Buffer);
  return h.digest("hex");
}

/** Every blob's content hashes to its name; returns the blob file names. Throws otherwise. */
export async function verifyBlobs(models: string): Promise<string[]> {
  const dir = path.join(models, "blobs");
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.endsWith(".lock"));
  for (const n of names) {
    const m = /^sha256-([0-9a-f]{64})$/.exec(n);
    if (!m) throw new Error(`unexpected file in blobs/: ${n}`);
    const st = await stat(path.join(dir, n));
    if (!st.isFile()) throw new Error(`not a file: ${n}`);
    const got = await sha256Of(path.join(dir, n));
    if (got !== m[1]) throw new Error(`blob ${n} hashes to ${got}`);
  }
  return names;
}

export async function postJson(url: string, body: unknown, method = "POST"): Promise<Response> {
  return fetch(url, { method, body: JSON.stringify(body) });
}

/** Deterministic text from a model: fixed seed, a few tokens. */
export async function generateText(daemonUrl: string, model: string): Promise<string> {
  const r = await postJson(`${daemonUrl}/api/generate`, {
    model,
    prompt: "Once upon a time",
    stream: false,
    options: { seed: 42, num_predict: 16, temperature: 0.8 },
  });
  const j = (await r.json()) as { response?: string; error?: string };
  if (!r.ok) throw new Error(`generate failed: ${r.status} ${j.error}`);
  return j.response ?? "";
}
