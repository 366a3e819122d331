// Reading a GGUF header that may be a slim read (readGgufInfo skips long arrays, keeping lengths).
import type { GgufInfo } from "./gguf.js";

/** The length of an array value, also in a slim copy; undefined when the key is no array. */
export function ggufArrayLength(info: GgufInfo, key: string): number | undefined {
  const v = info.metadata[key];
  if (!Array.isArray(v)) return undefined;
  return info.arrayLengths?.[key] ?? v.length;
}

/** The text of token `id`, from the vocabulary or, in a slim copy, from the special tokens. */
export function ggufTokenText(info: GgufInfo, id: number): string | undefined {
  const kept = info.specialTokenTexts?.[id];
  if (kept !== undefined) return kept;
  const tokens = info.metadata["tokenizer.ggml.tokens"];
  const t = Array.isArray(tokens) ? tokens[id] : undefined;
  return typeof t === "string" ? t : undefined;
}
