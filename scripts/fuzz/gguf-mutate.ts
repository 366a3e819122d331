// Mutations of a valid GGUF file: structure-aware edits of the header, the KV region (types,
// lengths, counts, key names, and the architecture and tokenizer keys the loader sizes things
// from) and the tensor infos, then byte-level damage (bit flips, runs, truncation, insertion,
// deletion, an edge value written over a count or length field). Each edit returns a line that
// says what it did.
import { serialize, type GgufDoc } from "./gguf-doc.js";
import { byteLevel } from "./gguf-bytes.js";
import { cloneDoc, type Edit } from "./gguf-edit.js";
import { header, kvGeneric } from "./gguf-kv.js";
import { archFloat, archInt, archShape, bigArrays, chatTemplate, general, tokenizer } from "./gguf-model-keys.js";
import { tensorInfo } from "./gguf-tensors.js";
import type { Rng } from "./prng.js";

export interface GgufMutation {
  bytes: Buffer;
  /** One line per edit, in the order applied. */
  edits: string[];
}

const STRUCTURAL: ReadonlyArray<readonly [number, Edit]> = [
  [2, header], [5, kvGeneric], [7, archInt], [2, archFloat], [3, archShape], [2, general], [5, tokenizer],
  [3, chatTemplate], [1, bigArrays], [6, tensorInfo],
];

/** One case's file: 1–3 structure-aware edits, byte-level damage, or both. */
export function mutateGguf(rng: Rng, base: GgufDoc): GgufMutation {
  const doc = cloneDoc(base);
  const edits: string[] = [];
  const plan = rng.weighted([[6, "structure"], [3, "bytes"], [1, "both"]] as const);
  if (plan !== "bytes") {
    const n = rng.weighted([[6, 1], [3, 2], [1, 3]] as const);
    for (let i = 0; i < n; i++) edits.push(rng.weighted(STRUCTURAL)(rng, doc));
  }
  const s = serialize(doc);
  if (plan === "structure") return { bytes: s.bytes, edits };
  const n = rng.weighted([[7, 1], [2, 2], [1, 4]] as const);
  let bytes = s.bytes;
  for (let i = 0; i < n; i++) {
    const r = byteLevel(rng, { ...s, bytes });
    bytes = r.bytes;
    edits.push(r.edit);
  }
  return { bytes, edits };
}
