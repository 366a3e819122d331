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

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
