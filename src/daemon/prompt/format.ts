// Structured output (`format`): "json", a JSON Schema object, or nothing. Only the shape is
// checked here (Ollama's message otherwise); the backend that serves the model compiles the
// schema for its engine (a grammar, a response_format, guided JSON) and refuses what it cannot do.
import type { StructuredOutput } from "../../backends/backend.js";
import { badRequest } from "../errors.js";

/** Go's %q of the raw JSON (close enough: JSON string escaping). */
const goQuote = (raw: string): string => JSON.stringify(raw);

export function parseFormat(format: unknown): StructuredOutput | undefined {
  if (format === undefined || format === null || format === "") return undefined;
  if (format === "json") return { kind: "json" };
  if (typeof format !== "object" || Array.isArray(format)) {
    throw badRequest(`invalid format: ${goQuote(JSON.stringify(format))}; expected "json" or a valid JSON Schema object`);
  }
  return { kind: "schema", schema: format as Record<string, unknown> };
}
