// A small registry of our own on 127.0.0.1 whose every answer a test can replace: the odd
// servers users meet (object-storage redirects, token servers, registries that bend the
// distribution spec) without docker-registry. It serves blobs (with Range), manifests and
// uploads (POST, PATCH, PUT ?digest=, cross-repository mounts); `hook` sees each request first
// and answers it itself by returning true. Every request is logged with its Authorization header.
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface OddRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  authorization?: string;
  range?: string;
  contentRange?: string;
  /** Bytes of request body received (uploads). */
  bodyBytes: number;
}

export type Hook = (req: http.IncomingMessage, res: http.ServerResponse, u: URL, reg: OddRegistry) => boolean | Promise<boolean>;

export interface OddRegistry {
  host: string;
  url: string;
  /** `sha256:<hex>` → bytes */
  blobs: Map<string, Buffer>;
  /** `<ns>/<model>:<tag>` → manifest bytes */
  manifests: Map<string, Buffer>;
  requests: OddRequest[];
  hook?: Hook;
  /** Where an upload started by POST continues (the 202's Location). */
  uploadLocation: (id: string) => string;
  stop(): Promise<void>;
}

export const digestOf = (b: Buffer | string): string => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** A manifest for `blobs` (the first one the config), as Ollama writes them. */
export function manifestFor(config: Buffer, layers: Buffer[], mediaType = "application/vnd.docker.distribution.manifest.v2+json"): Buffer {
  const layer = (b: Buffer, t: string) => ({ mediaType: t, digest: digestOf(b), size: b.length });
  return Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType,
      config: layer(config, "application/vnd.docker.container.image.v1+json"),
      layers: layers.map((b) => layer(b, "application/vnd.ollama.image.model")),
    }),
  );
}

/** Serve a blob or a range of it (206 with Content-Range), as registries do. */
export function serveBlob(req: http.IncomingMessage, res: http.ServerResponse, data: Buffer): void {
  const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
  if (!m) {
    res.writeHead(200, { "content-length": String(data.length), "content-type": "application/octet-stream" });
    res.end(req.method === "HEAD" ? undefined : data);
    return;
  }
  const start = Number(m[1]);
  const end = Math.min(m[2] ? Number(m[2]) : data.length - 1, data.length - 1);
  res.writeHead(206, { "content-length": String(end - start + 1), "content-range": `bytes ${start}-${end}/${data.length}` });
  res.end(req.method === "HEAD" ? undefined : data.subarray(start, end + 1));
}

/** A request's body; its length goes to the request's log entry. */
async function readAll(req: http.IncomingMessage, log?: OddRequest): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  if (log) log.bodyBytes = body.length;
  return body;
}

export async function startOddRegistry(): Promise<OddRegistry> {
  const uploads = new Map<string, Buffer[]>();
  const sockets = new Set<Socket>();
  let next = 0;
  const reg: OddRegistry = {
    host: "",
    url: "",
    blobs: new Map(),
    manifests: new Map(),
    requests: [],
    uploadLocation: (id) => `/upload/${id}?_state=s${id}`,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer((req, res) => {
    void (async () => {
      const u = new URL(req.url ?? "/", reg.url);
      const log: OddRequest = { method: req.method ?? "", url: req.url ?? "", bodyBytes: 0 };
      if (req.headers.authorization) log.authorization = req.headers.authorization;
      if (req.headers.range) log.range = req.headers.range;
      if (req.headers["content-range"]) log.contentRange = String(req.headers["content-range"]);
      reg.requests.push(log);
      if (reg.hook && (await reg.hook(req, res, u, reg))) return;
      const p = u.pathname;
      let m: RegExpExecArray | null;
      if (p === "/v2/") return void res.end("{}");
      if ((m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(p))) {
        if (req.method === "PUT") {
          reg.manifests.set(`${m[1]}:${m[2]}`, await readAll(req, log));
          return void res.writeHead(201).end();
        }
        const body = reg.manifests.get(`${m[1]}:${m[2]}`);
        if (!body) return void res.writeHead(404).end('{"errors":[{"code":"MANIFEST_UNKNOWN"}]}');
        res.writeHead(200, { "content-type": "application/vnd.docker.distribution.manifest.v2+json", "docker-content-digest": digestOf(body) });
        return void res.end(body);
      }
      if ((m = /^\/v2\/(.+)\/blobs\/uploads\/$/.exec(p)) && req.method === "POST") {
        await readAll(req, log);
        const mount = u.searchParams.get("mount");
        if (mount && reg.blobs.has(mount)) return void res.writeHead(201, { location: `/v2/${m[1]}/blobs/${mount}` }).end();
        const id = String(++next);
        uploads.set(id, []);
        return void res.writeHead(202, { location: reg.uploadLocation(id), range: "0-0" }).end();
      }
      if ((m = /^\/upload\/(\d+)$/.exec(p))) {
        const parts = uploads.get(m[1] as string);
        if (!parts) return void res.writeHead(404).end();
        parts.push(await readAll(req, log));
        const have = parts.reduce((n, b) => n + b.length, 0);
        if (req.method === "PATCH") return void res.writeHead(202, { location: req.url ?? "", range: `0-${Math.max(have - 1, 0)}` }).end();
        if (req.method !== "PUT") return void res.writeHead(405).end();
        const data = Buffer.concat(parts);
        const digest = u.searchParams.get("digest") ?? "";
        if (digestOf(data) !== digest) return void res.writeHead(400).end('{"errors":[{"code":"DIGEST_INVALID"}]}');
        reg.blobs.set(digest, data);
        uploads.delete(m[1] as string);
        return void res.writeHead(201, { location: `/v2/x/blobs/${digest}` }).end();
      }
      if ((m = /^\/v2\/.+\/blobs\/(sha256:[0-9a-f]{64})$/.exec(p))) {
        const data = reg.blobs.get(m[1] as string);
        if (!data) return void res.writeHead(404).end('{"errors":[{"code":"BLOB_UNKNOWN"}]}');
        return serveBlob(req, res, data);
      }
      res.writeHead(404).end("404 page not found");
    })().catch(() => res.destroy());
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  reg.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  reg.url = `http://${reg.host}`;
  return reg;
}
