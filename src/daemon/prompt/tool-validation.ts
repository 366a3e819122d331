// Validation of the `tools` a /api/chat request declares, with the messages of Ollama's JSON
// decoder for api.Tool.
import { isObject } from "./tool-call-syntax.js";

// ---------- request validation ----------

/** Go's name for a JSON value's kind, as encoding/json words its errors. */
function goKind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "boolean") return "bool";
  return typeof v; // string, number, object
}

function unmarshalError(v: unknown, field: string, type: string): Error {
  return new ToolValidationError(`json: cannot unmarshal ${goKind(v)} into Go struct field ${field} of type ${type}`);
}

export class ToolValidationError extends Error {}

/**
 * `tools` of /api/chat, checked as Ollama's JSON decoder checks api.Tool (same messages): a tool
 * that is not an object, a `function` that is not an object, a name that is not a string …
 * Null entries are skipped, as Go decodes them to an empty tool.
 */
export function validateTools(raw: unknown): Array<Record<string, unknown>> {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw unmarshalError(raw, "ChatRequest.tools", "api.Tools");
  const out: Array<Record<string, unknown>> = [];
  for (const t of raw) {
    if (t === null) continue;
    if (!isObject(t)) throw unmarshalError(t, "ChatRequest.tools", "api.Tool");
    if (t.type !== undefined && t.type !== null && typeof t.type !== "string") throw unmarshalError(t.type, "Tool.tools.type", "string");
    const f = t.function;
    if (f !== undefined && f !== null) {
      if (!isObject(f)) throw unmarshalError(f, "Tool.tools.function", "api.ToolFunction");
      if (f.name !== undefined && f.name !== null && typeof f.name !== "string") throw unmarshalError(f.name, "ToolFunction.tools.function.name", "string");
      if (f.description !== undefined && f.description !== null && typeof f.description !== "string") {
        throw unmarshalError(f.description, "ToolFunction.tools.function.description", "string");
      }
      const p = f.parameters;
      if (p !== undefined && p !== null) {
        if (!isObject(p)) throw unmarshalError(p, "ToolFunction.tools.function.parameters", "api.ToolFunctionParameters");
        if (p.type !== undefined && p.type !== null && typeof p.type !== "string") {
          throw unmarshalError(p.type, "ToolFunctionParameters.tools.function.parameters.type", "string");
        }
        if (p.required !== undefined && p.required !== null && (!Array.isArray(p.required) || !p.required.every((r) => typeof r === "string"))) {
          throw unmarshalError(p.required, "ToolFunctionParameters.tools.function.parameters.required", "[]string");
        }
        if (p.properties !== undefined && p.properties !== null) {
          if (!isObject(p.properties)) throw unmarshalError(p.properties, "ToolFunctionParameters.tools.function.parameters.properties", "api.ToolPropertiesMap");
          for (const v of Object.values(p.properties)) {
            if (!isObject(v)) throw unmarshalError(v, "ToolFunctionParameters.tools.function.parameters.properties", "api.ToolProperty");
          }
        }
      }
    }
    const fn = isObject(f) ? f : {};
    out.push({ ...t, function: { ...fn, name: typeof fn.name === "string" ? fn.name : "" } });
  }
  return out;
}
