// Builds a model from /api/create: weights from uploaded GGUF blobs (`files`) or an existing
// model (`from`), plus template/system/params/messages/license layers, then writes the manifest.
// A failed create leaves no manifest and removes the blobs only it had referenced.
import path from "node:path";
import type { ProgressResponse } from "../api/types.js";
import { GgufError, ggufFacts, readGgufInfo } from "./gguf.js";
import type { ModelResolver } from "./model-spec.js";
import { OPTION_TYPES } from "./modelfile.js";
import { parseDigest, type ModelName } from "./name.js";
import {
  MEDIA_TYPE_CONFIG,
  MEDIA_TYPE_LICENSE,
  MEDIA_TYPE_MANIFEST,
  MEDIA_TYPE_MESSAGES,
  MEDIA_TYPE_MODEL,
  MEDIA_TYPE_PARAMS,
  MEDIA_TYPE_PROMPT,
  MEDIA_TYPE_SYSTEM,
  MEDIA_TYPE_TEMPLATE,
  type Layer,
  type ModelConfigBlob,
  type Store,
} from "./store.js";

export class CreateError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface CreateInput {
  name: ModelName;
  from?: string;
  files?: Record<string, string>;
  template?: string;
  system?: string;
  license?: string | string[];
  parameters?: Record<string, unknown>;
  messages?: Array<{ role: string; content: string }>;
}

type Progress = (p: ProgressResponse) => void;

const ROLES = new Set(["system", "user", "assistant"]);
const REPLACED_BY_NEW = new Set([MEDIA_TYPE_TEMPLATE, MEDIA_TYPE_PROMPT, MEDIA_TYPE_SYSTEM, MEDIA_TYPE_MESSAGES, MEDIA_TYPE_PARAMS]);

function checkParameters(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) {
    const type = OPTION_TYPES[k];
    if (!type) throw new CreateError(400, `unknown parameter '${k}'`);
    const ok =
      type === "string[]"
        ? typeof v === "string" || (Array.isArray(v) && v.every((x) => typeof x === "string"))
        : type === "bool"
          ? typeof v === "boolean"
          : typeof v === "number" && Number.isFinite(v);
    if (!ok) throw new CreateError(400, `invalid value for parameter '${k}': ${JSON.stringify(v)}`);
    out[k] = type === "string[]" && typeof v === "string" ? [v] : type === "int" ? Math.trunc(v as number) : v;
  }
  return out;
}

export async function createModel(store: Store, models: ModelResolver, input: CreateInput, progress: Progress): Promise<void> {
  const files = Object.entries(input.files ?? {});
  if (!input.from && files.length === 0) throw new CreateError(400, "neither 'from' or 'files' was specified");
  for (const [file, digest] of files) {
    if (path.isAbsolute(file) || file.split(/[\\/]/).includes("..")) throw new CreateError(400, "file path must be relative");
    if (!parseDigest(digest)) throw new CreateError(400, "invalid digest format");
  }
  for (const m of input.messages ?? []) {
    if (!ROLES.has(m.role)) throw new CreateError(400, `invalid message role '${m.role}' (use system, user or assistant)`);
  }
  const newParams = checkParameters(input.parameters ?? {});

  const written: string[] = files.map(([, d]) => d);
  try {
    await build(store, models, input, files, newParams, progress, written);
  } catch (err) {
    await store.pruneUnreferencedBlobs(written).catch(() => undefined);
    throw err;
  }
}

async function build(
  store: Store,
  models: ModelResolver,
  input: CreateInput,
  files: Array<[string, string]>,
  newParams: Record<string, unknown>,
  progress: Progress,
  written: string[],
): Promise<void> {
  let layers: Layer[] = [];
  let inheritedParams: Record<string, unknown> = {};
  let config: Partial<ModelConfigBlob> = {};

  if (files.length > 0) {
    // Every file is checked before the first progress line, so a bad file gets a real 400
    // status even on a streamed create.
    const parsed = [];
    for (const [file, raw] of files) {
      const digest = parseDigest(raw) as string;
      if (!(await store.hasBlob(digest))) throw new CreateError(400, `blob ${digest} for file "${file}" not found; upload it first with POST /api/blobs/${digest}`);
      try {
        parsed.push({ digest, info: await readGgufInfo(store.blobPath(digest)) });
      } catch (err) {
        if (err instanceof GgufError) throw new CreateError(400, `${file}: ${err.message}`);
        throw err;
      }
    }
    progress({ status: "parsing GGUF" });
    for (const { digest, info } of parsed) {
      const facts = ggufFacts(info);
      const size = (await store.blobSize(digest)) ?? info.fileSize;
      layers.push({ mediaType: MEDIA_TYPE_MODEL, digest, size });
      progress({ status: `using existing layer ${digest}` });
      config = {
        model_format: "gguf",
        model_family: facts.family,
        model_families: [facts.family],
        model_type: facts.parameterSize,
        file_type: facts.quantizationLevel,
        ...(facts.contextLength ? { context_length: facts.contextLength } : {}),
        ...(facts.embeddingLength ? { embedding_length: facts.embeddingLength } : {}),
      };
    }
  } else if (input.from) {
    const base = await models.resolve(input.from).catch((err: Error) => {
      throw new CreateError(400, err.message);
    });
    if (!base) throw new CreateError(404, `model '${input.from}' not found`);
    layers = base.manifest.manifest.layers.filter((l) => !(REPLACED_BY_NEW.has(l.mediaType) && replaces(input, l.mediaType)));
    inheritedParams = base.params;
    config = { ...base.config };
    for (const l of layers) progress({ status: `using existing layer ${l.digest}` });
  }

  const addText = async (mediaType: string, text: string) => {
    const { digest, size } = await store.writeBlobBytes(text);
    written.push(digest);
    layers.push({ mediaType, digest, size });
    progress({ status: `creating new layer ${digest}` });
  };
  if (input.template !== undefined) await addText(MEDIA_TYPE_TEMPLATE, input.template);
  if (input.system !== undefined) await addText(MEDIA_TYPE_SYSTEM, input.system);
  if (Object.keys(newParams).length > 0) {
    layers = layers.filter((l) => l.mediaType !== MEDIA_TYPE_PARAMS);
    await addText(MEDIA_TYPE_PARAMS, JSON.stringify({ ...inheritedParams, ...newParams }));
  }
  if (input.messages && input.messages.length > 0) await addText(MEDIA_TYPE_MESSAGES, JSON.stringify(input.messages));
  const licenses = input.license === undefined ? [] : Array.isArray(input.license) ? input.license : [input.license];
  for (const text of licenses) await addText(MEDIA_TYPE_LICENSE, text);

  const configBlob = {
    ...config,
    model_format: config.model_format ?? "gguf",
    model_family: config.model_family ?? "",
    model_families: config.model_families ?? [],
    model_type: config.model_type ?? "",
    file_type: config.file_type ?? "",
    architecture: "amd64",
    os: "linux",
    rootfs: { type: "layers" as const, diff_ids: layers.map((l) => l.digest) },
  };
  const cfg = await store.writeBlobBytes(JSON.stringify(configBlob));
  written.push(cfg.digest);

  progress({ status: "writing manifest" });
  const previous = await store.readManifest(input.name).catch(() => null);
  await store.writeManifest(input.name, {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE_MANIFEST,
    config: { mediaType: MEDIA_TYPE_CONFIG, digest: cfg.digest, size: cfg.size },
    layers,
  });
  if (previous) {
    // Blobs only the replaced manifest used are now garbage.
    await store.pruneUnreferencedBlobs([previous.manifest.config, ...previous.manifest.layers].map((l) => l.digest));
  }
  progress({ status: "success" });
}

function replaces(input: CreateInput, mediaType: string): boolean {
  switch (mediaType) {
    case MEDIA_TYPE_TEMPLATE:
    case MEDIA_TYPE_PROMPT:
      return input.template !== undefined;
    case MEDIA_TYPE_SYSTEM:
      return input.system !== undefined;
    case MEDIA_TYPE_MESSAGES:
      return (input.messages?.length ?? 0) > 0;
    default:
      return false; // params are merged, not replaced
  }
}
