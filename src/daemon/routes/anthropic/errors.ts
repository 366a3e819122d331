// Anthropic's error shape for every /v1/messages error: {"type":"error","error":{"type",
// "message"},"request_id"}, its type chosen by HTTP status as Ollama's anthropic.NewError does.
import type { Context } from "hono";
import { failure, toApiError } from "../../errors.js";
import type { Logger } from "../../log.js";
import { randomBytes } from "node:crypto";

/** The paths whose clients read Anthropic's shapes (api-access.ts answers them so too). */
const ANTHROPIC_PATHS: ReadonlySet<string> = new Set(["/v1/messages", "/v1/messages/count_tokens"]);

export function isAnthropicPath(path: string): boolean {
  return ANTHROPIC_PATHS.has(path);
}

const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  503: "overloaded_error",
  529: "overloaded_error",
};

export interface AnthropicErrorBody {
  type: "error";
  error: { type: string; message: string };
  request_id: string;
}

export function anthropicError(err: unknown): AnthropicErrorBody {
  const e = toApiError(err);
  return { type: "error", error: { type: TYPE_BY_STATUS[e.status] ?? "api_error", message: e.message }, request_id: `req_${randomBytes(12).toString("hex")}` };
}

export function anthropicErrorHandler(log: Logger) {
  return (err: Error, c: Context): Response => {
    const f = failure(err, c.req.raw.signal.aborted);
    if (f.logLine) log.error(f.logLine);
    return c.json(anthropicError(f.error), f.error.status as 400);
  };
}
