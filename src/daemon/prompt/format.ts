// Structured output (`format`): "json", a JSON Schema object, or nothing. The daemon only checks
// that shape (Ollama's message otherwise) and passes a schema on untouched: the backend compiles
// it (src/backends/llamacpp/json-schema-grammar.ts), enforcing what a grammar can and ignoring the
// rest, as Ollama does; a schema no value satisfies comes back from it as a 400.
import type { GrammarSpec } from "../../backends/backend.js";
import { badRequest } from "../errors.js";

/** Go's %q of the raw JSON (close enough: JSON string escaping). */
const goQuote = (raw: string): string => JSON.stringify(raw);

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The request's `format`: undefined (none), "json", or a schema. */
export function parseFormat(format: unknown): GrammarSpec | undefined {
  if (format === undefined || format === null || format === "") return undefined;
  if (format === "json") return { kind: "json" };
  if (!isObj(format)) {
    throw badRequest(`invalid format: ${goQuote(JSON.stringify(format))}; expected "json" or a valid JSON Schema object`);
  }
  return { kind: "schema", schema: format };
}
