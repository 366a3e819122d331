// /api/create's draft model (speculative decoding; Ollama's `draft_files`, `draft_quantize` and
// the Modelfile's DRAFT): one GGUF blob stored as a layer of its own media type, checked like any
// model file and against the model's vocabulary (draft-check.ts) before the first progress line,
// optionally quantized from F32/F16/BF16.
import type { ProgressResponse } from "../api/types.js";
import { GgufError, type GgufInfo } from "./gguf.js";
import type { CreateInput } from "./create.js";
import { checkFiles, CreateError, ggufLayers, requestedQuantization, type GgufLayer } from "./create-files.js";
import { draftKindRefusal, draftVocabularyDifference } from "./draft-check.js";
import { MEDIA_TYPE_DRAFT } from "./manifest.js";
import { sourceFileType, type QuantizeTarget } from "./quantize.js";
import { quantizeLayer } from "./quantize-layer.js";
import type { Store } from "./store.js";

/** Ollama's words (server/create.go errRemoteDraftUnsupported). */
export const DRAFT_REMOTE = "DRAFT cannot be used with remote models";
const QUANTIZABLE = ["F32", "F16", "BF16"];

/** A checked request for a draft: its one file and the quantization asked for it. */
export interface DraftPlan {
  files: Array<[string, string]>;
  quantize?: QuantizeTarget;
}

/** The draft fields of a request, checked before anything is read (400s with Ollama's words). */
export function checkDraftRequest(input: Pick<CreateInput, "draftFiles" | "draftQuantize">, remote: boolean): DraftPlan | undefined {
  const files = checkFiles(input.draftFiles);
  if (input.draftQuantize && files.length === 0) throw new CreateError(400, "--draft-quantize requires a DRAFT model");
  if (files.length === 0) return undefined;
  if (remote) throw new CreateError(400, DRAFT_REMOTE);
  // Ollama also takes a split GGUF's parts; a draft is small, and one file is all ollamats reads.
  if (files.length > 1) throw new CreateError(400, `a DRAFT is one GGUF file; got ${files.length} files`);
  const quantize = requestedQuantization(input.draftQuantize);
  return { files, ...(quantize ? { quantize } : {}) };
}

/**
 * Reads the draft's GGUF and checks it against the model it will draft for (absent when the
 * request has no model, which is refused later with Ollama's "no base model was found").
 */
export async function attachDraft(store: Store, plan: DraftPlan, model: { path: string; info: GgufInfo } | undefined): Promise<GgufLayer> {
  const [draft] = await ggufLayers(store, plan.files, MEDIA_TYPE_DRAFT);
  if (!draft) throw new CreateError(400, "a DRAFT needs one GGUF file");
  const name = plan.files[0]?.[0] ?? "draft";
  const kind = draftKindRefusal(draft.info);
  if (kind) throw new CreateError(400, `${name}: ${kind}`);
  if (plan.quantize && sourceFileType(draft.info) !== plan.quantize && !QUANTIZABLE.includes(sourceFileType(draft.info))) {
    throw new CreateError(400, `draft quantization requires an unquantized draft model, got ${sourceFileType(draft.info)}`);
  }
  if (!model) return draft;
  const why = await draftVocabularyDifference(model.path, store.blobPath(draft.layer.digest)).catch((err: unknown) => {
    if (err instanceof GgufError) throw new CreateError(400, `${name}: ${err.message}`);
    throw err;
  });
  if (why) throw new CreateError(400, `draft model's vocabulary does not match the model's (${why}); use a draft of the same model family, made with the same tokenizer`);
  return draft;
}

/** The draft quantized as `draft_quantize` asks; undefined when it already is of that type. */
export async function quantizeDraft(
  store: Store,
  draft: GgufLayer,
  target: QuantizeTarget,
  progress: (p: ProgressResponse) => void,
  signal?: AbortSignal,
): Promise<{ layer: GgufLayer["layer"]; created: boolean } | undefined> {
  if (sourceFileType(draft.info) === target) return undefined;
  return quantizeLayer(store, draft.layer, draft.info, target, progress, signal);
}
