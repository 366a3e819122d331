// One schema that means "both": allOf's members, a $ref with keywords beside it, the keywords
// around an anyOf/oneOf (carried into each alternative). Types and enums intersect, bounds take
// the tighter value, properties and required add up; sub-schemas that both constrain become an
// allOf of the two, merged when they are compiled.
import { GrammarTooLargeError, InvalidSchemaError } from "./gbnf.js";

export type Schema = Record<string, unknown>;

export const isSchemaObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** Keywords that constrain a value (the rest annotate it or cannot be enforced). */
const CONSTRAINING = new Set([
  "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems", "additionalItems",
  "minItems", "maxItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
  "exclusiveMaximum", "anyOf", "oneOf", "allOf", "$ref", "nullable", "propertyNames", "minProperties", "maxProperties",
]);

export function constrains(s: Schema): boolean {
  return Object.keys(s).some((k) => CONSTRAINING.has(k));
}

const MAX_ALTERNATIVES = 64;

function typeList(t: unknown): string[] {
  return Array.isArray(t) ? t.filter((x): x is string => typeof x === "string") : typeof t === "string" ? [t] : [];
}

function intersectTypes(a: unknown, b: unknown): string[] | string {
  const x = typeList(a);
  const y = typeList(b);
  const out = new Set<string>();
  for (const t of x) {
    if (y.includes(t)) out.add(t);
    else if (t === "integer" && y.includes("number")) out.add("integer");
    else if (t === "number" && y.includes("integer")) out.add("integer");
  }
  if (out.size === 0) throw new InvalidSchemaError(`allOf combines types ${JSON.stringify(a)} and ${JSON.stringify(b)}, which no value has`);
  const list = [...out];
  return list.length === 1 ? list[0]! : list;
}

/** Two sub-schemas that must both hold (booleans short-cut). */
function both(a: unknown, b: unknown): unknown {
  if (a === true || a === undefined) return b;
  if (b === true || b === undefined) return a;
  if (a === false || b === false) return false;
  return { allOf: [a, b] };
}

const json = (v: unknown) => JSON.stringify(v);

/** An own property, whatever its name ("__proto__" is a property name in JSON). */
function setOwn(o: Schema, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

function mergeKey(k: string, va: unknown, vb: unknown): unknown {
  switch (k) {
    case "type":
      return intersectTypes(va, vb);
    case "properties": {
      if (!isSchemaObject(va) || !isSchemaObject(vb)) return va;
      const out: Schema = { ...va };
      for (const [p, s] of Object.entries(vb)) setOwn(out, p, Object.hasOwn(va, p) ? both(va[p], s) : s);
      return out;
    }
    case "required":
      return [...new Set([...(Array.isArray(va) ? va : []), ...(Array.isArray(vb) ? vb : [])])];
    case "additionalProperties":
    case "propertyNames":
    case "items":
    case "additionalItems":
      return Array.isArray(va) || Array.isArray(vb) ? va : both(va, vb);
    case "prefixItems": {
      if (!Array.isArray(va) || !Array.isArray(vb)) return va;
      const n = Math.max(va.length, vb.length);
      return Array.from({ length: n }, (_, i) => both(va[i], vb[i]));
    }
    case "enum": {
      if (!Array.isArray(va) || !Array.isArray(vb)) return va;
      const keep = new Set(vb.map(json));
      const out = va.filter((v) => keep.has(json(v)));
      if (out.length === 0) throw new InvalidSchemaError("allOf combines enums that share no value");
      return out;
    }
    case "const":
      if (json(va) !== json(vb)) throw new InvalidSchemaError(`allOf combines const ${json(va)} and const ${json(vb)}`);
      return va;
    case "minimum":
    case "minLength":
    case "minItems":
    case "minProperties":
      return typeof va === "number" && typeof vb === "number" ? Math.max(va, vb) : va;
    case "maximum":
    case "maxLength":
    case "maxItems":
    case "maxProperties":
      return typeof va === "number" && typeof vb === "number" ? Math.min(va, vb) : va;
    case "exclusiveMinimum":
      return typeof va === "number" && typeof vb === "number" ? Math.max(va, vb) : va;
    case "exclusiveMaximum":
      return typeof va === "number" && typeof vb === "number" ? Math.min(va, vb) : va;
    case "anyOf":
    case "oneOf": {
      if (!Array.isArray(va) || !Array.isArray(vb)) return va;
      if (va.length * vb.length > MAX_ALTERNATIVES) throw new GrammarTooLargeError(`allOf combines ${k} lists into more than ${MAX_ALTERNATIVES} alternatives`);
      return va.flatMap((x) => vb.map((y) => both(x, y)));
    }
    case "nullable":
      return va === true && vb === true;
    default:
      return va; // a second pattern, format or annotation: the first is kept
  }
}

/** Both schemas at once; `a`'s annotations win. */
export function mergeSchemas(a: Schema, b: Schema): Schema {
  const out: Schema = { ...a };
  for (const [k, vb] of Object.entries(b)) setOwn(out, k, Object.hasOwn(out, k) ? mergeKey(k, out[k], vb) : vb);
  return out;
}

/** Each alternative with the keywords around it; `false` alternatives drop out. */
export function distribute(around: Schema, alternatives: unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const alt of alternatives) {
    if (alt === false) continue;
    if (alt === true) out.push(around);
    else if (isSchemaObject(alt)) out.push(constrains(around) ? { allOf: [around, alt] } : alt);
    else throw new InvalidSchemaError("an anyOf/oneOf alternative must be a schema");
  }
  if (out.length === 0) throw new InvalidSchemaError("no anyOf/oneOf alternative accepts a value");
  return out;
}
