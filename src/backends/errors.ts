// Errors an engine raises, by code; daemon/errors.ts maps each code to its HTTP status and
// OpenAI error type in one table, so no route and no backend decides a status itself.

export type EngineErrorCode =
  /** The prompt does not fit while truncation or context shift is off (a 400). */
  | "prompt_too_long"
  /** An embedding input longer than the context while truncate is false (a 400). */
  | "input_too_long"
  /** The engine cannot compile the request's `format` schema (a 400). */
  | "invalid_schema"
  /** The request needs a feature this runner lacks (a 400 naming why). */
  | "unsupported"
  /** The model's upstream is not in OLLAMA_REMOTES (a 400, Ollama's message). */
  | "remote_not_allowed"
  /** The upstream refused the request as bad (its 4xx, passed on as a 400). */
  | "upstream_rejected"
  /** The upstream does not know the model (a 404). */
  | "upstream_model_not_found"
  /** No upstream could be reached, or all are failing (a 502). */
  | "upstream_down"
  /** The upstream did not answer in time (a 504). */
  | "upstream_timeout"
  /** The runner failed or died (a 500). */
  | "runner_failed";

export class EngineError extends Error {
  constructor(
    readonly code: EngineErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The runner error a prompt gets when it does not fit and may not be cut. */
export const PROMPT_TOO_LONG =
  "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length";
/** Prefix of the message of an `invalid_schema` error. */
export const INVALID_SCHEMA_PREFIX = "invalid JSON schema in format: ";
export const INPUT_TOO_LONG = "the input length exceeds the context length";

/** Kept for the runner process's own failures: a runner_failed EngineError. */
export class RunnerError extends EngineError {
  constructor(message: string) {
    super("runner_failed", message);
  }
}
