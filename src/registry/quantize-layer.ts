// A GGUF layer of a model being created, re-quantized into a new blob (quantize.ts does the
// arithmetic): the model's weights (`quantize`) or its draft model's (`draft_quantize`), with
// Ollama's progress lines, written where the startup sweep can tell a live writer from a dead one.
import type { ProgressResponse } from "../api/types.js";
import { progressLines, writeDerivedBlob } from "./derived-blob.js";
import { readGgufInfo, type GgufInfo } from "./gguf.js";
import type { Layer } from "./manifest.js";
import { quantizeGguf, sourceFileType, type QuantizeTarget } from "./quantize.js";
import type { Store } from "./store.js";

type Progress = (p: ProgressResponse) => void;

/** Quantize a GGUF layer into a blob of the same media type (`created` false if the store had it). */
export async function quantizeLayer(store: Store, layer: Layer, info: GgufInfo, target: QuantizeTarget, progress: Progress, signal?: AbortSignal): Promise<{ layer: Layer; created: boolean }> {
  const res = await writeDerivedBlob(store, "quantize", async (tmp) => {
    // source bytes done, reported as a share of the layer's size (Ollama's numbers)
    const report = progressLines(progress, `quantizing ${sourceFileType(info)} model to ${target}`, "0000000000000000000", layer.size);
    const out = await quantizeGguf(store.blobPath(layer.digest), tmp, target, (done, total) => report(Math.floor((done / Math.max(total, 1)) * layer.size)), signal);
    progress({ status: "verifying conversion" });
    await readGgufInfo(tmp).catch((e: Error) => {
      throw new Error(`quantized model does not verify: ${e.message}`);
    });
    return out;
  });
  return { layer: { mediaType: layer.mediaType, digest: res.digest, size: res.size }, created: res.created };
}
