// OpenAI's error shape for every /v1 error: {"error":{"message","type","param":null,"code":null}},
// with Ollama's type per status. Thrown errors reach `openaiErrorHandler` (the /v1 onError).
import type { Context } from "hono";
import { failure } from "../../errors.js";
import type { Logger } from "../../log.js";

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: null; code: string | null };
}

export function errorType(status: number): string {
  // 401: a missing or wrong API key, which OpenAI reports as an invalid request.
  if (status === 400 || status === 401) return "invalid_request_error";
  if (status === 404) return "not_found_error";
  return "api_error";
}

export function openaiError(status: number, message: string, code: string | null = null): OpenAIErrorBody {
  return { error: { message, type: errorType(status), param: null, code } };
}

export function openaiErrorHandler(log: Logger) {
  return (err: Error, c: Context): Response => {
    const f = failure(err, c.req.raw.signal.aborted);
    if (f.logLine) log.error(f.logLine);
    return c.json(openaiError(f.status, f.message), f.status as 400);
  };
}
