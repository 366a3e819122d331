// The daemon's long-lived copy of a GGUF header, without the arrays nobody reads per request.
import type { GgufInfo, GgufValue } from "./gguf.js";

/** Arrays longer than this are emptied in a slim copy: vocabularies, merges and scores, never
 *  per-layer values (a few hundred at most). */
const SLIM_ARRAY_MAX = 4096;

/**
 * What the daemon keeps of a GGUF header for as long as the model is known: everything except
 * long arrays (a 128k vocabulary with its merges is tens of MB of JS strings), whose lengths and
 * the special tokens' texts are kept instead. `ollamats show --verbose` reads the file again.
 */
export function slimGgufInfo(info: GgufInfo): GgufInfo {
  const metadata = Object.create(null) as Record<string, GgufValue>;
  const arrayLengths: Record<string, number> = {};
  for (const [key, value] of Object.entries(info.metadata)) {
    if (Array.isArray(value) && value.length > SLIM_ARRAY_MAX) {
      metadata[key] = [];
      arrayLengths[key] = value.length;
    } else metadata[key] = value;
  }
  const specialTokenTexts: Record<number, string> = {};
  const tokens = info.metadata["tokenizer.ggml.tokens"];
  for (const [key, id] of Object.entries(info.metadata)) {
    if (!/^tokenizer\.ggml\.\w+_token_id$/.test(key) || typeof id !== "number" || !Array.isArray(tokens)) continue;
    const text = tokens[id];
    if (typeof text === "string") specialTokenTexts[id] = text;
  }
  return { ...info, metadata, arrayLengths, specialTokenTexts };
}

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
