// `create` from a safetensors model directory: the uploaded files (name → blob) are checked and
// converted into one GGUF blob (hf-convert.ts) before the create goes on as for a GGUF file, with
// Ollama's "converting model" progress.
import type { ProgressResponse } from "../api/types.js";
import { CreateError } from "./create-files.js";
import { writeDerivedBlob } from "./derived-blob.js";
import { ConvertError, planConversion, writeConversion } from "./hf-convert.js";
import { parseDigest } from "./name.js";
import type { Store } from "./store.js";

/** The converted model as the one GGUF file of the create; its digest joins `written`. */
export async function convertedFiles(store: Store, files: Array<[string, string]>, progress: (p: ProgressResponse) => void, written: string[], signal?: AbortSignal): Promise<Array<[string, string]>> {
  const paths = new Map<string, string>();
  for (const [file, raw] of files) {
    const digest = parseDigest(raw) as string;
    if ((await store.blobSize(digest)) === null) throw new CreateError(400, `blob ${digest} for file "${file}" not found; upload it first with POST /api/blobs/${digest}`);
    paths.set(file, store.blobPath(digest));
  }
  let plan;
  try {
    plan = await planConversion(paths);
  } catch (e) {
    if (e instanceof ConvertError) throw new CreateError(400, e.message);
    throw e;
  }
  const status = "converting model";
  // Clients key progress bars by digest: not the quantizer's "000…0", or its bar would be this one.
  const digest = "0000000000000000001";
  let last = 0;
  const res = await writeDerivedBlob(store, "convert", (tmp) => {
    progress({ status, digest, total: plan.totalBytes, completed: 0 });
    return writeConversion(
      plan,
      tmp,
      (done) => {
        const now = Date.now();
        if (now - last < 60 && done < plan.totalBytes) return;
        last = now;
        progress({ status, digest, total: plan.totalBytes, completed: done });
      },
      signal,
    );
  });
  written.push(res.digest);
  return [["model.gguf", res.digest]];
}
