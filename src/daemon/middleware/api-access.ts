// API keys and inference-only mode for an exposed daemon (docs/security.md). With keys configured,
// every request but the open health check must carry `Authorization: Bearer <key>` (what OpenAI
// clients send; on Anthropic's /v1/messages also `x-api-key: <key>`, what Anthropic's SDKs
// send), else 401 with a `WWW-Authenticate: Bearer` challenge. Management routes (see
// routes/access.ts) are refused with 403 under OLLAMA_NO_MANAGEMENT and for `inference` keys. With
// neither configured this middleware does nothing. It runs after CORS, so a preflight is answered
// without a key and a 401 carries the CORS headers a browser needs to read it; and after the
// request log, so refusals are logged (the log never holds headers, so never a key).
import type { Context, MiddlewareHandler } from "hono";
import { findApiKey, MIN_STRONG_KEY_LENGTH, type ApiKey } from "../../api-keys.js";
import { ApiError } from "../errors.js";
import type { Logger } from "../log.js";
import { anthropicError, isAnthropicPath } from "../routes/anthropic/errors.js";
import { openaiError } from "../routes/openai/errors.js";
import { routeAccess } from "../routes/access.js";

export interface AccessPolicy {
  keys: readonly ApiKey[];
  noManagement: boolean;
}

const REALM = 'Bearer realm="ollamats"';

export const MISSING_KEY =
  'unauthorized: this server requires an API key; send it as the header "Authorization: Bearer <key>" (the ollamats CLI sends OLLAMA_API_KEY)';
export const INVALID_KEY = 'unauthorized: the API key is not valid on this server; send one of its keys as "Authorization: Bearer <key>"';
export const NO_MANAGEMENT =
  "this server runs models but does not manage them (OLLAMA_NO_MANAGEMENT is set): pull, push, create, copy, delete and blob uploads are turned off";
export const INFERENCE_SCOPE = "this API key may only run models (scope inference): pull, push, create, copy, delete and blob uploads need a key with scope all";

/** The token of a `Bearer` Authorization header; undefined when there is none (or another scheme). */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? "");
  return m?.[1];
}

/** The key of an Anthropic-style `x-api-key` header; undefined when there is none. */
function xApiKey(header: string | undefined): string | undefined {
  const key = header?.trim();
  return key ? key : undefined;
}

function refuse(c: Context, status: 401 | 403, message: string, challenge?: string, openaiCode: string | null = null): Response {
  if (challenge !== undefined) c.header("WWW-Authenticate", challenge);
  // The body (a blob upload, say) is not read: the server drains a little of it, then drops the
  // connection, so a keep-alive client must not send its next request on this one.
  if (c.req.method !== "GET" && c.req.method !== "HEAD" && c.req.method !== "OPTIONS") c.header("Connection", "close");
  // Anthropic's SDKs read Anthropic's error shape, the other /v1 clients OpenAI's (a wrong key
  // has OpenAI's code "invalid_api_key").
  if (isAnthropicPath(c.req.path)) return c.json(anthropicError(new ApiError(status, message)), status);
  if (c.req.path.startsWith("/v1/")) return c.json(openaiError(new ApiError(status, message), openaiCode), status);
  return c.json({ error: message }, status);
}

export function apiAccess(policy: AccessPolicy): MiddlewareHandler {
  const { keys, noManagement } = policy;
  if (keys.length === 0 && !noManagement) return async (_c, next) => next();
  return async (c, next) => {
    const access = routeAccess(c.req.path);
    if (access === "open") return next();
    let key: ApiKey | undefined;
    if (keys.length > 0) {
      const token = bearerToken(c.req.header("authorization")) ?? (isAnthropicPath(c.req.path) ? xApiKey(c.req.header("x-api-key")) : undefined);
      if (token === undefined) return refuse(c, 401, MISSING_KEY, REALM);
      key = findApiKey(keys, token);
      if (key === undefined) return refuse(c, 401, INVALID_KEY, `${REALM}, error="invalid_token"`, "invalid_api_key");
    }
    if (access === "management") {
      if (noManagement) return refuse(c, 403, NO_MANAGEMENT);
      if (key?.scope === "inference") return refuse(c, 403, INFERENCE_SCOPE, `${REALM}, error="insufficient_scope"`);
    }
    return next();
  };
}

/** What the daemon accepts, once at start: counts and where keys came from, never a key. */
export function logAccessPolicy(log: Logger, config: { apiKeysFile: string; noManagement: boolean }, keys: readonly ApiKey[]): void {
  if (keys.length > 0) {
    const inference = keys.filter((k) => k.scope === "inference").length;
    log.info("API keys required", { keys: keys.length, inference_only: inference, file: config.apiKeysFile || undefined });
  }
  for (const key of keys.filter((k) => k.length < MIN_STRONG_KEY_LENGTH)) {
    log.warn(`API key shorter than ${MIN_STRONG_KEY_LENGTH} characters: it can be guessed; make one with: openssl rand -hex 32`, { key: key.source });
  }
  if (config.noManagement) log.info("inference only (OLLAMA_NO_MANAGEMENT): pull, push, create, copy, delete and blob uploads are refused");
}
