// A GGUF file's tensors as comparable records: what a conversion test checks byte for byte.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { readGgufInfo } from "../../src/registry/gguf.js";

/** Every tensor's name, type, dims and the sha256 of its bytes, in name order. */
export async function tensorsOf(file: string): Promise<Array<{ name: string; type: string; dims: number[]; sha: string }>> {
  const info = await readGgufInfo(file);
  const bytes = await readFile(file);
  return info.tensors
    .map((t) => ({ name: t.name, type: t.typeName, dims: t.dims, sha: createHash("sha256").update(bytes.subarray(info.dataOffset + t.offset, info.dataOffset + t.offset + t.bytes)).digest("hex") }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}
