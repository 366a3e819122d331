// What makes a GGUF usable as a model's draft (speculative decoding): a text model of its own
// (not an adapter, projector or embedding model) that reads and writes text with exactly the
// model's tokens. The draft proposes token ids and the model checks them as its own ids, so a
// draft with another vocabulary would only ever be refuted, and llama.cpp refuses one whose
// special tokens or size differ at the first generation; here the whole vocabulary is compared
// once, when the model is created.
import { ggufFacts, readGgufInfo, type GgufInfo, type GgufValue } from "./gguf.js";

/** Why this GGUF cannot be a draft model at all, or undefined. */
export function draftKindRefusal(info: GgufInfo): string | undefined {
  const md = info.metadata;
  const kind = md["general.type"];
  const arch = typeof md["general.architecture"] === "string" ? md["general.architecture"] : "";
  if (kind === "adapter" || kind === "projector" || kind === "mmproj" || arch === "clip") return `the draft must be a model, not ${kind === "adapter" ? "an adapter" : "a projector"}`;
  if (ggufFacts(info).isEmbedding) return "the draft must be a text-generation model, not an embedding model";
  return undefined;
}

/** The vocabulary facts llama.cpp's speculative decoding depends on. */
const SAME_VALUE_KEYS = [
  ["tokenizer.ggml.model", "tokenizer"],
  ["tokenizer.ggml.bos_token_id", "BOS token"],
  ["tokenizer.ggml.eos_token_id", "EOS token"],
  ["tokenizer.ggml.add_bos_token", "add_bos_token"],
  ["tokenizer.ggml.add_eos_token", "add_eos_token"],
] as const;

const show = (v: GgufValue | undefined): string => (v === undefined ? "unset" : JSON.stringify(typeof v === "bigint" ? Number(v) : v));

/** How the two vocabularies differ (the first difference), or undefined when they are one. */
export function vocabularyDifference(model: GgufInfo, draft: GgufInfo): string | undefined {
  for (const [key, what] of SAME_VALUE_KEYS) {
    const a = model.metadata[key];
    const b = draft.metadata[key];
    if (show(a) !== show(b)) return `${what} ${show(b)} in the draft, ${show(a)} in the model`;
  }
  const a = model.metadata["tokenizer.ggml.tokens"];
  const b = draft.metadata["tokenizer.ggml.tokens"];
  if (!Array.isArray(a) || !Array.isArray(b)) return "a vocabulary (tokenizer.ggml.tokens) is missing";
  if (a.length !== b.length) return `${b.length} tokens in the draft, ${a.length} in the model`;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return `token ${i} is ${show(b[i])} in the draft, ${show(a[i])} in the model`;
  }
  return undefined;
}

/** Compares the vocabularies of two GGUF files (both read whole: a slim read skips them). */
export async function draftVocabularyDifference(modelPath: string, draftPath: string): Promise<string | undefined> {
  const [model, draft] = await Promise.all([readGgufInfo(modelPath, { arrays: "full" }), readGgufInfo(draftPath, { arrays: "full" })]);
  return vocabularyDifference(model, draft);
}
