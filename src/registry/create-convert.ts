// `create` from a safetensors model directory, or with a safetensors LoRA adapter: the uploaded
// files (name → blob) are checked and converted into one GGUF blob (hf-convert.ts, hf-adapter.ts)
// before the create goes on as for a GGUF file, with Ollama's "converting model" / "converting
// adapter" progress.
import type { ProgressResponse } from "../api/types.js";
import { CreateError, uploadedBlob } from "./create-files.js";
import { progressLines, writeDerivedBlob } from "./derived-blob.js";
import type { GgufInfo } from "./gguf.js";
import { planAdapterConversion } from "./hf-adapter.js";
import { planConversion, writeConversion } from "./hf-convert.js";
import { ConvertError, type ConvertPlan } from "./hf-source.js";
import type { Store } from "./store.js";

/** The converted model as the one GGUF file of the create; its digest joins `written`. */
export async function convertedFiles(store: Store, files: Array<[string, string]>, progress: (p: ProgressResponse) => void, written: string[], signal?: AbortSignal): Promise<Array<[string, string]>> {
  const paths = await blobPaths(store, files);
  if (paths.has("adapter_config.json") && !paths.has("config.json")) {
    throw new CreateError(400, "these files are a LoRA adapter, not a model: create FROM its base model with ADAPTER naming the adapter's directory (or the request's 'adapters')");
  }
  const plan = await planned(() => planConversion(paths));
  // Clients key progress bars by digest: not the quantizer's "000…0", or its bar would be this one.
  return [["model.gguf", await write(store, plan, "converting model", "0000000000000000001", written, progress, signal)]];
}

/** The converted adapter for the base model `base`, as the one adapter file of the create. */
export async function convertedAdapter(
  store: Store,
  files: Array<[string, string]>,
  base: GgufInfo,
  progress: (p: ProgressResponse) => void,
  written: string[],
  signal?: AbortSignal,
): Promise<Array<[string, string]>> {
  const paths = await blobPaths(store, files);
  const plan = await planned(() => planAdapterConversion(paths, base));
  return [["adapter.gguf", await write(store, plan, "converting adapter", "0000000000000000002", written, progress, signal)]];
}

async function blobPaths(store: Store, files: Array<[string, string]>): Promise<Map<string, string>> {
  const paths = new Map<string, string>();
  for (const [file, raw] of files) paths.set(file, (await uploadedBlob(store, file, raw)).path);
  return paths;
}

async function planned(make: () => Promise<ConvertPlan>): Promise<ConvertPlan> {
  try {
    return await make();
  } catch (e) {
    if (e instanceof ConvertError) throw new CreateError(400, e.message);
    throw e;
  }
}

async function write(store: Store, plan: ConvertPlan, status: string, digest: string, written: string[], progress: (p: ProgressResponse) => void, signal?: AbortSignal): Promise<string> {
  const res = await writeDerivedBlob(store, "convert", (tmp) => writeConversion(plan, tmp, progressLines(progress, status, digest, plan.totalBytes), signal));
  written.push(res.digest);
  return res.digest;
}
