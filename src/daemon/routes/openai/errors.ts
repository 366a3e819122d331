// OpenAI's error shape for every /v1 error: {"error":{"message","type","param":null,"code":null}},
// with the type the error table (daemon/errors.ts) gives its code. Thrown errors reach `openaiErrorHandler` (the /v1 onError).
import type { Context } from "hono";
import { failure, toApiError } from "../../errors.js";
import type { Logger } from "../../log.js";

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: null; code: string | null };
}

/** OpenAI's error body for any thrown value; its type comes from the one error table. */
export function openaiError(err: unknown, code: string | null = null): OpenAIErrorBody {
  const e = toApiError(err);
  return { error: { message: e.message, type: e.openaiType, param: null, code } };
}

export function openaiErrorHandler(log: Logger) {
  return (err: Error, c: Context): Response => {
    const f = failure(err, c.req.raw.signal.aborted);
    if (f.logLine) log.error(f.logLine);
    return c.json(openaiError(f.error), f.error.status as 400);
  };
}
