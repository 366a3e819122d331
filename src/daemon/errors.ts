// Errors are values with an HTTP status; one place (server.ts onError) maps them to responses.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (msg: string) => new ApiError(400, msg);
export const notFound = (msg: string) => new ApiError(404, msg);

/** Ollama's 404 for a model that is not in the store; echoes the name as the client sent it. */
export const modelNotFound = (name: string) => new ApiError(404, `model '${name}' not found`);

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
  status: number;
  message: string;
  /** Logged at ERROR when set: a fault of the server, not of the request. */
  logLine?: string;
}

export function failure(err: unknown, clientGone: boolean): Failure {
  // The client went away (a timeout, a closed tab) and the request failed because it was cut
  // short: not a server fault. Nobody reads the answer; the request line logs the 499.
  if (clientGone) return { status: 499, message: "request canceled" };
  if (err instanceof ApiError) return { status: err.status, message: err.message, ...(err.status >= 500 ? { logLine: err.message } : {}) };
  return { status: 500, message: errorMessage(err), logLine: `internal error: ${errorMessage(err)}` };
}
