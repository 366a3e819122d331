// `POST /api/pull` (Ollama's PullModel): the manifest, then every missing layer and the config
// blob, then the manifest written verbatim, then blobs only the replaced manifest used are pruned.
// Progress: `pulling manifest`, `pulling <12 hex>` (digest/total/completed), `verifying sha256
// digest`, `writing manifest`, [`removing unused layers`], `success`.
//
// Everything taken from the registry is validated before a path is built from it: the name was
// validated by the caller, and every layer digest must be `sha256:<64 lowercase hex>` with a sane
// size, or the pull fails before any file is touched.
import type { ProgressResponse } from "../api/types.js";
import { createHash } from "node:crypto";
import { BlobDownload, DEFAULT_TUNING, DigestMismatchPullError, type DownloadTuning } from "./blob-download.js";
import { backoffDelay, isAbort, readBody, RegistryClient, sleep, type RegistryError, type RegistryOptions } from "./client.js";
import { type ModelName } from "./name.js";
import { decodeManifest, type Layer, type Manifest } from "./manifest.js";
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
/** Largest layer we accept from a manifest (1 TB): a bound, not a policy. */
const MAX_LAYER_SIZE = 1e12;

function checkLayer(l: Layer, what: string): void {
  if (!STRICT_DIGEST.test(l.digest)) throw new PullError(`pull model manifest: invalid digest ${JSON.stringify(l.digest)} in ${what}`);
  if (!Number.isSafeInteger(l.size) || l.size < 0 || l.size > MAX_LAYER_SIZE) {
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
 * rename, under the blob lock), so it too is never visible unverified. Retried like a part.
 */
async function fetchSmallBlob(store: Store, client: RegistryClient, layer: Layer, opts: PullOptions, report: (completed: number) => void): Promise<void> {
  const { digest, size } = layer;
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await client.getBlob(digest, opts.signal);
      const body = await readBody(res, size);
      const got = `sha256:${createHash("sha256").update(body).digest("hex")}`;
      if (got !== digest) throw new DigestMismatchPullError(digest, got);
      await store.writeBlobStream(digest, [body]);
      report(size);
      return;
    } catch (err) {
      if (err instanceof DigestMismatchPullError || isAbort(err, opts.signal)) throw err;
      const status = (err as RegistryError).status;
      if ((status !== undefined && status < 500 && status !== 408 && status !== 429) || attempt + 1 >= client.tries) throw err;
      await sleep(backoffDelay(client.backoffMs, attempt), opts.signal);
    }
  }
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
  await dl.wait(({ total, completed }) => progress({ status, digest, total, completed }), opts.signal);
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
    client = new RegistryClient(name, opts);
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

  for (const layer of blobs) await fetchBlob(store, client, layer, opts, progress);

  // Every downloaded blob was hashed while it arrived and renamed into place only when its digest
  // matched, so this step has nothing left to read; the status is kept for clients.
  progress({ status: "verifying sha256 digest" });
  for (const layer of blobs) {
    if (!(await store.hasBlob(layer.digest))) throw new PullError(`blob ${layer.digest} is missing after download`);
  }

  progress({ status: "writing manifest" });
  await store.writeManifestRaw(name, raw);

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
