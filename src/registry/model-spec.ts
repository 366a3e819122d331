// Resolves a model name to a ModelSpec: the immutable description of a model that the rest of
// the daemon consumes (its source — local GGUF weights or remote engines —, template, system,
// params, messages, capabilities).
import { OllamaTemplate } from "../template/ollama.js";
import { buildsThinkingTags, inferThinkingTagsFromTree, jinjaThinkingTags } from "../template/thinking-tags.js";
import { GgufError, readGgufInfo, ggufFacts, type GgufFacts, type GgufInfo } from "./gguf.js";
import { parseModelName, displayName, type ModelName } from "./name.js";
import {
  MEDIA_TYPE_ADAPTER,
  MEDIA_TYPE_DRAFT,
  MEDIA_TYPE_LICENSE,
  MEDIA_TYPE_MESSAGES,
  MEDIA_TYPE_MODEL,
  MEDIA_TYPE_PARAMS,
  MEDIA_TYPE_SYSTEM,
  MEDIA_TYPE_TEMPLATE,
  type ModelConfigBlob,
} from "./manifest.js";
import type { Store, StoredManifest } from "./store.js";

export interface SpecMessage {
  role: string;
  content: string;
}

/** Weights in the store: a GGUF blob, with its (slim) header and the facts Ollama derives. */
export interface GgufSource {
  kind: "gguf";
  path: string;
  digest: string;
  /** Blob paths of the ADAPTER (LoRA) layers, in manifest order. */
  adapters: string[];
  gguf: GgufInfo;
  facts: GgufFacts;
  /** The DRAFT model that proposes tokens for this one (speculative decoding), if it has one. */
  draft?: DraftSource;
}

/** A draft model's GGUF blob and its (slim) header, for the memory plan. */
export interface DraftSource {
  path: string;
  digest: string;
  gguf: GgufInfo;
}

/** Ollama's remote stub: the model runs on other engines (config `remote_host`, `remote_model`). */
export interface RemoteSource {
  kind: "remote";
  /** `remote_host` as stored: one upstream URL, or several replicas separated by commas. */
  host: string;
  /** The model's name upstream. */
  model: string;
}

export type ModelSource = GgufSource | RemoteSource;

export interface ModelSpec {
  name: ModelName;
  shortName: string;
  manifest: StoredManifest;
  source: ModelSource;
  template?: string;
  system?: string;
  params: Record<string, unknown>;
  messages: SpecMessage[];
  licenses: string[];
  config: Partial<ModelConfigBlob>;
  capabilities: string[];
}

/** The GGUF source of a local model; undefined for a remote one. */
export function ggufSource(spec: Pick<ModelSpec, "source">): GgufSource | undefined {
  return spec.source.kind === "gguf" ? spec.source : undefined;
}

export class InvalidModelNameError extends Error {
  constructor() {
    super("invalid model name");
  }
}

const LEGACY_TEMPLATE = "application/vnd.ollama.image.prompt";

export class ModelResolver {
  // GGUF headers are parsed once per blob; a blob's content never changes.
  private readonly ggufCache = new Map<string, Promise<GgufInfo>>();
  private readonly specCache = new Map<string, Promise<ModelSpec>>();

  constructor(private readonly store: Store) {}

  /** null when the model is not in the store; throws InvalidModelNameError for a bad name. */
  async resolve(raw: string): Promise<ModelSpec | null> {
    const name = parseModelName(raw);
    if (!name) throw new InvalidModelNameError();
    const stored = await this.store.readManifest(name);
    if (!stored) return null;
    return this.fromManifest(stored);
  }

  /**
   * Specs are cached per manifest content and name: blobs never change, so a manifest with the
   * same bytes always yields the same spec and the per-request cost is one manifest read.
   */
  async fromManifest(stored: StoredManifest): Promise<ModelSpec> {
    const key = `${displayName(stored.name)}\0${stored.digest}\0${stored.mtime.getTime()}`;
    let p = this.specCache.get(key);
    if (!p) {
      if (this.specCache.size > 256) this.specCache.clear();
      p = this.buildSpec(stored);
      p.catch(() => this.specCache.delete(key));
      this.specCache.set(key, p);
    }
    return p;
  }

  private async buildSpec(stored: StoredManifest): Promise<ModelSpec> {
    const layers = stored.manifest.layers;
    let config: Partial<ModelConfigBlob> = {};
    try {
      config = (await this.store.readBlobJson(stored.manifest.config.digest)) as Partial<ModelConfigBlob>;
    } catch {
      // A missing config blob only loses the details shown by /api/tags; the model still runs.
    }
    const source = await this.sourceOf(stored, config);

    const textOf = async (mediaTypes: string[]) => {
      const layer = [...layers].reverse().find((l) => mediaTypes.includes(l.mediaType));
      return layer ? this.store.readBlobText(layer.digest) : undefined;
    };
    const template = await textOf([MEDIA_TYPE_TEMPLATE, LEGACY_TEMPLATE]);
    const system = await textOf([MEDIA_TYPE_SYSTEM]);
    const paramsLayer = layers.find((l) => l.mediaType === MEDIA_TYPE_PARAMS);
    const params = paramsLayer ? ((await this.store.readBlobJson(paramsLayer.digest)) as Record<string, unknown>) : {};
    const messagesLayer = layers.find((l) => l.mediaType === MEDIA_TYPE_MESSAGES);
    const messages = messagesLayer ? ((await this.store.readBlobJson(messagesLayer.digest)) as SpecMessage[]) : [];
    const licenses: string[] = [];
    for (const l of layers) if (l.mediaType === MEDIA_TYPE_LICENSE) licenses.push(await this.store.readBlobText(l.digest));

    const spec: ModelSpec = {
      name: stored.name,
      shortName: displayName(stored.name),
      manifest: stored,
      source,
      template,
      system,
      params: params ?? {},
      messages: Array.isArray(messages) ? messages : [],
      licenses,
      config,
      capabilities: [],
    };
    spec.capabilities = capabilitiesOf(spec);
    return spec;
  }

  /** A remote stub when the config names a remote host; else the GGUF weights layer. */
  private async sourceOf(stored: StoredManifest, config: Partial<ModelConfigBlob>): Promise<ModelSource> {
    if (typeof config.remote_host === "string" && config.remote_host !== "") {
      return { kind: "remote", host: config.remote_host, model: typeof config.remote_model === "string" && config.remote_model !== "" ? config.remote_model : displayName(stored.name) };
    }
    const layers = stored.manifest.layers;
    const modelLayer = layers.find((l) => l.mediaType === MEDIA_TYPE_MODEL);
    if (!modelLayer) throw new Error(`model ${displayName(stored.name)} has no GGUF weights layer`);
    const path = this.store.blobPath(modelLayer.digest);
    const checked = (digest: string, file: string, what: string) =>
      this.gguf(digest, file).catch((err: unknown) => {
        // A model stored before its file was checked (or by another program): say what to do.
        if (!(err instanceof GgufError)) throw err;
        const name = displayName(stored.name);
        throw new GgufError(`model '${name}' cannot be used: ${what}${err.message}; remove it with 'ollamats rm ${name}' and create or pull it again`);
      });
    const gguf = await checked(modelLayer.digest, path, "");
    const draftLayer = layers.find((l) => l.mediaType === MEDIA_TYPE_DRAFT);
    const draftPath = draftLayer ? this.store.blobPath(draftLayer.digest) : undefined;
    const draft = draftLayer && draftPath ? { path: draftPath, digest: draftLayer.digest, gguf: await checked(draftLayer.digest, draftPath, "its draft model: ") } : undefined;
    return {
      kind: "gguf",
      path,
      digest: modelLayer.digest,
      adapters: layers.filter((l) => l.mediaType === MEDIA_TYPE_ADAPTER).map((l) => this.store.blobPath(l.digest)),
      gguf,
      facts: ggufFacts(gguf),
      ...(draft ? { draft } : {}),
    };
  }

  private gguf(digest: string, path: string): Promise<GgufInfo> {
    let p = this.ggufCache.get(digest);
    if (!p) {
      p = readGgufInfo(path); // slim: long arrays are read past, not kept
      p.catch(() => this.ggufCache.delete(digest));
      this.ggufCache.set(digest, p);
    }
    return p;
  }
}

/**
 * Ollama's capability derivation (reference §1.11, server/images.go goTemplateCapabilities): from
 * the GGUF and the template. With a Go TEMPLATE: `tools` if it uses .Tools, `insert` if it uses
 * .Suffix, `thinking` if thinking tags can be inferred from it; a template that does not parse
 * gives none of those. Without one (or with a RENDERER, which the GGUF's own template stands in
 * for), the GGUF's Jinja template: `tools`/`tool_call` → tools, a pair of thinking tags
 * (`<think>`…`</think>` and the others jinjaThinkingTags knows) → thinking. Never `vision`: this
 * engine has no multimodal support.
 */
export function capabilitiesOf(spec: Pick<ModelSpec, "source" | "template" | "config">): string[] {
  if (spec.source.kind === "remote") return remoteCapabilities(spec.config);
  const caps = templateCapabilities(spec);
  // Ollama's parser and family rules: the harmony parser reads tool calls and thinking, and a
  // gpt-oss model always thinks.
  const add = (c: string) => caps.includes(c) || caps.push(c);
  const name = spec.config.parser;
  const parser = typeof name === "string" && Object.hasOwn(PARSER_CAPABILITIES, name) ? PARSER_CAPABILITIES[name] : undefined;
  if (parser) parser.forEach(add);
  if (spec.config.model_family === "gptoss" || spec.config.model_family === "gpt-oss") add("thinking");
  return caps;
}

/** What Ollama's model-specific parsers read (their HasToolSupport/HasThinkingSupport), by the
 *  name a Modelfile PARSER or a registry model's config gives; src/daemon/prompt reads them. */
const PARSER_CAPABILITIES: Readonly<Record<string, readonly string[]>> = {
  harmony: ["tools", "thinking"],
  qwen3: ["tools"],
  "qwen3-thinking": ["tools", "thinking"],
  "qwen3.5": ["tools", "thinking"],
  ornith: ["tools", "thinking"],
  "qwen3-coder": ["tools"],
  "qwen3-vl-instruct": ["tools"],
  "qwen3-vl-thinking": ["tools", "thinking"],
  ministral: ["tools"],
  deepseek3: ["tools", "thinking"],
  "nemotron-3-nano": ["tools", "thinking"],
  "nemotron-3.5-nano": ["tools", "thinking"],
  "glm-4.6": ["tools", "thinking"],
  "glm-4.7": ["tools", "thinking"],
  laguna: ["tools", "thinking"],
  "poolside-v1": ["tools", "thinking"],
  gemma4: ["tools", "thinking"],
  "gemma4-no-thinking": ["tools"],
  lfm2: ["tools"],
  "lfm2-thinking": ["tools", "thinking"],
  cohere: ["tools", "thinking"],
  glimmer: ["tools", "thinking"],
};

function templateCapabilities(spec: Pick<ModelSpec, "source" | "template" | "config">): string[] {
  if (spec.source.kind === "remote") return [];
  const facts = spec.source.facts;
  const caps: string[] = [];
  caps.push(facts.isEmbedding ? "embedding" : "completion");
  const goTemplate = spec.config.renderer && facts.chatTemplate ? undefined : spec.template;
  if (goTemplate !== undefined && goTemplate !== "") {
    let t: OllamaTemplate | undefined;
    try {
      t = OllamaTemplate.parse(goTemplate);
    } catch {
      t = undefined; // Ollama logs "model template contains errors" and derives nothing
    }
    if (t) {
      const vars = t.vars();
      if (vars.includes("tools")) caps.push("tools");
      if (vars.includes("suffix")) caps.push("insert");
      const tags = inferThinkingTagsFromTree(t.template.root);
      if (tags.open !== "" && tags.close !== "") caps.push("thinking");
    }
    return caps;
  }
  const jinja = facts.chatTemplate ?? "";
  if (/tools|tool_call/.test(jinja) || facts.toolUseTemplate) caps.push("tools");
  if (jinjaThinkingTags(jinja).open !== "" || buildsThinkingTags(jinja)) caps.push("thinking");
  return caps;
}

/**
 * A remote model has what its config says (Ollama: the capabilities stored at create, from the
 * upstream's /api/show); an OpenAI-API upstream does not say, so anything it may offer is let
 * through and the upstream refuses what it cannot do.
 */
function remoteCapabilities(config: Partial<ModelConfigBlob>): string[] {
  if (Array.isArray(config.capabilities) && config.capabilities.length > 0) return config.capabilities.filter((c) => typeof c === "string");
  return ["completion", "tools", "thinking", "embedding"];
}
