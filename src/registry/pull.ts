// `POST /api/pull` (Ollama's PullModel): the manifest, then every missing layer and the config
// blob, then the manifest written verbatim, then blobs only the replaced manifest used are pruned.
// Progress: `pulling manifest`, `pulling <12 hex>` (digest/total/completed), `verifying sha256
// digest`, `writing manifest`, [`removing unused layers`], `success`.
//
// Everything taken from the registry is validated before a path is built from it: the name was
// validated by the caller, and every layer digest must be `sha256:<64 lowercase hex>` with a sane
// size, or the pull fails before any file is touched. The blobs still missing must fit in the
// free space of the store's file system, or the pull fails before anything is allocated.
import type { ProgressResponse } from "../api/types.js";
import { createHash } from "node:crypto";
import { BlobDownload, DEFAULT_TUNING, DigestMismatchPullError, type DownloadTuning } from "./blob-download.js";
import { bodyTooLong, bodyTooShort, checked, checkWholeAnswer } from "./blob-answers.js";
import { resumableParts } from "./blob-parts.js";
import { checkManifestKind, isTransient, readBody, RegistryClient, retryDelay, sleep, type RegistryOptions } from "./client.js";
import { checkFreeSpace, noSpaceWhileWriting } from "./disk-space.js";
import { digestFileName, displayName, type ModelName } from "./name.js";
import { decodeManifest, type Layer, type Manifest } from "./manifest.js";
import { retryStatus } from "./unreachable.js";
import type { Store } from "./store.js";

export class PullError extends Error {
  override name = "PullError";
  constructor(
    message: string,
    readonly status = 500,
  ) {
    super(message);
  }
}

export interface PullOptions extends RegistryOptions {
  /** OLLAMA_NOPRUNE: keep blobs the replaced manifest used. */
  noPrune?: boolean;
  tuning?: Partial<DownloadTuning>;
  logger?: (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => void;
}

type Progress = (p: ProgressResponse) => void;

const STRICT_DIGEST = /^sha256:[0-9a-f]{64}$/;

function checkLayer(l: Layer, what: string): void {
  if (!STRICT_DIGEST.test(l.digest)) throw new PullError(`pull model manifest: invalid digest ${JSON.stringify(l.digest)} in ${what}`);
  // a byte count: an integer that a double holds exactly; whether it fits is checkRoom's business
  if (!Number.isSafeInteger(l.size) || l.size < 0) {
    throw new PullError(`pull model manifest: invalid size ${JSON.stringify(l.size)} in ${what}`);
  }
}

/**
 * Parse and check a manifest from a registry. Layer digests must be exactly `sha256:<64 hex>`
 * (lowercase, as registries write them): anything else (`../`, `sha256-`, other algorithms)
 * is refused, so no path is ever built from it.
 */
export function validateRemoteManifest(raw: Buffer): { manifest: Manifest; blobs: Layer[] } {
  let manifest: Manifest;
  try {
    manifest = decodeManifest(raw, "registry manifest");
    // served as plain JSON, an index or schema 1 manifest is known by its own fields
    checkManifestKind(manifest.mediaType);
    if ((manifest.schemaVersion as number) === 1) checkManifestKind("application/vnd.docker.distribution.manifest.v1+json");
  } catch (e) {
    throw new PullError(`pull model manifest: ${(e as Error).message}`);
  }
  manifest.layers.forEach((l, i) => checkLayer(l, `layer ${i}`));
  const blobs = [...manifest.layers];
  if (manifest.config.digest !== "") {
    checkLayer(manifest.config, "config");
    blobs.push(manifest.config);
  }
  if (blobs.length === 0) throw new PullError("pull model manifest: manifest has no layers");
  return { manifest, blobs };
}

/** Downloads in progress in this process, per store and digest: later pulls attach to them. */
const inflight = new Map<string, BlobDownload>();

function logOf(opts: PullOptions) {
  return opts.logger ?? (() => undefined);
}

export function shortHex(digest: string): string {
  return digest.slice(7, 19);
}

/** Blobs up to this size (templates, params, licenses, configs) are fetched in one request. */
const SMALL_BLOB = 4 << 20;

/**
 * A small blob: one GET, hashed in memory, written with Store.writeBlobStream (temp file, fsync,
 * rename, under the blob lock), so it too is never visible unverified. Transient failures are
 * retried (`tries` in all); a wrong status, length or digest is final.
 */
async function fetchSmallBlob(store: Store, client: RegistryClient, layer: Layer, opts: PullOptions, report: (completed: number) => void): Promise<void> {
  const { digest, size } = layer;
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await client.getBlob(digest, opts.signal);
      checked(res, () => checkWholeAnswer(res.statusCode, res.headers, size, digest));
      const body = await readBody(res, size, bodyTooLong(digest, size).message);
      if (body.length < size) throw bodyTooShort(digest, body.length, size);
      const got = `sha256:${createHash("sha256").update(body).digest("hex")}`;
      if (got !== digest) throw new DigestMismatchPullError(digest, got);
      await store.writeBlobStream(digest, [body]);
      report(size);
      return;
    } catch (err) {
      if (!isTransient(err, opts.signal) || attempt + 1 >= client.tries) throw noSpaceWhileWriting(err, digestFileName(digest));
      const wait = retryDelay(err, client.backoffMs, attempt);
      client.retryNotice(`GET ${shortHex(digest)}`, err, attempt + 2, client.tries, wait);
      await sleep(wait, opts.signal);
    }
  }
}

/**
 * Refuse a pull whose missing blobs do not fit in the free space of the store's file system,
 * before anything is allocated (a partial download counts with the bytes it still lacks).
 */
async function checkRoom(store: Store, name: ModelName, blobs: Layer[]): Promise<void> {
  let needed = 0;
  const seen = new Set<string>();
  for (const { digest, size } of blobs) {
    if (seen.has(digest)) continue;
    seen.add(digest);
    if ((await store.blobSize(digest)) !== null) continue;
    const parts = await resumableParts(store.blobsDir, `${store.blobPath(digest)}-partial`, size);
    needed += size - (parts ?? []).reduce((n, p) => n + p.Completed, 0);
  }
  await checkFreeSpace(store.blobsDir, needed, `pulling ${displayName(name)}`);
}

/** Fetch one blob unless present. */
async function fetchBlob(store: Store, client: RegistryClient, layer: Layer, opts: PullOptions, progress: Progress): Promise<void> {
  const digest = layer.digest;
  const status = `pulling ${shortHex(digest)}`;
  const have = await store.blobSize(digest);
  if (have !== null) {
    progress({ status, digest, total: have, completed: have });
    return;
  }
  if (layer.size <= SMALL_BLOB) {
    progress({ status, digest, total: layer.size, completed: 0 });
    await fetchSmallBlob(store, client, layer, opts, (completed) => progress({ status, digest, total: layer.size, completed }));
    return;
  }
  const key = `${store.blobsDir}\0${digest}`;
  let dl = inflight.get(key);
  if (!dl || dl.stopped) {
    const tuning = { ...DEFAULT_TUNING, ...opts.tuning };
    const created = new BlobDownload(store, client, digest, layer.size, tuning, logOf(opts));
    dl = created;
    inflight.set(key, created);
    void created.done.then(
      () => inflight.get(key) === created && inflight.delete(key),
      () => inflight.get(key) === created && inflight.delete(key),
    );
  }
  // (a full disk while taking the blob's lock or making blobs/ is reported like one while writing)
  await dl.wait(({ total, completed }) => progress({ status, digest, total, completed }), opts.signal).catch((e: unknown) => {
    throw noSpaceWhileWriting(e, digestFileName(digest));
  });
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function pullModel(store: Store, name: ModelName, opts: PullOptions, progress: Progress): Promise<void> {
  const log = logOf(opts);
  // Blobs the current manifest for this name uses: candidates for pruning once it is replaced.
  let previous: string[] = [];
  try {
    const old = await store.readManifest(name);
    if (old) previous = [old.manifest.config, ...old.manifest.layers].map((l) => l.digest).filter((d) => d !== "");
  } catch (e) {
    log("warn", "pulling model with bad existing manifest", { error: describe(e) });
  }

  let client: RegistryClient;
  try {
    client = new RegistryClient(name, {
      ...opts,
      log: opts.log ?? ((msg, fields) => log("info", msg, fields)),
      onRetry: opts.onRetry ?? ((r) => progress({ status: retryStatus(r) })),
    });
  } catch (e) {
    throw new PullError(describe(e));
  }

  progress({ status: "pulling manifest" });
  let raw: Buffer;
  try {
    raw = await client.getManifest(name.tag, opts.signal);
  } catch (e) {
    if (opts.signal?.aborted) throw e;
    throw new PullError(`pull model manifest: ${describe(e)}`);
  }
  const { blobs } = validateRemoteManifest(raw);
  await checkRoom(store, name, blobs);

  for (const layer of blobs) await fetchBlob(store, client, layer, opts, progress);

  // Every downloaded blob was hashed while it arrived and renamed into place only when its digest
  // matched, so this step has nothing left to read; the status is kept for clients.
  progress({ status: "verifying sha256 digest" });
  for (const layer of blobs) {
    if (!(await store.hasBlob(layer.digest))) throw new PullError(`blob ${layer.digest} is missing after download`);
  }

  progress({ status: "writing manifest" });
  await store.writeManifestRaw(name, raw).catch((e: unknown) => {
    throw noSpaceWhileWriting(e, `the manifest of ${displayName(name)}`);
  });

  const kept = new Set(blobs.map((l) => l.digest));
  const unused = previous.filter((d) => !kept.has(d));
  if (!opts.noPrune && unused.length > 0) {
    progress({ status: "removing unused layers" });
    try {
      await store.pruneUnreferencedBlobs(unused);
    } catch (e) {
      progress({ status: `couldn't remove unused layers: ${describe(e)}` });
    }
  }
  progress({ status: "success" });
}
