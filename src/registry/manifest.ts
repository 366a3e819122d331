// The manifest format: Ollama's media types, the manifest, layer and config-blob shapes, and the
// manifest's byte encoding (Go's encoding/json output) and lenient decoding. Separate from
// store.ts because pull and push handle manifests that are not on disk, and the format does not
// depend on where the bytes are kept.

export const MEDIA_TYPE_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
export const MEDIA_TYPE_CONFIG = "application/vnd.docker.container.image.v1+json";
export const MEDIA_TYPE_MODEL = "application/vnd.ollama.image.model";
export const MEDIA_TYPE_ADAPTER = "application/vnd.ollama.image.adapter";
export const MEDIA_TYPE_PROJECTOR = "application/vnd.ollama.image.projector";
export const MEDIA_TYPE_TEMPLATE = "application/vnd.ollama.image.template";
/** Legacy alias of the template layer. */
export const MEDIA_TYPE_PROMPT = "application/vnd.ollama.image.prompt";
export const MEDIA_TYPE_SYSTEM = "application/vnd.ollama.image.system";
export const MEDIA_TYPE_PARAMS = "application/vnd.ollama.image.params";
export const MEDIA_TYPE_MESSAGES = "application/vnd.ollama.image.messages";
export const MEDIA_TYPE_LICENSE = "application/vnd.ollama.image.license";
export const MEDIA_TYPE_DRAFT = "application/vnd.ollama.image.draft";

export interface Layer {
  mediaType: string;
  digest: string;
  size: number;
  from?: string;
  name?: string;
}

export interface Manifest {
  schemaVersion: 2;
  mediaType: string;
  config: Layer;
  layers: Layer[];
}

export interface ModelConfigBlob {
  model_format: string;
  model_family: string;
  model_families: string[];
  model_type: string;
  file_type: string;
  architecture: string;
  os: string;
  rootfs: { type: "layers"; diff_ids: string[] };
  renderer?: string;
  parser?: string;
  requires?: string;
  remote_host?: string;
  remote_model?: string;
  context_length?: number;
  embedding_length?: number;
  base_name?: string;
  capabilities?: string[];
  /** The draft model stored with it (speculative decoding), as Ollama's model.Draft. */
  draft?: { model_format?: string; architecture?: string };
}

export class CorruptManifestError extends Error {
  override name = "CorruptManifestError";
  constructor(readonly file: string, reason: string) {
    super(`corrupt manifest ${file}: ${reason}`);
  }
}

/** Go's encoding/json output (json.Encoder adds "\n" and escapes <, >, & and U+2028/9). */
export function encodeManifest(m: Manifest): Buffer {
  // Field order and omitempty as manifest.Manifest / manifest.Layer.
  const layer = ({ mediaType, digest, size, from, name }: Layer) => ({
    mediaType, digest, size, ...(from ? { from } : {}), ...(name ? { name } : {}),
  });
  const { schemaVersion, mediaType, config, layers } = m;
  const json = JSON.stringify({ schemaVersion, mediaType, config: layer(config), layers: layers.map(layer) });
  const escaped = json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return Buffer.from(`${escaped}\n`, "utf8");
}

/** Parse manifest bytes with Go's leniency (missing fields are zero) but reject wrong types. */
export function decodeManifest(raw: Buffer | string, file: string): Manifest {
  let v: unknown;
  try {
    v = JSON.parse(raw.toString());
  } catch (e) {
    throw new CorruptManifestError(file, (e as Error).message);
  }
  const obj = (x: unknown, what: string): Record<string, unknown> => {
    if (typeof x !== "object" || x === null || Array.isArray(x)) throw new CorruptManifestError(file, `${what} is not an object`);
    return x as Record<string, unknown>;
  };
  const field = <T>(o: Record<string, unknown>, key: string, type: string, dflt: T): T => {
    const x = o[key];
    if (x === undefined || x === null) return dflt;
    if (typeof x !== type) throw new CorruptManifestError(file, `"${key}" is not a ${type}`);
    return x as T;
  };
  const layer = (x: unknown, what: string): Layer => {
    const o = obj(x, what);
    const [from, name] = [field(o, "from", "string", ""), field(o, "name", "string", "")];
    return {
      mediaType: field(o, "mediaType", "string", ""),
      digest: field(o, "digest", "string", ""),
      size: field(o, "size", "number", 0),
      ...(from ? { from } : {}),
      ...(name ? { name } : {}),
    };
  };
  const top = obj(v, "manifest");
  const layers = top.layers ?? [];
  if (!Array.isArray(layers)) throw new CorruptManifestError(file, `"layers" is not an array`);
  return {
    schemaVersion: field(top, "schemaVersion", "number", 0) as 2,
    mediaType: field(top, "mediaType", "string", ""),
    config: top.config == null ? { mediaType: "", digest: "", size: 0 } : layer(top.config, "config"),
    layers: layers.map((l, i) => layer(l, `layers[${i}]`)),
  };
}
