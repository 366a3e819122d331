// OpenAI's error shape for every /v1 error: {"error":{"message","type","param":null,"code":null}},
// with the type the error table (daemon/errors.ts) gives its code. Thrown errors reach `openaiErrorHandler` (the /v1 onError).
import type { Context } from "hono";
import { EngineError } from "../../../backends/errors.js";
import { ApiError, errorMessage, toApiError } from "../../errors.js";
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
    const e = toApiError(err);
    if (e.status >= 500) log.error(err instanceof ApiError || err instanceof EngineError ? e.message : `internal error: ${errorMessage(err)}`);
    return c.json(openaiError(e), e.status as 400);
  };
}
