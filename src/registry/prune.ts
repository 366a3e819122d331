// Startup pruning (Ollama's PruneLayers at server start, reference §4.6): blob names written with
// ':' are renamed to '-', then, unless OLLAMA_NOPRUNE, every blob file older than the grace
// period that no manifest references is removed, along with stale non-digest files (abandoned
// `-partial` downloads and temp files); nothing at all is removed if a manifest is unreadable.
// Empty manifest directories are removed too.
import { promises as fs } from "node:fs";
import path from "node:path";
import type { Config } from "../config.js";
import { parseDigest } from "./name.js";
import type { Store } from "./store.js";

export interface PruneLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** Rename `sha256:<hex>` blob files (old Ollama versions, Windows-unsafe) to `sha256-<hex>`. */
async function fixBlobNames(store: Store, log: PruneLog): Promise<void> {
  const entries = await fs.readdir(store.blobsDir).catch(() => [] as string[]);
  for (const e of entries) {
    if (!e.includes(":")) continue;
    const d = parseDigest(e);
    if (!d) continue;
    const to = store.blobPath(d);
    try {
      await fs.access(to);
      await fs.rm(path.join(store.blobsDir, e), { force: true }); // the canonical one exists
    } catch {
      await fs.rename(path.join(store.blobsDir, e), to).catch((err: Error) => log.warn("could not rename blob", { blob: e, error: err.message }));
    }
  }
}

/** Remove directories under manifests/ left empty (deepest first); never manifests/ itself. */
async function removeEmptyDirs(dir: string, root: string): Promise<boolean> {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  let empty = true;
  for (const e of entries) {
    if (e.isDirectory() && (await removeEmptyDirs(path.join(dir, e.name), root))) continue;
    empty = false;
  }
  if (empty && dir !== root) {
    return fs.rmdir(dir).then(
      () => true,
      () => false,
    );
  }
  return false;
}

/**
 * Called once when the daemon starts (serve.ts). Never throws: a failed prune is logged and the
 * daemon starts anyway. Returns the digests removed.
 */
export async function pruneAtStartup(store: Store, config: Pick<Config, "noPrune">, log: PruneLog, opts: { graceMs?: number } = {}): Promise<string[]> {
  try {
    await fixBlobNames(store, log);
    if (config.noPrune) return [];
    const removed = await store.pruneUnreferencedBlobs(undefined, opts.graceMs === undefined ? {} : { graceMs: opts.graceMs });
    await removeEmptyDirs(store.manifestsDir, store.manifestsDir);
    if (removed.length > 0) log.info(`total unused blobs removed: ${removed.length}`);
    return removed;
  } catch (e) {
    log.warn("could not prune unused blobs", { error: (e as Error).message });
    return [];
  }
}
