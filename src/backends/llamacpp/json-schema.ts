// A request's JSON Schema (`format`) rewritten into the dialect node-llama-cpp's grammar compiler
// takes (LlamaJsonSchemaGrammar). The daemon calls this through the backend before anything is
// loaded, so a schema it cannot honour is a 400 up front.
//
// What the compiler does not know is translated: anyOf → oneOf, `definitions` → `$defs`,
// single-schema allOf, type lists that include object/array, `{}`/`true` (any value), an object
// without properties (any object). What it would silently ignore and so produce output that
// does not validate (pattern, numeric bounds, not, if/then/else, …) is refused with a message
// naming the keyword. Optional properties are always generated (the compiler makes every
// property required); that output still validates.
import type { StructuredOutput } from "../backend.js";
import { EngineError, INVALID_SCHEMA_PREFIX } from "../errors.js";
import type { GrammarSpec } from "./protocol.js";

type Schema = Record<string, unknown>;

const PRIMITIVES = new Set(["string", "number", "integer", "boolean", "null"]);
const TYPES = new Set([...PRIMITIVES, "object", "array"]);
const STRING_FORMATS = new Set(["date", "time", "date-time"]);
const UNSUPPORTED = [
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "not",
  "if",
  "then",
  "else",
  "patternProperties",
  "propertyNames",
  "dependentSchemas",
  "dependentRequired",
  "dependencies",
  "contains",
  "minContains",
  "maxContains",
];
const MAX_DEPTH = 64;

export class SchemaError extends Error {}

function fail(path: string, msg: string): never {
  throw new SchemaError(path ? `${path}: ${msg}` : msg);
}

const isObj = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);
const isNonNegInt = (v: unknown): boolean => typeof v === "number" && Number.isInteger(v) && v >= 0;
const isPrimitive = (v: unknown): boolean => v === null || ["string", "number", "boolean"].includes(typeof v);

const ANY: Schema = {
  oneOf: [{ type: ["string", "number", "boolean", "null"] }, { type: "object", additionalProperties: true }, { type: "array" }],
};

class Normalizer {
  readonly defs: Record<string, Schema> = {};
  private readonly rawDefs: Record<string, unknown>;
  private readonly pendingDefs = new Set<string>();

  constructor(root: Schema) {
    const a = root.$defs;
    const b = root.definitions;
    if (a !== undefined && !isObj(a)) fail("$defs", "must be an object");
    if (b !== undefined && !isObj(b)) fail("definitions", "must be an object");
    this.rawDefs = { ...(isObj(b) ? b : {}), ...(isObj(a) ? a : {}) };
  }

  private ref(ref: unknown, path: string): Schema {
    if (typeof ref !== "string") fail(path, "$ref must be a string");
    const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
    if (!m) fail(path, `$ref "${ref}" is not supported (only "#/$defs/<name>" and "#/definitions/<name>")`);
    const name = decodeURIComponent(m[2]!.replaceAll("~1", "/").replaceAll("~0", "~"));
    if (!(name in this.rawDefs)) fail(path, `$ref "${ref}" does not point to a definition`);
    if (!(name in this.defs) && !this.pendingDefs.has(name)) {
      this.pendingDefs.add(name);
      this.defs[name] = this.schema(this.rawDefs[name], `${path}.$ref`, 1);
      this.pendingDefs.delete(name);
    }
    return { $ref: `#/$defs/${name}` };
  }

  schema(s: unknown, path: string, depth: number): Schema {
    if (depth > MAX_DEPTH) fail(path, "schema is nested too deeply");
    if (s === true) return ANY;
    if (s === false) fail(path, "the schema false accepts no value");
    if (!isObj(s)) fail(path, "a schema must be an object or a boolean");

    for (const k of UNSUPPORTED) {
      if (k in s) fail(path, `"${k}" is not supported by this backend's grammar compiler`);
    }
    if (s.uniqueItems === true) fail(path, `"uniqueItems" is not supported by this backend's grammar compiler`);

    if ("$ref" in s) return this.ref(s.$ref, path);

    const structural = ["type", "properties", "items", "prefixItems", "enum", "const", "additionalProperties"].filter((k) => k in s);
    for (const key of ["anyOf", "oneOf"] as const) {
      if (!(key in s)) continue;
      const alts = s[key];
      if (!Array.isArray(alts) || alts.length === 0) fail(path, `${key} must be a non-empty array`);
      if (structural.length > 0) fail(path, `combining ${key} with "${structural[0]}" is not supported`);
      return { oneOf: alts.map((a, i) => this.schema(a, `${path}.${key}[${i}]`, depth + 1)) };
    }
    if ("allOf" in s) {
      const all = s.allOf;
      if (!Array.isArray(all) || all.length === 0) fail(path, "allOf must be a non-empty array");
      const { allOf: _, ...rest } = s;
      const parts = [...all, ...(structural.length > 0 ? [rest] : [])];
      if (parts.length === 1) return this.schema(parts[0], `${path}.allOf[0]`, depth + 1);
      // Several object schemas: their properties are merged.
      const merged: Schema = { type: "object", properties: {} };
      for (const [i, p] of parts.entries()) {
        const n = this.schema(p, `${path}.allOf[${i}]`, depth + 1);
        const resolved = typeof n.$ref === "string" ? this.defs[n.$ref.slice("#/$defs/".length)] : n;
        if (!resolved || resolved.type !== "object") fail(path, "allOf is only supported for a single schema or object schemas");
        Object.assign(merged.properties as Schema, resolved.properties ?? {});
        if (resolved.additionalProperties !== undefined) merged.additionalProperties = resolved.additionalProperties;
      }
      return merged;
    }

    if ("const" in s) {
      if (!isPrimitive(s.const)) fail(path, "const must be a string, number, boolean or null");
      return { const: s.const };
    }
    if ("enum" in s) {
      if (!Array.isArray(s.enum) || s.enum.length === 0) fail(path, "enum must be a non-empty array");
      if (!s.enum.every(isPrimitive)) fail(path, "enum values must be strings, numbers, booleans or null");
      return { enum: s.enum };
    }

    let type = s.type;
    if (type === undefined) {
      if ("properties" in s || "additionalProperties" in s || "required" in s) type = "object";
      else if ("items" in s || "prefixItems" in s) type = "array";
      else if ("minLength" in s || "maxLength" in s || "format" in s) type = "string";
      else return ANY;
    }
    if (Array.isArray(type)) {
      if (type.length === 0) fail(path, "type must not be an empty array");
      for (const t of type) if (typeof t !== "string" || !TYPES.has(t)) fail(path, `invalid type ${JSON.stringify(t)}`);
      const list = [...new Set(type as string[])];
      if (list.length === 1) return this.schema({ ...s, type: list[0] }, path, depth);
      if (list.every((t) => PRIMITIVES.has(t)) && !("format" in s) && !("minLength" in s) && !("maxLength" in s)) return { type: list };
      return { oneOf: list.map((t) => this.schema({ ...s, type: t }, path, depth + 1)) };
    }
    if (typeof type !== "string" || !TYPES.has(type)) fail(path, `invalid type ${JSON.stringify(type)}`);

    switch (type) {
      case "object":
        return this.object(s, path, depth);
      case "array":
        return this.array(s, path, depth);
      case "string": {
        const out: Schema = { type: "string" };
        for (const k of ["minLength", "maxLength"]) {
          if (k in s) {
            if (!isNonNegInt(s[k])) fail(path, `${k} must be a non-negative integer`);
            out[k] = s[k];
          }
        }
        if (typeof s.format === "string" && STRING_FORMATS.has(s.format)) return { type: "string", format: s.format };
        return out;
      }
      default:
        return { type };
    }
  }

  private object(s: Schema, path: string, depth: number): Schema {
    const out: Schema = { type: "object" };
    if (s.properties !== undefined) {
      if (!isObj(s.properties)) fail(path, "properties must be an object");
      const props: Schema = {};
      for (const [k, v] of Object.entries(s.properties)) props[k] = this.schema(v, `${path}.properties.${k}`, depth + 1);
      out.properties = props;
    }
    if (s.required !== undefined && (!Array.isArray(s.required) || !s.required.every((r) => typeof r === "string"))) {
      fail(path, "required must be an array of strings");
    }
    const ap = s.additionalProperties;
    if (ap === true || (ap === undefined && out.properties === undefined)) out.additionalProperties = true;
    else if (isObj(ap)) out.additionalProperties = this.schema(ap, `${path}.additionalProperties`, depth + 1);
    else if (ap !== undefined && ap !== false) fail(path, "additionalProperties must be a boolean or a schema");
    for (const k of ["minProperties", "maxProperties"]) {
      if (k in s) {
        if (!isNonNegInt(s[k])) fail(path, `${k} must be a non-negative integer`);
        out[k] = s[k];
      }
    }
    return out;
  }

  private array(s: Schema, path: string, depth: number): Schema {
    const out: Schema = { type: "array" };
    let prefix = s.prefixItems;
    let items = s.items;
    if (Array.isArray(items)) {
      // draft-04 tuple form
      prefix = items;
      items = s.additionalItems;
    }
    if (prefix !== undefined) {
      if (!Array.isArray(prefix)) fail(path, "prefixItems must be an array");
      out.prefixItems = prefix.map((p, i) => this.schema(p, `${path}.prefixItems[${i}]`, depth + 1));
    }
    if (items === false) {
      if (out.prefixItems === undefined) out.maxItems = 0;
      else out.maxItems = (out.prefixItems as unknown[]).length;
    } else if (items !== undefined && items !== true) {
      out.items = this.schema(items, `${path}.items`, depth + 1);
    }
    for (const k of ["minItems", "maxItems"]) {
      if (k in s) {
        if (!isNonNegInt(s[k])) fail(path, `${k} must be a non-negative integer`);
        if (!(k === "maxItems" && out.maxItems !== undefined)) out[k] = s[k];
      }
    }
    return out;
  }
}

/** Rewrites a JSON Schema into the grammar compiler's dialect; throws SchemaError. */
export function normalizeSchema(schema: Schema): Schema {
  const n = new Normalizer(schema);
  const root = n.schema(schema, "", 0);
  if (Object.keys(n.defs).length === 0) return root;
  if (typeof root.$ref === "string") return { ...root, $defs: n.defs };
  // Definitions ride on a one-alternative oneOf so any root shape can carry them.
  return { oneOf: [root], $defs: n.defs };
}

/** `format` compiled for the runner's grammar compiler; a schema it cannot honour is invalid_schema. */
export function compileLlamaFormat(format: StructuredOutput): GrammarSpec {
  if (format.kind === "json") return { kind: "json" };
  try {
    return { kind: "schema", schema: normalizeSchema(format.schema) };
  } catch (err) {
    if (err instanceof SchemaError) throw new EngineError("invalid_schema", INVALID_SCHEMA_PREFIX + err.message);
    throw err;
  }
}
