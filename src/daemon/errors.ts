// Errors are values with a code; this table alone decides each code's HTTP status and OpenAI
// error type, and server.ts / the /v1 handler encode them (Ollama's errors → statuses in one place).
import { EngineError, type EngineErrorCode } from "../backends/errors.js";

export type ErrorCode =
  | EngineErrorCode
  | "bad_request"
  | "not_found"
  | "model_not_found"
  | "unauthorized"
  | "canceled"
  | "internal"
  | "queue_full"
  | "shutting_down"
  | "bad_gateway"
  | "forbidden"
  | "payload_too_large"
  | "invalid_option";

const TABLE: Record<ErrorCode, { status: number; type: string }> = {
  bad_request: { status: 400, type: "invalid_request_error" },
  prompt_too_long: { status: 400, type: "invalid_request_error" },
  input_too_long: { status: 400, type: "invalid_request_error" },
  invalid_schema: { status: 400, type: "invalid_request_error" },
  unsupported: { status: 400, type: "invalid_request_error" },
  remote_not_allowed: { status: 400, type: "invalid_request_error" },
  upstream_rejected: { status: 400, type: "invalid_request_error" },
  unauthorized: { status: 401, type: "invalid_request_error" },
  forbidden: { status: 403, type: "permission_error" },
  not_found: { status: 404, type: "not_found_error" },
  model_not_found: { status: 404, type: "not_found_error" },
  upstream_model_not_found: { status: 404, type: "not_found_error" },
  payload_too_large: { status: 413, type: "invalid_request_error" },
  canceled: { status: 499, type: "api_error" },
  internal: { status: 500, type: "api_error" },
  // Ollama answers an option of the wrong JSON type with a 500 (Options.FromMap's error is not
  // mapped to 400); clients that match on it see the same.
  invalid_option: { status: 500, type: "api_error" },
  runner_failed: { status: 500, type: "api_error" },
  bad_gateway: { status: 502, type: "api_error" },
  upstream_down: { status: 502, type: "api_error" },
  queue_full: { status: 503, type: "api_error" },
  shutting_down: { status: 503, type: "api_error" },
  upstream_timeout: { status: 504, type: "api_error" },
};

const BY_STATUS = new Map<number, ErrorCode>([
  [400, "bad_request"],
  [401, "unauthorized"],
  [403, "forbidden"],
  [404, "not_found"],
  [413, "payload_too_large"],
  [499, "canceled"],
  [500, "internal"],
  [502, "bad_gateway"],
  [503, "queue_full"],
]);

export class ApiError extends Error {
  readonly code: ErrorCode;
  /** A status given as a number that no code stands for (kept as it was asked). */
  private readonly other?: number;
  constructor(code: ErrorCode | number, message: string) {
    super(message);
    if (typeof code === "number") {
      this.code = BY_STATUS.get(code) ?? (code >= 500 ? "internal" : "bad_request");
      if (!BY_STATUS.has(code)) this.other = code;
    } else this.code = code;
  }
  get status(): number {
    return this.other ?? TABLE[this.code].status;
  }
  get openaiType(): string {
    return TABLE[this.code].type;
  }
}

export const badRequest = (msg: string) => new ApiError("bad_request", msg);
export const notFound = (msg: string) => new ApiError("not_found", msg);

/** Ollama's 404 for a model that is not in the store; echoes the name as the client sent it. */
export const modelNotFound = (name: string) => new ApiError("model_not_found", `model '${name}' not found`);

/** Any thrown value as an ApiError: engine errors by their code, anything else a 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof EngineError) return new ApiError(err.code, err.message);
  return new ApiError("internal", errorMessage(err));
}

/** Out-of-space errors from any write (blob upload, pull, quantize, manifest): Node's text
 *  ("ENOSPC: no space left on device, write") says neither where nor what to do. */
const OUT_OF_SPACE: Record<string, string> = {
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
};

/** The message a client sees for an error that is not an ApiError. */
export function errorMessage(err: unknown): string {
  const full = OUT_OF_SPACE[(err as NodeJS.ErrnoException | null)?.code ?? ""];
  if (full) return `${full}: free disk space where the models are stored (OLLAMA_MODELS), then try again`;
  return err instanceof Error ? err.message : String(err);
}

/** How a failed request is answered and logged, by the native and the /v1 error handlers alike. */
export interface Failure {
  error: ApiError;
  /** Logged at ERROR when set: a fault of the server, not of the request. */
  logLine?: string;
}

export function failure(err: unknown, clientGone: boolean): Failure {
  // The client went away (a timeout, a closed tab) and the request failed because it was cut
  // short: not a server fault. Nobody reads the answer; the request line logs the 499.
  if (clientGone) return { error: new ApiError("canceled", "request canceled") };
  const error = toApiError(err);
  if (error.status < 500) return { error };
  const known = err instanceof ApiError || err instanceof EngineError;
  return { error, logLine: known ? error.message : `internal error: ${errorMessage(err)}` };
}
