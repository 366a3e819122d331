// A GGUF layer of a model being created, re-quantized into a new blob (quantize.ts does the
// arithmetic): the model's weights (`quantize`) or its draft model's (`draft_quantize`), with
// Ollama's progress lines, written where the startup sweep can tell a live writer from a dead one.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import lockfile from "proper-lockfile";
import type { ProgressResponse } from "../api/types.js";
import { makeDirs } from "../fs/make-dirs.js";
import { readGgufInfo, type GgufInfo } from "./gguf.js";
import type { Layer } from "./manifest.js";
import { quantizeGguf, sourceFileType, type QuantizeTarget } from "./quantize.js";
import type { Store } from "./store.js";
import { LOCK_STALE_MS } from "./store-sweep.js";

type Progress = (p: ProgressResponse) => void;

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

/** Quantize a GGUF layer into a blob of the same media type (`created` false if the store had it). */
export async function quantizeLayer(store: Store, layer: Layer, info: GgufInfo, target: QuantizeTarget, progress: Progress, signal?: AbortSignal): Promise<{ layer: Layer; created: boolean }> {
  const status = `quantizing ${sourceFileType(info)} model to ${target}`;
  await makeDirs(store.blobsDir);
  const tmp = path.join(store.blobsDir, `.quantize-${randomBytes(6).toString("hex")}.tmp`);
  // Written under a lock of its own, so the startup sweep (store-sweep.ts) can tell a live
  // quantizer in another process from one that was killed.
  const release = await lockfile.lock(tmp, { realpath: false, stale: LOCK_STALE_MS, onCompromised: () => undefined });
  let last = 0;
  try {
    progress({ status, digest: "0000000000000000000", total: layer.size, completed: 0 });
    const res = await quantizeGguf(
      store.blobPath(layer.digest),
      tmp,
      target,
      (done, total) => {
        const now = Date.now();
        if (now - last < 60 && done < total) return;
        last = now;
        progress({ status, digest: "0000000000000000000", total: layer.size, completed: Math.floor((done / Math.max(total, 1)) * layer.size) });
      },
      signal,
    );
    progress({ status: "verifying conversion" });
    await readGgufInfo(tmp).catch((e: Error) => {
      throw new Error(`quantized model does not verify: ${e.message}`);
    });
    const existed = await store.hasBlob(res.digest);
    await adoptBlob(store, tmp, res.digest);
    return { layer: { mediaType: layer.mediaType, digest: res.digest, size: res.size }, created: !existed };
  } finally {
    await fs.rm(tmp, { force: true });
    await release().catch(() => undefined);
  }
}
