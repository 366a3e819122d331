// A blob the daemon makes itself (a quantized or converted model): written to a temp file in
// blobs/ under that file's own lock, so the startup sweep (store-sweep.ts) can tell a live writer
// in another process from one that was killed, then moved into the store under its digest; and
// the progress lines of its writing.
import { randomBytes } from "node:crypto";
import type { ProgressResponse } from "../api/types.js";
import { promises as fs } from "node:fs";
import path from "node:path";
import lockfile from "proper-lockfile";
import { makeDirs } from "../fs/make-dirs.js";
import type { Store } from "./store.js";
import { LOCK_STALE_MS } from "./store-sweep.js";

/** Move a finished temp file into the store as blob `digest` (under the blob lock). */
async function adoptBlob(store: Store, tmp: string, digest: string): Promise<void> {
  const final = store.blobPath(digest);
  const release = await lockfile.lock(final, { realpath: false, retries: { forever: true, minTimeout: 20, maxTimeout: 500, factor: 1.5 }, onCompromised: () => undefined });
  try {
    if (await store.hasBlob(digest)) await fs.rm(tmp, { force: true });
    else await fs.rename(tmp, final);
  } finally {
    await release().catch(() => undefined);
  }
}

/**
 * `write(tmp)` writes the new file and answers its digest and size; the file then becomes that
 * blob (`created` false when the store had it already). The temp file never outlives the call.
 */
export async function writeDerivedBlob(
  store: Store,
  kind: "quantize" | "convert",
  write: (tmp: string) => Promise<{ digest: string; size: number }>,
): Promise<{ digest: string; size: number; created: boolean }> {
  await makeDirs(store.blobsDir);
  const tmp = path.join(store.blobsDir, `.${kind}-${randomBytes(6).toString("hex")}.tmp`);
  const release = await lockfile.lock(tmp, { realpath: false, stale: LOCK_STALE_MS, onCompromised: () => undefined });
  try {
    const res = await write(tmp);
    const existed = await store.hasBlob(res.digest);
    await adoptBlob(store, tmp, res.digest);
    return { ...res, created: !existed };
  } finally {
    await fs.rm(tmp, { force: true });
    await release().catch(() => undefined);
  }
}

/**
 * Progress lines for `status` out of `total`: one at 0 now, then at most one per 60 ms, and always
 * the last (completed = total). Returns the function that reports how far it is.
 */
export function progressLines(progress: (p: ProgressResponse) => void, status: string, digest: string, total: number): (completed: number) => void {
  let last = 0;
  progress({ status, digest, total, completed: 0 });
  return (completed) => {
    const now = Date.now();
    if (now - last < 60 && completed < total) return;
    last = now;
    progress({ status, digest, total, completed });
  };
}
