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
