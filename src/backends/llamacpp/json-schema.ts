// `format` compiled for node-llama-cpp: the generic JSON grammar, or a JSON Schema compiled to
// GBNF by our compiler (json-schema-grammar.ts; what it enforces: docs/structured-output.md), or
// a markup shape (markup-grammar.ts: tool_choice on a model whose calls are markup).
// The daemon calls this through the backend before anything is loaded, so a schema no value can
// satisfy (or that is not a schema) is a 400 up front; the runner only parses the GBNF.
import type { StructuredOutput } from "../backend.js";
import { EngineError, INVALID_SCHEMA_PREFIX } from "../errors.js";
import { InvalidSchemaError } from "./gbnf.js";
import { jsonSchemaGrammar } from "./json-schema-grammar.js";
import { markupGrammar } from "./markup-grammar.js";
import type { GrammarSpec } from "./protocol.js";

/** `format` for the runner; a schema that cannot be compiled is invalid_schema. */
export function compileLlamaFormat(format: StructuredOutput): GrammarSpec {
  if (format.kind === "json") return { kind: "json" };
  try {
    if (format.kind === "markup") return { kind: "gbnf", grammar: markupGrammar(format.pieces) };
    return { kind: "gbnf", grammar: jsonSchemaGrammar(format.schema, { prefix: format.prefix, compact: format.compact }) };
  } catch (err) {
    if (err instanceof InvalidSchemaError) throw new EngineError("invalid_schema", INVALID_SCHEMA_PREFIX + err.message);
    // A stack overflow on a pathological schema is the schema's fault, not the daemon's.
    if (err instanceof RangeError) throw new EngineError("invalid_schema", `${INVALID_SCHEMA_PREFIX}the schema is too complex to compile (${err.message})`);
    throw err;
  }
}
