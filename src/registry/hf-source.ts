// What every safetensors conversion shares (a model's, an adapter's): the directory's files read
// with a size limit, the tensors of its .safetensors files (headers checked, data not read yet),
// and the plan of the GGUF to write.
import { open, readFile } from "node:fs/promises";
import type { KvEntry } from "./gguf-write.js";
import { tokenizerKvs, TokenizerError, type FamilyTokens } from "./hf-tokenizer.js";
import { readSafetensors, SafetensorsError, type SafetensorsTensor } from "./safetensors.js";

export class ConvertError extends Error {
  override name = "ConvertError";
}

const MAX_JSON = 64 << 20;
const MAX_TOKENIZER = 128 << 20; // the largest real tokenizer.json files are ~35 MB

async function readLimited(file: string, name: string, limit: number): Promise<Buffer> {
  const fh = await open(file, "r");
  try {
    const size = (await fh.stat()).size;
    if (size > limit) throw new ConvertError(`${name} is ${size} bytes, more than the ${limit} this file can be`);
    return await readFile(fh);
  } finally {
    await fh.close();
  }
}

export async function readJson(files: Map<string, string>, name: string, limit = MAX_JSON): Promise<unknown> {
  const file = files.get(name);
  if (!file) return undefined;
  try {
    return JSON.parse((await readLimited(file, name, limit)).toString("utf8"));
  } catch (e) {
    if (e instanceof ConvertError) throw e;
    throw new ConvertError(`${name} is not valid JSON`);
  }
}

export const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
export const count = (v: unknown): number | undefined => (Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : undefined);

export interface Source {
  name: string;
  file: string;
  tensor: SafetensorsTensor;
}

/** The tensors of every .safetensors file in `files` (headers checked, data not read yet); `skip`
 *  names buffers a checkpoint may carry that are no weights (not even checked). */
export async function readSources(files: Map<string, string>, skip?: (tensor: string) => boolean): Promise<Source[]> {
  const sources: Source[] = [];
  for (const [name, file] of [...files].filter(([n]) => n.endsWith(".safetensors")).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    try {
      for (const t of await readSafetensors(file, name, skip)) sources.push({ name: t.name, file, tensor: t });
    } catch (e) {
      if (e instanceof SafetensorsError) throw new ConvertError(e.message);
      throw e;
    }
  }
  return sources;
}

export interface ConvertPlan {
  kvs: KvEntry[];
  tensors: PlannedTensor[];
  /** Bytes of weights read (for progress). */
  totalBytes: number;
}

export interface PlannedTensor {
  name: string;
  /** GGUF dims (innermost first). */
  dims: number[];
  type: "F16" | "F32";
  source?: Source;
  /** Several sources written one after another (a layer's experts, stacked). */
  sources?: Source[];
  /** Reorder rows per head, Llama's q/k (applied last). */
  repackHeads?: number;
  /** The source holds the transpose (read whole; adapters only, whose tensors are small). */
  transposed?: boolean;
  /** Multiply every value (an adapter's per-module scale folded into its B matrix). */
  scale?: number;
  /** Add to every value (Gemma's norms, which Hugging Face stores as w for a scale of 1 + w). */
  add?: number;
  /** Values made here instead of read (rope frequency factors). */
  values?: Float32Array;
}

/** The directory's tokenizer files as GGUF metadata, `rows` tokens (the embedding's rows; a
 *  smaller vocabulary is padded); a 400 when they do not make one that size. */
export async function readTokenizer(files: Map<string, string>, rows: number, family: FamilyTokens = {}, rowsName = "model.embed_tokens.weight"): Promise<KvEntry[]> {
  let tok;
  try {
    const model = files.get("tokenizer.model");
    tok = tokenizerKvs({
      tokenizerJson: await readJson(files, "tokenizer.json", MAX_TOKENIZER),
      tokenizerModel: model ? await readLimited(model, "tokenizer.model", MAX_TOKENIZER) : undefined,
      tokenizerConfig: await readJson(files, "tokenizer_config.json"),
      generationConfig: await readJson(files, "generation_config.json"),
      addedTokensJson: await readJson(files, "added_tokens.json"),
      chatTemplateJson: await readJson(files, "chat_template.json"),
      chatTemplateJinja: files.has("chat_template.jinja") ? (await readLimited(files.get("chat_template.jinja")!, "chat_template.jinja", MAX_JSON)).toString("utf8") : undefined,
    }, rows, family);
  } catch (e) {
    if (e instanceof TokenizerError) throw new ConvertError(e.message);
    throw e;
  }
  if (tok.vocabSize !== rows) throw new ConvertError(`the tokenizer has ${tok.vocabSize} tokens but ${rowsName} has ${rows} rows`);
  return tok.kvs;
}

/** The model's name as llama.cpp's converter writes it (general.name): the last part of
 *  config.json's _name_or_path. llama.cpp reads some families' token attributes by it. */
export function modelNameOf(config: Record<string, unknown>): string {
  const nameOrPath = typeof config._name_or_path === "string" ? config._name_or_path.trim().replace(/\/+$/, "") : "";
  return nameOrPath.split("/").pop()!.slice(0, 256);
}
