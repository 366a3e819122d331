// `POST /api/push` (Ollama's PushModel / uploadBlob): for every layer and the config blob, HEAD it
// in the target repository; if missing, POST an upload (with `mount`/`from` when the layer names
// the model it came from: a cross-repository mount answers 201 and nothing is sent), then send
// the bytes: one PUT for a blob up to the part size, else PATCH parts in order followed by a PUT
// with the digest. A failed PATCH asks the registry how much it holds and continues from there.
// Then the manifest is PUT. Progress: `retrieving manifest`, `pushing <12 hex>` (digest/total/
// completed), `pushing manifest`, `success`.
import { createHash, type Hash } from "node:crypto";
import { createReadStream, promises as fs } from "node:fs";
import { pipeline, Transform } from "node:stream";
import type { Dispatcher } from "undici";
import type { ProgressResponse } from "../api/types.js";
import { DEFAULT_TUNING } from "./blob-download.js";
import { isTransient, locationOf, RegistryClient, RegistryError, registryUrl, retryDelay, RetriesExhaustedError, sleep, type RegistryOptions } from "./client.js";
import { displayName, parseModelName, type ModelName } from "./name.js";
import { encodeManifest, type Layer } from "./manifest.js";
import { retryStatus } from "./unreachable.js";
import type { Store } from "./store.js";

export class PushError extends Error {
  override name = "PushError";
  constructor(
    message: string,
    readonly status = 500,
  ) {
    super(message);
  }
}

export interface PushOptions extends RegistryOptions {
  /** Blobs larger than this go up in PATCH parts of this size (Ollama: total/16 in [100 MB, 1 GB]). */
  minPartSize?: number;
  maxPartSize?: number;
  logger?: (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => void;
}

type Progress = (p: ProgressResponse) => void;

export interface Counter {
  completed: number;
}

/**
 * A file range as a request body factory. Each call (the first send, or a resend after an auth
 * challenge) restarts the progress count at `start` and the part's md5 (Ollama's etag input).
 * pipeline, not pipe: a read error (the blob removed meanwhile) must fail the request, and an
 * 'error' with nobody listening would end the process.
 */
export function rangeBody(file: string, start: number, end: number, counter: Counter, md5?: { hash?: Hash }): () => Dispatcher.DispatchOptions["body"] {
  return () => {
    counter.completed = start;
    const hash = createHash("md5");
    if (md5) md5.hash = hash;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        counter.completed += chunk.length;
        if (md5) hash.update(chunk);
        cb(null, chunk);
      },
    });
    return pipeline(createReadStream(file, { start, end: end - 1, highWaterMark: 1 << 20 }), counted, () => undefined);
  };
}

function partSize(total: number, o: PushOptions): number {
  const min = o.minPartSize ?? DEFAULT_TUNING.minPartSize;
  const max = o.maxPartSize ?? DEFAULT_TUNING.maxPartSize;
  return Math.min(Math.max(Math.floor(total / 16), min), max);
}

/** Where an upload session stands: the next byte the registry expects (GET on the upload URL). */
async function uploadOffset(client: RegistryClient, location: URL, signal?: AbortSignal): Promise<{ offset: number; location: URL }> {
  const res = await client.send("GET", location, { signal });
  await res.body.dump().catch(() => undefined);
  const range = String(res.headers["range"] ?? "");
  const m = /^(?:bytes=)?0-(\d+)$/.exec(range);
  // "0-<last byte>"; docker/distribution also says "0-0" for an empty upload, so "0-0" is read as
  // nothing received (were it one byte, the next PATCH is refused rather than data misplaced)
  const last = m ? Number(m[1]) : 0;
  return { offset: last > 0 ? last + 1 : 0, location: locationOf(res, location) ?? location };
}

async function uploadBlob(store: Store, client: RegistryClient, layer: Layer, opts: PushOptions, progress: Progress): Promise<void> {
  const { digest } = layer;
  const status = `pushing ${digest.slice(7, 19)}`;
  const signal = opts.signal;
  const file = store.blobPath(digest);
  const st = await fs.stat(file).catch(() => null);
  if (!st?.isFile()) throw new PushError(`blob ${digest} is missing from the store; pull or re-create the model`);
  const total = st.size;

  if (await client.hasBlob(digest, signal)) {
    progress({ status, digest, total, completed: total });
    return;
  }

  const counter: Counter = { completed: 0 };
  const report = () => progress({ status, digest, total, completed: Math.min(counter.completed, total) });
  report();
  const tick = setInterval(report, 60);
  try {
    const from = layer.from ? parseModelName(layer.from) : null;
    const mountFrom = from && `${from.namespace}/${from.model}` !== client.repo ? `${from.namespace}/${from.model}` : undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        const started = await client.startUpload(digest, mountFrom, signal);
        if (started.mounted) {
          counter.completed = total;
          break;
        }
        await sendBytes(client, file, digest, total, started.location, counter, opts);
        break;
      } catch (err) {
        if (!isTransient(err, signal) || attempt + 1 >= client.tries) throw err;
        const wait = retryDelay(err, client.backoffMs, attempt);
        client.retryNotice(`upload of ${digest.slice(7, 19)}`, err, attempt + 2, client.tries, wait);
        counter.completed = 0;
        await sleep(wait, signal);
      }
    }
    counter.completed = total;
    report();
  } finally {
    clearInterval(tick);
  }
}

/** Monolithic PUT for a small blob; PATCH parts then a closing PUT for a large one. */
async function sendBytes(client: RegistryClient, file: string, digest: string, total: number, location: URL, counter: Counter, opts: PushOptions): Promise<void> {
  const signal = opts.signal;
  const size = partSize(total, opts);
  // appended to the query as the registry wrote it: re-encoding it can break a signed URL
  const finish = (loc: URL, etag?: string) => {
    const u = new URL(loc);
    const add = `digest=${encodeURIComponent(digest)}${etag ? `&etag=${etag}` : ""}`;
    u.search = u.search.length > 1 ? `${u.search}&${add}` : `?${add}`;
    return u;
  };

  if (total <= size) {
    const res = await client.send("PUT", finish(location), {
      headers: { "content-type": "application/octet-stream", "content-length": String(total) },
      body: rangeBody(file, 0, total, counter),
      signal,
    });
    await res.body.dump().catch(() => undefined);
    return;
  }

  const md5s: Buffer[] = [];
  let loc = location;
  let offset = 0;
  let failures = 0;
  while (offset < total) {
    const end = Math.min(offset + size, total);
    const md5: { hash?: Hash } = {};
    try {
      const res = await client.send("PATCH", loc, {
        headers: {
          "content-type": "application/octet-stream",
          "content-length": String(end - offset),
          "content-range": `${offset}-${end - 1}`,
          "x-redirect-uploads": "1",
        },
        body: rangeBody(file, offset, end, counter, md5),
        signal,
      }, [307]);
      await res.body.dump().catch(() => undefined);
      const next = locationOf(res, loc);
      if (res.statusCode === 307) {
        // "PUT this part to the redirect URL" (object storage); the upload location stays
        const redirect = res.headers["location"];
        const target = registryUrl(String(Array.isArray(redirect) ? redirect[0] : redirect), loc);
        const md5b: { hash?: Hash } = {};
        const put = await client.raw("PUT", target, {
          headers: { "content-type": "application/octet-stream", "content-length": String(end - offset) },
          body: rangeBody(file, offset, end, counter, md5b),
          auth: client.sameHost(target),
          signal,
        });
        await put.body.dump().catch(() => undefined);
        if (put.statusCode >= 400) throw new RegistryError(`http status ${put.statusCode}`, put.statusCode);
        if (md5b.hash) md5s.push(md5b.hash.digest());
        const dul = res.headers["docker-upload-location"];
        if (dul) loc = registryUrl(String(Array.isArray(dul) ? dul[0] : dul), loc);
      } else {
        if (md5.hash) md5s.push(md5.hash.digest());
        if (next) loc = next;
      }
      offset = end;
      failures = 0;
    } catch (err) {
      if (!isTransient(err, signal)) throw err;
      if (++failures >= client.tries) throw new RetriesExhaustedError(`max retries exceeded: ${(err as Error).message}`);
      const wait = retryDelay(err, client.backoffMs, failures - 1);
      client.retryNotice(`PATCH of ${digest.slice(7, 19)}`, err, failures + 1, client.tries, wait);
      await sleep(wait, signal);
      // continue from what the registry holds (it may have kept part of the failed PATCH)
      const at = await uploadOffset(client, loc, signal);
      loc = at.location;
      if (at.offset !== offset) {
        // a part boundary moved: the per-part md5 list no longer describes parts; rebuild it
        md5s.length = 0;
      }
      offset = at.offset;
      counter.completed = offset;
    }
  }
  const etag = md5s.length > 0 ? `${createHash("md5").update(Buffer.concat(md5s)).digest("hex")}-${md5s.length}` : undefined;
  const res = await client.send("PUT", finish(loc, etag), { headers: { "content-type": "application/octet-stream", "content-length": "0" }, signal });
  await res.body.dump().catch(() => undefined);
}

export async function pushModel(store: Store, name: ModelName, opts: PushOptions, progress: Progress): Promise<void> {
  progress({ status: "retrieving manifest" });
  let client: RegistryClient;
  try {
    client = new RegistryClient(name, {
      ...opts,
      log: opts.log ?? ((msg, fields) => opts.logger?.("info", msg, fields)),
      onRetry: opts.onRetry ?? ((r) => progress({ status: retryStatus(r) })),
    });
  } catch (e) {
    throw new PushError((e as Error).message);
  }
  const stored = await store.readManifest(name).catch((e: Error) => {
    progress({ status: "couldn't retrieve manifest" });
    throw new PushError(e.message);
  });
  if (!stored) {
    progress({ status: "couldn't retrieve manifest" });
    throw new PushError(`model "${displayName(name)}" not found`, 404);
  }
  const m = stored.manifest;
  const blobs = [...m.layers, ...(m.config.digest ? [m.config] : [])];
  for (const l of blobs) {
    // a local manifest could have been edited by hand: never build a path from a bad digest
    if (!/^sha256:[0-9a-f]{64}$/.test(l.digest)) throw new PushError(`invalid digest ${JSON.stringify(l.digest)} in manifest`);
  }
  for (const layer of blobs) await uploadBlob(store, client, layer, opts, progress);

  progress({ status: "pushing manifest" });
  // Ollama sends json.Marshal of the manifest: Go's encoding without the encoder's newline.
  const body = encodeManifest(m);
  await client.putManifest(name.tag, body.subarray(0, body.length - 1), opts.signal);
  progress({ status: "success" });
}
