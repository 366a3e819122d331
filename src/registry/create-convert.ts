// `create` from a safetensors model directory: the uploaded files (name → blob) are checked and
// converted into one GGUF blob (hf-convert.ts) before the create goes on as for a GGUF file, with
// Ollama's "converting model" progress.
import type { ProgressResponse } from "../api/types.js";
import { CreateError, uploadedBlob } from "./create-files.js";
import { progressLines, writeDerivedBlob } from "./derived-blob.js";
import { ConvertError, planConversion, writeConversion } from "./hf-convert.js";
import type { Store } from "./store.js";

/** The converted model as the one GGUF file of the create; its digest joins `written`. */
export async function convertedFiles(store: Store, files: Array<[string, string]>, progress: (p: ProgressResponse) => void, written: string[], signal?: AbortSignal): Promise<Array<[string, string]>> {
  const paths = new Map<string, string>();
  for (const [file, raw] of files) paths.set(file, (await uploadedBlob(store, file, raw)).path);
  let plan;
  try {
    plan = await planConversion(paths);
  } catch (e) {
    if (e instanceof ConvertError) throw new CreateError(400, e.message);
    throw e;
  }
  // Clients key progress bars by digest: not the quantizer's "000…0", or its bar would be this one.
  const res = await writeDerivedBlob(store, "convert", (tmp) =>
    writeConversion(plan, tmp, progressLines(progress, "converting model", "0000000000000000001", plan.totalBytes), signal),
  );
  written.push(res.digest);
  return [["model.gguf", res.digest]];
}
