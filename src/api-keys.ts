// API keys for an exposed daemon: their syntax (OLLAMA_API_KEYS, the OLLAMA_API_KEYS_FILE format),
// and the constant-time lookup of a presented key. A key is kept only as its SHA-256 digest, so
// no config object, log line or error can carry it; messages name a key by where it was given.

// node:crypto is fetched when a key is first hashed: every CLI command parses the configuration,
// which imports this module, and loading crypto's ~16 internal modules cost it 2-4 ms for nothing.
const crypto = () => process.getBuiltinModule("node:crypto");

/** `all`: every route; `inference`: everything but pull, push, create, copy, delete and blobs. */
export type ApiKeyScope = "all" | "inference";
export const API_KEY_SCOPES: readonly ApiKeyScope[] = ["all", "inference"];

export interface ApiKey {
  /** SHA-256 of the key; the key itself is not kept. */
  readonly digest: Buffer;
  readonly scope: ApiKeyScope;
  /** Where it was given, for messages that must not show it: "OLLAMA_API_KEYS key 2". */
  readonly source: string;
  /** Its length, for the warning about guessable keys. */
  readonly length: number;
}

/** Shorter keys work, but the daemon warns: they can be guessed over the network. */
export const MIN_STRONG_KEY_LENGTH = 16;

/**
 * Visible ASCII except `,` (separates keys in OLLAMA_API_KEYS), `#` (starts a comment in the
 * file) and quotes (stripped from the ends of environment values). A header cannot carry
 * anything else intact, so a key with other characters could never match.
 */
const KEY_CHARS = /^[\x21-\x7e]+$/;
const KEY_FORBIDDEN = /[,#"']/;

export const KEY_RULE = "a key is printable ASCII without spaces, commas, '#' or quotes (make one with: openssl rand -hex 32)";

export function digestKey(key: string): Buffer {
  return crypto().createHash("sha256").update(key, "utf8").digest();
}

/** The reason `key` is not a valid key, or undefined when it is. */
export function keyProblem(key: string): string | undefined {
  if (key === "") return "the key is empty";
  if (!KEY_CHARS.test(key) || KEY_FORBIDDEN.test(key)) return `the key has a character a key may not have: ${KEY_RULE}`;
  return undefined;
}

function makeKey(key: string, scope: ApiKeyScope, source: string): ApiKey {
  return Object.freeze({ digest: digestKey(key), scope, source, length: key.length });
}

/** Thrown with a message that names where the bad key is, never the key. */
export class ApiKeySyntaxError extends Error {
  override name = "ApiKeySyntaxError";
}

/** OLLAMA_API_KEYS: comma-separated keys, each with scope `all`; empty entries are skipped. */
export function parseApiKeyList(text: string, name = "OLLAMA_API_KEYS"): ApiKey[] {
  const keys = text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map((key, i) => {
      const problem = keyProblem(key);
      if (problem !== undefined) throw new ApiKeySyntaxError(`${name}: key ${i + 1}: ${problem}`);
      return makeKey(key, "all", `${name} key ${i + 1}`);
    });
  if (keys.length === 0) throw new ApiKeySyntaxError(`${name}: no keys given (give comma-separated keys, or unset it to turn API keys off)`);
  return keys;
}

/**
 * An OLLAMA_API_KEYS_FILE's text: one key per line, optionally followed by its scope (`all`, the
 * default, or `inference`); `#` starts a comment; blank lines are ignored. `where` names the file
 * in messages.
 */
export function parseApiKeysFile(text: string, where: string): ApiKey[] {
  const keys: ApiKey[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.split("#", 1)[0]!.trim();
    if (line === "") return;
    const at = `${where} line ${i + 1}`;
    const words = line.split(/\s+/);
    if (words.length > 2) throw new ApiKeySyntaxError(`${at}: expected "<key> [all|inference]" (${KEY_RULE})`);
    const [key, scope = "all"] = words as [string, string?];
    const problem = keyProblem(key);
    if (problem !== undefined) throw new ApiKeySyntaxError(`${at}: ${problem}`);
    // The word is not echoed: it may be the second half of a key with a space in it.
    if (!(API_KEY_SCOPES as readonly string[]).includes(scope)) {
      throw new ApiKeySyntaxError(`${at}: the word after the key must be its scope, all or inference`);
    }
    keys.push(makeKey(key, scope as ApiKeyScope, at));
  });
  return keys;
}

/**
 * Joins key lists; a key given twice must have the same scope both times (which one was meant
 * cannot be guessed).
 */
export function mergeApiKeys(...lists: readonly (readonly ApiKey[])[]): ApiKey[] {
  const out: ApiKey[] = [];
  for (const key of lists.flat()) {
    const same = out.find((k) => k.digest.equals(key.digest));
    if (same === undefined) out.push(key);
    else if (same.scope !== key.scope) {
      throw new ApiKeySyntaxError(`${key.source}: the same key as ${same.source}, with another scope (${key.scope}, not ${same.scope}); give each key once`);
    }
  }
  return out;
}

/**
 * The key `presented` is, or undefined. Compares fixed-length digests with timingSafeEqual against
 * every key, without stopping at a match, so neither the key's length nor its position shows in
 * the time taken.
 */
export function findApiKey(keys: readonly ApiKey[], presented: string): ApiKey | undefined {
  const digest = digestKey(presented);
  let found: ApiKey | undefined;
  for (const key of keys) {
    const equal = crypto().timingSafeEqual(key.digest, digest);
    if (equal && found === undefined) found = key;
  }
  return found;
}
