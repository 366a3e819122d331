// /api/create (reference §4.8): weights from uploaded GGUF blobs (`files`), from an existing model
// (`from`, pulled first when it is not in the store; `@sha256:<hex>` names a blob), an ADAPTER
// (`adapters`), a DRAFT model (`draft_files`, create-draft.ts), `quantize` and `draft_quantize`
// (quantize-layer.ts), plus template/system/params/messages/license layers and the config blob,
// then the manifest. A failed create leaves no manifest and removes the blobs
// only it had written; a replaced manifest's now-unused blobs are pruned (unless OLLAMA_NOPRUNE).
import type { ProgressResponse } from "../api/types.js";
import { ggufFacts, readGgufInfo, type GgufInfo } from "./gguf.js";
import { ggufSource, type ModelResolver } from "./model-spec.js";
import { optionRefusal } from "../backends/option-ranges.js";
import { parseRemoteHosts, RemoteHostError } from "./remote-host.js";
import { OllamaTemplate } from "../template/ollama.js";
import { detectChatTemplate, type DetectedTemplate } from "./template-detect.js";
import { describeRemote, RemoteModelUnknownError, type RemoteDescription } from "./remote-describe.js";
import { OPTION_TYPES } from "./modelfile.js";
import { displayName, parseDigest, parseModelName, type ModelName } from "./name.js";
import { sourceFileType, type QuantizeTarget } from "./quantize.js";
import { quantizeLayer } from "./quantize-layer.js";
import { convertedAdapter, convertedFiles } from "./create-convert.js";
import { checkFiles, CreateError, ggufLayers, requestedQuantization, type GgufLayer } from "./create-files.js";
import { hasSafetensors } from "./safetensors.js";
import { attachDraft, checkDraftRequest, DRAFT_REMOTE, quantizeDraft, type DraftPlan } from "./create-draft.js";
import {
  MEDIA_TYPE_ADAPTER,
  MEDIA_TYPE_CONFIG,
  MEDIA_TYPE_DRAFT,
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
} from "./manifest.js";
import type { Store } from "./store.js";

export { CreateError };


export interface CreateInput {
  name: ModelName;
  from?: string;
  files?: Record<string, string>;
  adapters?: Record<string, string>;
  /** The draft model for speculative decoding (Ollama's `draft_files`): one GGUF blob. */
  draftFiles?: Record<string, string>;
  /** Quantize the draft (F32/F16/BF16) to this type (`draft_quantize`). */
  draftQuantize?: string;
  template?: string;
  system?: string;
  license?: string | string[];
  parameters?: Record<string, unknown>;
  messages?: Array<{ role: string; content: string }>;
  quantize?: string;
  requires?: string;
  renderer?: string;
  parser?: string;
  /** A remote model: its upstream(s) (remote-host.ts) and its name there (default: `from`). */
  remoteHost?: string;
  remoteModel?: string;
}

type Progress = (p: ProgressResponse) => void;

export interface CreateContext {
  /** Pull a model that `from` names but the store lacks (Ollama pulls it). */
  pull?: (name: ModelName, progress: Progress) => Promise<void>;
  /** OLLAMA_NOPRUNE */
  noPrune?: boolean;
  /** Bearer keys of remote upstreams (OLLAMATS_REMOTE_KEYS), to ask them about a remote model. */
  remoteKeys?: Readonly<Record<string, string>>;
  signal?: AbortSignal;
}

const ROLES = new Set(["system", "user", "assistant"]);
const REPLACED_BY_NEW = new Set([MEDIA_TYPE_TEMPLATE, MEDIA_TYPE_PROMPT, MEDIA_TYPE_SYSTEM, MEDIA_TYPE_MESSAGES, MEDIA_TYPE_PARAMS]);
const QUANTIZABLE_SOURCES = ["F16", "BF16", "F32"];
/** A blob named as a model source: `@sha256:<hex>` (the form old Ollama CLIs sent). */
const BLOB_REF = /^@(sha256[:-][0-9a-fA-F]{64})$/;

function checkParameters(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) {
    const type = Object.hasOwn(OPTION_TYPES, k) ? OPTION_TYPES[k] : undefined;
    if (!type) throw new CreateError(400, `unknown parameter '${k}'`);
    const ok =
      type === "string[]"
        ? typeof v === "string" || (Array.isArray(v) && v.every((x) => typeof x === "string"))
        : type === "bool"
          ? typeof v === "boolean"
          : typeof v === "number" && Number.isFinite(v);
    if (!ok) throw new CreateError(400, `invalid value for parameter '${k}': ${JSON.stringify(v)}`);
    const value = type === "string[]" && typeof v === "string" ? [v] : type === "int" ? Math.trunc(v as number) : v;
    // A value every later request would refuse is not stored (values past a limit are clamped at use).
    const why = optionRefusal(k, value);
    if (why) throw new CreateError(400, `invalid value for parameter '${k}': ${why}`);
    out[k] = value;
  }
  return out;
}




export async function createModel(store: Store, models: ModelResolver, input: CreateInput, progress: Progress, ctx: CreateContext = {}): Promise<void> {
  // Everything that can be checked without reading a model comes before the first progress
  // line, so a bad request gets its real status even when streamed.
  const files = checkFiles(input.files);
  const adapters = checkFiles(input.adapters);
  const remote = input.remoteHost !== undefined ? checkRemote(input, files.length + adapters.length > 0) : undefined;
  const draft = checkDraftRequest(input, remote !== undefined);
  let fromBlob: string | undefined;
  let fromName: ModelName | undefined;
  if (input.from && !remote) {
    const m = BLOB_REF.exec(input.from);
    if (m) fromBlob = parseDigest(m[1] as string) as string;
    else {
      const n = parseModelName(input.from);
      if (!n) throw new CreateError(400, "invalid model name");
      fromName = n;
    }
  }
  if (!remote && !fromName && !fromBlob && files.length === 0) throw new CreateError(400, "neither 'from' or 'files' was specified");
  if (adapters.length > 1 && !hasSafetensors(adapters.map(([n]) => n))) throw new CreateError(400, "only one adapter is currently supported");
  for (const m of input.messages ?? []) {
    if (!ROLES.has(m.role)) throw new CreateError(400, `invalid message role '${m.role}' (use system, user or assistant)`);
  }
  const newParams = checkParameters(input.parameters ?? {});
  const quantize = requestedQuantization(input.quantize);

  const written: string[] = [...files, ...adapters, ...(draft?.files ?? [])].map(([, d]) => parseDigest(d) as string);
  if (fromBlob) written.push(fromBlob);
  try {
    await build(store, models, input, { files, adapters, fromBlob, fromName, newParams, quantize, remote, draft }, progress, written, ctx);
  } catch (err) {
    await store.pruneUnreferencedBlobs(written).catch(() => undefined);
    throw err;
  }
}

/** The adapter layer: a GGUF file as it is, or a safetensors adapter converted for the base model. */
async function adapterLayers(store: Store, adapters: Array<[string, string]>, base: GgufInfo | undefined, progress: Progress, written: string[], signal?: AbortSignal): Promise<GgufLayer[]> {
  if (!hasSafetensors(adapters.map(([n]) => n))) return ggufLayers(store, adapters, MEDIA_TYPE_ADAPTER);
  if (!base) throw new CreateError(400, "a safetensors adapter is converted for its base model, and this base model has no local GGUF weights");
  return ggufLayers(store, await convertedAdapter(store, adapters, base, progress, written, signal), MEDIA_TYPE_ADAPTER);
}

interface Plan {
  files: Array<[string, string]>;
  adapters: Array<[string, string]>;
  fromBlob?: string;
  fromName?: ModelName;
  newParams: Record<string, unknown>;
  quantize?: QuantizeTarget;
  remote?: { host: string; model: string };
  draft?: DraftPlan;
}

/** A remote model has no weights here: its upstream(s) must parse, and it needs a name upstream. */
function checkRemote(input: CreateInput, hasFiles: boolean): { host: string; model: string } {
  const host = input.remoteHost ?? "";
  try {
    parseRemoteHosts(host);
  } catch (err) {
    if (err instanceof RemoteHostError) throw new CreateError(400, err.message);
    throw err;
  }
  const model = (input.remoteModel ?? input.from ?? "").trim();
  if (model === "") throw new CreateError(400, "a remote model needs its name upstream: set 'from' (or 'remote_model') with 'remote_host'");
  if (hasFiles || input.quantize) throw new CreateError(400, "a remote model has no local weights: leave out 'files', 'adapters' and 'quantize' with 'remote_host'");
  return { host, model };
}

/** A Go template (an upstream's /api/show may answer a GGUF's Jinja template, which is no TEMPLATE). */
function isGoTemplate(text: string): boolean {
  try {
    OllamaTemplate.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A remote model's config: where it runs, and what its upstream says it is. */
async function remoteConfig(remote: { host: string; model: string }, ctx: CreateContext): Promise<{ config: Partial<ModelConfigBlob>; description?: RemoteDescription }> {
  let d: RemoteDescription | undefined;
  try {
    d = await describeRemote(remote.host, remote.model, ctx.remoteKeys ?? {});
  } catch (err) {
    if (err instanceof RemoteModelUnknownError) throw new CreateError(400, err.message);
    throw err;
  }
  const config: Partial<ModelConfigBlob> = {
    model_format: d?.format ?? "",
    model_family: d?.family ?? "",
    model_families: d?.families ?? [],
    model_type: d?.parameterSize ?? "",
    file_type: d?.quantizationLevel ?? "",
    remote_host: remote.host,
    remote_model: remote.model,
    ...(d?.capabilities?.length ? { capabilities: d.capabilities } : {}),
  };
  return { config, ...(d ? { description: d } : {}) };
}

/** Ollama's create (server/create.go): a GGUF of these architectures gets this renderer and
 *  parser unless the request names its own, and this stop unless the request sets one. */
const ARCH_DEFAULTS: Readonly<Record<string, { renderer: string; parser: string; stop?: string[] }>> = {
  gemma4: { renderer: "gemma4", parser: "gemma4", stop: ["<turn|>"] },
  laguna: { renderer: "laguna", parser: "laguna" },
  nemotron_h: { renderer: "nemotron-3-nano", parser: "nemotron-3-nano" },
  nemotron_h_moe: { renderer: "nemotron-3-nano", parser: "nemotron-3-nano" },
  nemotron_h_omni: { renderer: "nemotron-3-nano", parser: "nemotron-3-nano" },
};

async function build(store: Store, models: ModelResolver, input: CreateInput, plan: Plan, progress: Progress, written: string[], ctx: CreateContext): Promise<void> {
  let layers: Layer[] = [];
  let inheritedParams: Record<string, unknown> = {};
  let config: Partial<ModelConfigBlob> = {};
  let modelInfo: GgufInfo | undefined;
  let draftParsed: GgufLayer | undefined;
  /** The Go template (and stop parameters) Ollama maps the GGUF's chat template to. */
  let detected: DetectedTemplate | undefined;

  const fromFiles = plan.fromBlob ? ([["model.gguf", plan.fromBlob]] as Array<[string, string]>) : plan.files;
  if (plan.remote) {
    const r = await remoteConfig(plan.remote, ctx);
    config = r.config;
    // The upstream's template and system, unless the request sets its own (then shown by `show`).
    const d = r.description;
    if (d?.template !== undefined && input.template === undefined && isGoTemplate(d.template)) input = { ...input, template: d.template };
    if (d?.system !== undefined && input.system === undefined) input = { ...input, system: d.system };
  } else if (fromFiles.length > 0) {
    // All files are parsed (and a bad one refused with 400) before the first progress line; a
    // safetensors directory is checked whole, then converted to one GGUF file first.
    const modelFiles = hasSafetensors(fromFiles.map(([n]) => n)) ? await convertedFiles(store, fromFiles, progress, written, ctx.signal) : fromFiles;
    const parsed = await ggufLayers(store, modelFiles);
    const model = parsed.find((p) => p.layer.mediaType === MEDIA_TYPE_MODEL);
    const adapterParsed = await adapterLayers(store, plan.adapters, model?.info, progress, written, ctx.signal);
    if (plan.quantize && model) checkQuantizable(model.info, plan.quantize);
    if (plan.draft) draftParsed = await attachDraft(store, plan.draft, model ? { path: store.blobPath(model.layer.digest), info: model.info } : undefined);
    for (const p of parsed) {
      progress({ status: "parsing GGUF" });
      layers.push(p.layer);
    }
    for (const p of adapterParsed) {
      progress({ status: "parsing GGUF" });
      layers.push(p.layer);
    }
    if (model) {
      modelInfo = model.info;
      config = configFromGguf(model.info);
      // As Ollama: detected even when the request sets a template (which then replaces it), so
      // the family's stop parameters stay unless the request sets `stop`.
      detected = detectChatTemplate(ggufFacts(model.info).chatTemplate);
      if (detected?.stop) inheritedParams = { stop: detected.stop };
      // Ollama's defaults by architecture: the renderer and parser that family needs, and its stop
      const arch = ggufFacts(model.info).architecture;
      const byArch = Object.hasOwn(ARCH_DEFAULTS, arch) ? ARCH_DEFAULTS[arch] : undefined;
      if (byArch) {
        config = { ...config, renderer: byArch.renderer, parser: byArch.parser };
        if (byArch.stop) inheritedParams = { ...inheritedParams, stop: byArch.stop };
      }
    }
  } else if (plan.fromName) {
    const from = plan.fromName;
    let base = await models.resolve(input.from as string).catch((err: Error) => {
      throw new CreateError(400, err.message);
    });
    if (!base && ctx.pull) {
      await ctx.pull(from, progress);
      base = await models.resolve(input.from as string);
    }
    if (!base) throw new CreateError(404, `model '${input.from}' not found`);
    const source = displayName(base.name);
    layers = base.manifest.manifest.layers
      .filter((l) => !(REPLACED_BY_NEW.has(l.mediaType) && replaces(input, l.mediaType)))
      .map((l) => ({ ...l, from: source }));
    inheritedParams = base.params;
    config = { ...base.config };
    modelInfo = ggufSource(base)?.gguf;
    if (plan.quantize) {
      if (!modelInfo) throw new CreateError(400, "quantization is only supported for F16, BF16 and F32 models");
      checkQuantizable(modelInfo, plan.quantize);
    }
    const weights = ggufSource(base);
    const adapterParsed = await adapterLayers(store, plan.adapters, weights?.gguf, progress, written, ctx.signal);
    if (plan.draft) {
      if (!weights) throw new CreateError(400, DRAFT_REMOTE);
      draftParsed = await attachDraft(store, plan.draft, { path: weights.path, info: weights.gguf });
    }
    for (const p of adapterParsed) {
      progress({ status: "parsing GGUF" });
      if (!layers.some((l) => l.digest === p.layer.digest)) layers.push(p.layer);
    }
  }
  if (draftParsed) {
    // A new draft replaces the one the base model had.
    progress({ status: "parsing GGUF" });
    layers = [...layers.filter((l) => l.mediaType !== MEDIA_TYPE_DRAFT), draftParsed.layer];
    config = { ...config, draft: { model_format: "gguf", architecture: ggufFacts(draftParsed.info).family } };
  }
  if (!plan.remote && !config.remote_host && !layers.some((l) => l.mediaType === MEDIA_TYPE_MODEL)) throw new CreateError(400, "no base model was found");

  if (plan.quantize && modelInfo && sourceFileType(modelInfo) !== plan.quantize) {
    const i = layers.findIndex((l) => l.mediaType === MEDIA_TYPE_MODEL);
    const old = layers[i] as Layer;
    const { layer: q, created } = await quantizeLayer(store, old, modelInfo, plan.quantize, progress, ctx.signal);
    written.push(q.digest);
    layers[i] = q;
    config = { ...config, ...configFromGguf(await readGgufInfo(store.blobPath(q.digest))) };
    progress({ status: `${layerStatus(created)} ${q.digest}` });
  }
  const draftQuantized = draftParsed && plan.draft?.quantize ? await quantizeDraft(store, draftParsed, plan.draft.quantize, progress, ctx.signal) : undefined;
  if (draftQuantized) {
    written.push(draftQuantized.layer.digest);
    layers = layers.map((l) => (l === draftParsed?.layer ? draftQuantized.layer : l));
    progress({ status: `${layerStatus(draftQuantized.created)} ${draftQuantized.layer.digest}` });
  }
  for (const l of layers) {
    const rewritten = (plan.quantize && l.mediaType === MEDIA_TYPE_MODEL && !l.from) || l === draftQuantized?.layer;
    if (!rewritten) progress({ status: `using existing layer ${l.digest}` });
  }

  const addText = async (mediaType: string, text: string, status?: string) => {
    const { digest, size, created } = await store.writeBlobBytes(text);
    written.push(digest);
    layers.push({ mediaType, digest, size });
    progress({ status: status ?? `${layerStatus(created)} ${digest}` });
  };
  if (input.template !== undefined) await addText(MEDIA_TYPE_TEMPLATE, input.template);
  else if (detected) await addText(MEDIA_TYPE_TEMPLATE, detected.template, `using autodetected template ${detected.name}`);
  if (input.system !== undefined) await addText(MEDIA_TYPE_SYSTEM, input.system);
  // A base model's parameters are already among its layers; a file's (detected stop) are new.
  if (Object.keys(plan.newParams).length > 0 || (!plan.fromName && Object.keys(inheritedParams).length > 0)) {
    layers = layers.filter((l) => l.mediaType !== MEDIA_TYPE_PARAMS);
    await addText(MEDIA_TYPE_PARAMS, JSON.stringify({ ...inheritedParams, ...plan.newParams }));
  }
  if (input.messages && input.messages.length > 0) await addText(MEDIA_TYPE_MESSAGES, JSON.stringify(input.messages));
  const licenses = input.license === undefined ? [] : Array.isArray(input.license) ? input.license : [input.license];
  for (const text of licenses) if (text !== "") await addText(MEDIA_TYPE_LICENSE, text);

  const configBlob: ModelConfigBlob = {
    ...config,
    model_format: config.model_format ?? "gguf",
    model_family: config.model_family ?? "",
    model_families: config.model_families ?? [],
    model_type: config.model_type ?? "",
    file_type: config.file_type ?? "",
    ...(input.renderer ? { renderer: input.renderer } : {}),
    ...(input.parser ? { parser: input.parser } : {}),
    ...(input.requires ? { requires: input.requires } : {}),
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
  written.length = 0; // the manifest references them now
  if (previous && !ctx.noPrune) {
    // Blobs only the replaced manifest used are now garbage.
    await store.pruneUnreferencedBlobs([previous.manifest.config, ...previous.manifest.layers].map((l) => l.digest));
  }
  progress({ status: "success" });
}

function configFromGguf(info: GgufInfo): Partial<ModelConfigBlob> {
  const facts = ggufFacts(info);
  return {
    model_format: "gguf",
    model_family: facts.family,
    model_families: [facts.family],
    model_type: facts.parameterSize,
    file_type: facts.quantizationLevel,
    ...(facts.contextLength ? { context_length: facts.contextLength } : {}),
    ...(facts.embeddingLength ? { embedding_length: facts.embeddingLength } : {}),
  };
}

function checkQuantizable(info: GgufInfo, target: QuantizeTarget): void {
  const ft = sourceFileType(info);
  if (ft === target) return;
  if (!QUANTIZABLE_SOURCES.includes(ft)) throw new CreateError(400, "quantization is only supported for F16, BF16 and F32 models");
}

/** Ollama's words for a layer a create wrote, or found in the store already (NewLayer). */
function layerStatus(created: boolean): string {
  return created ? "creating new layer" : "using existing layer";
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
