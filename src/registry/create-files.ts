// The files an /api/create request names (`files`, `adapters`, `draft_files`): their names and
// digests checked as Ollama checks them, then each blob read as a GGUF and classified by layer
// media type; and the error a create answers with (its HTTP status and words).
import path from "node:path";
import { GgufError, readGgufInfo, type GgufInfo } from "./gguf.js";
import { MEDIA_TYPE_ADAPTER, MEDIA_TYPE_MODEL, MEDIA_TYPE_PROJECTOR, type Layer } from "./manifest.js";
import { parseDigest } from "./name.js";
import { parseQuantizeType, QuantizeError, type QuantizeTarget } from "./quantize.js";
import type { Store } from "./store.js";

export class CreateError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function checkFiles(files: Record<string, string> | undefined): Array<[string, string]> {
  const list = Object.entries(files ?? {});
  for (const [file, digest] of list) {
    // fs.ValidPath: relative, slash-separated, no `.`/`..` elements, no empty elements
    const parts = file.split("/");
    if (file === "" || path.isAbsolute(file) || file.includes("\\") || file.includes("\0") || parts.some((p) => p === "" || p === "." || p === "..")) {
      throw new CreateError(400, "file path must be relative");
    }
    if (!parseDigest(digest)) throw new CreateError(400, "invalid digest format");
  }
  return list;
}

export interface GgufLayer {
  layer: Layer;
  info: GgufInfo;
}

/** The uploaded blob a create names for `file` (checked with checkFiles); a 400 when it is missing. */
export async function uploadedBlob(store: Store, file: string, raw: string): Promise<{ digest: string; size: number; path: string }> {
  const digest = parseDigest(raw) as string;
  const size = await store.blobSize(digest);
  if (size === null) throw new CreateError(400, `blob ${digest} for file "${file}" not found; upload it first with POST /api/blobs/${digest}`);
  return { digest, size, path: store.blobPath(digest) };
}

/** Weight files Ollama converts and we do not (safetensors models and adapters are converted before this). */
const UNCONVERTED = /(^|\/)([^/]*\.safetensors|pytorch_model[^/]*\.bin|consolidated[^/]*\.pth)$/;

/** Read and classify uploaded GGUF blobs (model, adapter, projector); 400 for anything else. */
export async function ggufLayers(store: Store, files: Array<[string, string]>, forceMediaType?: string): Promise<GgufLayer[]> {
  const unconverted = files.find(([file]) => UNCONVERTED.test(file));
  if (unconverted) {
    throw new CreateError(
      400,
      `${unconverted[0]}: ollamats converts safetensors models and LoRA adapters, not PyTorch weights or safetensors draft models; convert this to GGUF first (llama.cpp's convert_hf_to_gguf.py, or convert_lora_to_gguf.py for an adapter), then create from the .gguf file`,
    );
  }
  const out: GgufLayer[] = [];
  for (const [file, raw] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const { digest, size, path: blobPath } = await uploadedBlob(store, file, raw);
    let info: GgufInfo;
    try {
      info = await readGgufInfo(blobPath);
    } catch (err) {
      if (err instanceof GgufError) throw new CreateError(400, `${file}: ${err.message}`);
      throw err;
    }
    let mediaType = forceMediaType ?? MEDIA_TYPE_MODEL;
    if (!forceMediaType) {
      const kind = info.metadata["general.type"];
      const arch = info.metadata["general.architecture"];
      if (kind === "adapter") mediaType = MEDIA_TYPE_ADAPTER;
      else if (kind === "projector" || kind === "mmproj" || (arch === "clip" && info.metadata["clip.has_vision_encoder"] !== undefined)) mediaType = MEDIA_TYPE_PROJECTOR;
    }
    out.push({ layer: { mediaType, digest, size }, info });
  }
  return out;
}

/** A `quantize` / `draft_quantize` value as its target type (a 400 for one ollamats cannot make). */
export function requestedQuantization(raw: string | undefined): QuantizeTarget | undefined {
  if (!raw) return undefined;
  try {
    return parseQuantizeType(raw);
  } catch (e) {
    if (e instanceof QuantizeError) throw new CreateError(400, e.message);
    throw e;
  }
}
