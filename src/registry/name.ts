// Ollama's model name grammar (types/model/name.go) and content digests.
// `[scheme://][host/][namespace/]model[:tag]`, parsed right to left, then filled with defaults.
// Every part that reaches the filesystem is validated here, so a name can never escape the store.

export interface ModelName {
  /** Only set when the input named one; registry traffic defaults to "https". */
  scheme?: "http" | "https";
  host: string;
  namespace: string;
  model: string;
  tag: string;
}

export const DEFAULT_HOST = "registry.ollama.ai";
export const DEFAULT_NAMESPACE = "library";
export const DEFAULT_TAG = "latest";

type PartKind = "host" | "namespace" | "model" | "tag";

/** Go's isValidPart: length, first char [A-Za-z0-9_], then [A-Za-z0-9_-.] (+ ':' in a host). */
function isValidPart(kind: PartKind, s: string): boolean {
  const max = kind === "host" ? 350 : 80;
  if (s.length < 1 || s.length > max) return false;
  if (!/^[A-Za-z0-9_]/.test(s)) return false;
  for (let i = 1; i < s.length; i++) {
    const c = s[i] as string;
    if (/[A-Za-z0-9_-]/.test(c)) continue;
    if (c === "." && kind !== "namespace") continue;
    if (c === ":" && kind === "host") continue;
    return false;
  }
  return true;
}

export function isValidNamespace(s: string): boolean {
  return isValidPart("namespace", s);
}

/**
 * Cut at the last `sep`. An empty side of a present separator becomes a part that fails
 * validation (Go's "!MISSING!"), so `a/` or `:tag` are invalid rather than silently defaulted.
 */
function cutLast(s: string, sep: string): [before: string, after: string] | null {
  const i = s.lastIndexOf(sep);
  if (i < 0) return null;
  return [s.slice(0, i) || "\0", s.slice(i + 1) || "\0"];
}

/** Parse and normalise a model name; null when any part is invalid. */
export function parseModelName(input: string): ModelName | null {
  let s = input;
  let tag = "";
  let namespace = "";
  let host = "";
  let scheme: string | undefined;

  // '/' is illegal in a tag, so a ':' after the last '/' starts the tag (a host port does not).
  if (s.lastIndexOf(":") > s.lastIndexOf("/")) {
    const cut = cutLast(s, ":") as [string, string];
    [s, tag] = cut;
  }
  let model: string;
  const m = cutLast(s, "/");
  if (!m) {
    model = s;
  } else {
    [s, model] = m;
    const ns = cutLast(s, "/");
    if (!ns) {
      namespace = s;
    } else {
      [s, namespace] = ns;
      const sep = s.indexOf("://");
      if (sep >= 0) {
        scheme = s.slice(0, sep);
        host = s.slice(sep + 3);
      } else {
        host = s;
      }
    }
  }

  const name: ModelName = {
    host: host || DEFAULT_HOST,
    namespace: namespace || DEFAULT_NAMESPACE,
    model,
    tag: tag || DEFAULT_TAG,
  };
  if (scheme !== undefined) {
    if (scheme !== "http" && scheme !== "https") return null;
    name.scheme = scheme;
  }
  return isValidName(name) ? name : null;
}

/** All four parts present and valid (Go's IsFullyQualified). */
export function isValidName(n: ModelName): boolean {
  return (
    isValidPart("host", n.host) &&
    isValidPart("namespace", n.namespace) &&
    isValidPart("model", n.model) &&
    isValidPart("tag", n.tag)
  );
}

const eqFold = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();

/** Shortest display form (DisplayShortest): `m:tag`, `ns/m:tag` or `host/ns/m:tag`; tag always shown. */
export function displayName(n: ModelName): string {
  let prefix = "";
  if (!eqFold(n.host, DEFAULT_HOST)) prefix = `${n.host}/${n.namespace}/`;
  else if (!eqFold(n.namespace, DEFAULT_NAMESPACE)) prefix = `${n.namespace}/`;
  return `${prefix}${n.model}:${n.tag}`;
}

/** `host/namespace/model:tag`. */
export function fullName(n: ModelName): string {
  return `${n.host}/${n.namespace}/${n.model}:${n.tag}`;
}

/** Case-insensitive per part, as Ollama matches names against local manifests. */
export function sameName(a: ModelName, b: ModelName): boolean {
  return eqFold(a.host, b.host) && eqFold(a.namespace, b.namespace) && eqFold(a.model, b.model) && eqFold(a.tag, b.tag);
}

/**
 * The four path components under `manifests/` (Ollama stores `localhost:5000` with its colon).
 * Re-validated here so a hand-built ModelName cannot smuggle `..`, `/`, `\` or NUL into a path.
 */
export function manifestPathParts(n: ModelName): [host: string, namespace: string, model: string, tag: string] {
  if (!isValidName(n)) {
    throw new Error(`invalid model name "${n.host}/${n.namespace}/${n.model}:${n.tag}"`);
  }
  return [n.host, n.namespace, n.model, n.tag];
}

/** The name of a manifest file found on disk at `<host>/<namespace>/<model>/<tag>`, or null. */
export function nameFromPathParts(host: string, namespace: string, model: string, tag: string): ModelName | null {
  const n: ModelName = { host, namespace, model, tag };
  return isValidName(n) ? n : null;
}

// ---------------------------------------------------------------------------------------------
// Digests

const DIGEST_RE = /^sha256[:-]([0-9a-fA-F]{64})$/;

/** `sha256:<hex>` or `sha256-<hex>` → canonical `sha256:<lowercase hex>`; null otherwise. */
export function parseDigest(s: string): string | null {
  const m = DIGEST_RE.exec(s);
  return m ? `sha256:${(m[1] as string).toLowerCase()}` : null;
}

/** Blob file name `sha256-<hex>` for a digest in either accepted form; throws on anything else. */
export function digestFileName(d: string): string {
  const digest = parseDigest(d);
  if (digest === null) throw new Error(`invalid digest format "${d}"`);
  return `sha256-${digest.slice(7)}`;
}
