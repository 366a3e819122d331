// A JSON Schema (`format` of /api/generate, /api/chat and /v1 `response_format`) → a GBNF grammar
// whose every output is JSON that validates against the schema, for the keywords it enforces:
// types (and lists of them, `nullable`), enum/const, objects (properties in the schema's order,
// required and optional, additionalProperties and propertyNames, min/maxProperties), arrays (items, prefixItems, minItems/maxItems),
// strings (minLength/maxLength, pattern, format: string-grammar.ts), integer and number ranges
// (number-grammar.ts; multipleOf within bounds), $ref/$defs (local pointers, recursion included), anyOf/oneOf and allOf
// (schema-merge.ts). Keywords it cannot enforce (not, uniqueItems, if/then/else, contains,
// patternProperties, …) are ignored, as Ollama's llama.cpp converter ignores them. A schema no
// value can satisfy, or that is not a schema, is InvalidSchemaError (the daemon's 400).
import { gbnfLiteral, InvalidSchemaError, RuleSet } from "./gbnf.js";
import { decimalPlaces, INTEGER, integerGrammar, multiplesGrammar, NUMBER, numberGrammar, type Bound } from "./number-grammar.js";
import { objectRule, type Member } from "./object-grammar.js";
import { noneOf } from "./regex-tree.js";
import { constrains, distribute, isSchemaObject, mergeSchemas, type Schema } from "./schema-merge.js";
import { stringGrammar } from "./string-grammar.js";

const MAX_DEPTH = 128;
const MAX_MERGES = 2_000;

const PRIMITIVES: Record<string, string> = {
  // Up to 21 characters, as llama.cpp's converter allows: room to pretty-print, and a bound.
  space: '(" " | "\\n" [ \\t]{0,20})?',
  value: "object | array | string | number | boolean | null",
  object: '"{" space (string space ":" space value ("," space string space ":" space value)* space)? "}"',
  array: '"[" space (value ("," space value)* space)? "]"',
  string: '"\\"" char* "\\""',
  // No \u escape of a surrogate: a pair would count as two characters here and one in a validator.
  char: '[^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))',
  number: NUMBER,
  integer: INTEGER,
  boolean: '"true" | "false"',
  null: '"null"',
};
/** One optional space: the `, ` and `: ` models write, and nothing a model can run on with. */
const COMPACT_SPACE = '" "?';
const DEPENDS: Record<string, string[]> = {
  value: ["object", "array", "string", "number", "boolean", "null"],
  object: ["space", "string", "value"],
  array: ["space", "value"],
  string: ["char"],
};

const TYPES = new Set(["string", "number", "integer", "boolean", "null", "object", "array"]);
const OBJECT_KEYS = ["properties", "additionalProperties", "required", "patternProperties", "minProperties", "maxProperties", "propertyNames"];
const ARRAY_KEYS = ["items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "uniqueItems"];
const STRING_KEYS = ["pattern", "minLength", "maxLength", "format"];
const NUMBER_KEYS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"];

function inferType(s: Schema): string | undefined {
  const has = (keys: string[]) => keys.some((k) => k in s);
  if (has(OBJECT_KEYS)) return "object";
  if (has(ARRAY_KEYS)) return "array";
  if (has(STRING_KEYS)) return "string";
  if (has(NUMBER_KEYS)) return "number";
  return undefined;
}

function hasType(v: unknown, t: string): boolean {
  switch (t) {
    case "null":
      return v === null;
    case "boolean":
      return typeof v === "boolean";
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number";
    case "integer":
      return Number.isInteger(v);
    case "object":
      return isSchemaObject(v);
    case "array":
      return Array.isArray(v);
    default:
      return false;
  }
}

const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined);

/** The tighter of `minimum`/`exclusiveMinimum` (a number, or draft-4's boolean). */
function bound(s: Schema, incl: "minimum" | "maximum", excl: "exclusiveMinimum" | "exclusiveMaximum"): Bound | undefined {
  const lower = incl === "minimum";
  const cands: Bound[] = [];
  if (typeof s[incl] === "number" && Number.isFinite(s[incl])) cands.push({ value: s[incl] as number, exclusive: s[excl] === true });
  if (typeof s[excl] === "number" && Number.isFinite(s[excl])) cands.push({ value: s[excl] as number, exclusive: true });
  let best: Bound | undefined;
  for (const c of cands) {
    if (!best || (lower ? c.value > best.value : c.value < best.value) || (c.value === best.value && c.exclusive)) best = c;
  }
  return best;
}

/** Decodes a JSON pointer fragment segment (~1 → /, ~0 → ~, then percent-escapes). */
function segment(raw: string): string {
  let s = raw.replaceAll("~1", "/").replaceAll("~0", "~");
  try {
    s = decodeURIComponent(s);
  } catch {
    // not percent-encoded
  }
  return s;
}

/** A rule set whose names leave room for the primitives. */
export function schemaRuleSet(): RuleSet {
  return new RuleSet(new Set(["root", ...Object.keys(PRIMITIVES)]));
}

class Compiler {
  private readonly refs = new Map<string, string>();
  private merges = 0;

  constructor(
    private readonly root: unknown,
    private readonly compact = false,
    readonly rules = schemaRuleSet(),
  ) {}

  prim(name: string): string {
    if (this.rules.has(name)) return name;
    this.rules.named(name, this.compact && name === "space" ? COMPACT_SPACE : PRIMITIVES[name]!);
    for (const dep of DEPENDS[name] ?? []) this.prim(dep);
    return name;
  }

  private target(ref: string): unknown {
    if (!ref.startsWith("#")) return undefined;
    let node: unknown = this.root;
    const path = ref.slice(1);
    if (path === "") return node;
    if (!path.startsWith("/")) return undefined; // a named anchor: not resolved
    for (const raw of path.slice(1).split("/")) {
      const key = segment(raw);
      if (Array.isArray(node) && /^\d+$/.test(key)) node = node[Number(key)];
      else if (isSchemaObject(node) && Object.hasOwn(node, key)) node = node[key];
      else throw new InvalidSchemaError(`$ref ${JSON.stringify(ref)} does not point into the schema`);
    }
    return node;
  }

  /** A rule for the schema a $ref names (one rule per ref, so recursion works). */
  private ref(ref: unknown, depth: number): string {
    if (typeof ref !== "string") throw new InvalidSchemaError("$ref must be a string");
    const known = this.refs.get(ref);
    if (known) return known;
    const target = this.target(ref);
    // A ref outside the document (a URL, an anchor) is not fetched: any value.
    if (target === undefined) return this.prim("value");
    const name = this.rules.reserve(`ref-${ref.split("/").pop() ?? ""}`);
    this.refs.set(ref, name);
    const body = this.visit(target, name, depth + 1);
    if (body === name) throw new InvalidSchemaError(`$ref ${JSON.stringify(ref)} refers to itself`);
    this.rules.define(name, body);
    return name;
  }

  /** The schema behind a bare $ref, for merging (refs with keywords beside them are merged). */
  private deref(s: unknown, depth: number): unknown {
    for (let i = 0; isSchemaObject(s) && typeof s.$ref === "string" && i < MAX_DEPTH; i++) {
      const { $ref, ...rest } = s;
      const t = this.target($ref as string);
      if (t === undefined) return rest;
      s = isSchemaObject(t) ? this.merge(t, rest, depth + 1) : t === true ? rest : t;
    }
    return s;
  }

  private merge(a: Schema, b: Schema, depth: number): Schema {
    if (++this.merges > MAX_MERGES || depth > MAX_DEPTH) throw new InvalidSchemaError("the schema's allOf/$ref combinations do not end");
    const x = this.deref(a, depth);
    const y = this.deref(b, depth);
    if (x === false || y === false) throw new InvalidSchemaError("allOf includes the schema false, which accepts no value");
    return mergeSchemas(isSchemaObject(x) ? x : {}, isSchemaObject(y) ? y : {});
  }

  visit(schema: unknown, hint: string, depth: number): string {
    if (depth > MAX_DEPTH) throw new InvalidSchemaError("the schema is nested too deeply");
    if (schema === true) return this.prim("value");
    if (schema === false) throw new InvalidSchemaError("the schema false accepts no value");
    if (!isSchemaObject(schema)) throw new InvalidSchemaError("a schema must be an object or a boolean");
    let s = schema;

    if ("$ref" in s) {
      const { $ref, ...rest } = s;
      if (!constrains(rest)) return this.ref($ref, depth);
      return this.visit(this.merge({ $ref }, rest, depth), hint, depth + 1);
    }
    if ("allOf" in s) {
      const { allOf, ...rest } = s;
      if (!Array.isArray(allOf) || allOf.length === 0) throw new InvalidSchemaError("allOf must be a non-empty array");
      let merged: Schema = rest;
      for (const part of allOf) {
        if (part === true) continue;
        if (!isSchemaObject(part)) throw new InvalidSchemaError(part === false ? "allOf includes the schema false, which accepts no value" : "allOf members must be schemas");
        merged = this.merge(merged, part, depth);
      }
      return this.visit(merged, hint, depth + 1);
    }
    for (const key of ["anyOf", "oneOf"] as const) {
      if (!(key in s)) continue;
      const { [key]: alts, ...rest } = s;
      if (!Array.isArray(alts) || alts.length === 0) throw new InvalidSchemaError(`${key} must be a non-empty array`);
      const branches = distribute(rest, alts).map((b, i) => this.visit(b, `${hint}-${i}`, depth + 1));
      return this.rules.add(hint, [...new Set(branches)].join(" | "));
    }
    if (s.nullable === true) {
      const { nullable: _, ...rest } = s;
      return this.rules.add(hint, `${this.visit(rest, hint, depth + 1)} | ${this.prim("null")}`);
    }
    if ("const" in s) return this.rules.add(hint, gbnfLiteral(JSON.stringify(s.const)));

    const types = s.type === undefined ? undefined : Array.isArray(s.type) ? [...new Set(s.type)] : [s.type];
    if (types) for (const t of types) if (typeof t !== "string" || !TYPES.has(t)) throw new InvalidSchemaError(`invalid type ${JSON.stringify(t)}`);
    if ("enum" in s) {
      if (!Array.isArray(s.enum) || s.enum.length === 0) throw new InvalidSchemaError("enum must be a non-empty array");
      const values = types ? s.enum.filter((v) => types.some((t) => hasType(v, t as string))) : s.enum;
      if (values.length === 0) throw new InvalidSchemaError(`no enum value has the type ${JSON.stringify(s.type)}`);
      return this.rules.add(hint, [...new Set(values.map((v) => gbnfLiteral(JSON.stringify(v))))].join(" | "));
    }
    if (types && types.length === 0) throw new InvalidSchemaError("type must not be an empty list");
    if (types && types.length > 1) {
      return this.rules.add(hint, types.map((t) => this.visit({ ...s, type: t }, `${hint}-${t as string}`, depth + 1)).join(" | "));
    }
    const type = (types?.[0] as string | undefined) ?? inferType(s);
    switch (type) {
      case undefined:
        return this.prim("value");
      case "object":
        return this.object(s, hint, depth);
      case "array":
        return this.array(s, hint, depth);
      case "string":
        return stringGrammar(s, this.rules, hint, () => this.prim("char")) ?? this.prim("string");
      case "integer":
      case "number": {
        const lo = bound(s, "minimum", "exclusiveMinimum");
        const hi = bound(s, "maximum", "exclusiveMaximum");
        // multipleOf: its multiples spelled out within bounds; otherwise only its decimal places
        // (exact for 0.1, 0.01, …; an integer's divisibility is not enforced).
        const multiples = multiplesGrammar(lo, hi, s.multipleOf);
        if (multiples) return this.rules.add(hint, multiples);
        const places = type === "number" ? decimalPlaces(s.multipleOf) : undefined;
        if (!lo && !hi && places === undefined) return this.prim(type);
        return this.rules.add(hint, type === "integer" ? integerGrammar(lo, hi) : numberGrammar(lo, hi, places));
      }
      default:
        return this.prim(type);
    }
  }

  private object(s: Schema, hint: string, depth: number): string {
    if (s.properties !== undefined && !isSchemaObject(s.properties)) throw new InvalidSchemaError("properties must be an object");
    const props = (s.properties ?? {}) as Schema;
    const required = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === "string") : []);
    const ap = s.additionalProperties;
    if (ap !== undefined && typeof ap !== "boolean" && !isSchemaObject(ap)) throw new InvalidSchemaError("additionalProperties must be a boolean or a schema");
    // Required keys without a declared schema take additionalProperties' (any value by default).
    const entries: Array<[string, unknown]> = Object.entries(props);
    for (const r of required) {
      if (Object.hasOwn(props, r)) continue;
      if (ap === false) throw new InvalidSchemaError(`"${r}" is required but additionalProperties is false`);
      entries.push([r, ap ?? true]);
    }
    const keysFree = s.minProperties === undefined && s.maxProperties === undefined && s.propertyNames === undefined;
    if (entries.length === 0 && (ap === undefined || ap === true) && keysFree) return this.prim("object");
    const members: Member[] = [];
    for (const [key, sub] of entries) {
      if (sub === false) {
        if (required.has(key)) throw new InvalidSchemaError(`"${key}" is required but its schema is false`);
        continue;
      }
      const value = this.visit(sub, `${hint}-${key}`, depth + 1);
      members.push({ kv: this.rules.add(`${hint}-${key}-kv`, `${gbnfLiteral(JSON.stringify(key))} space ":" space ${value}`), required: required.has(key) });
    }
    this.prim("space");
    let extra: { kv: string; min: number; max: number } | undefined;
    // Absent additionalProperties beside declared properties: none are generated (still valid).
    if (ap === true || isSchemaObject(ap) || (ap === undefined && entries.length === 0)) {
      const value = isSchemaObject(ap) ? this.visit(ap, `${hint}-additional`, depth + 1) : this.prim("value");
      const key = this.keyRule(entries.map(([k]) => k), s.propertyNames, hint, depth);
      // minProperties/maxProperties bound the additional ones: enough beside the required members,
      // no more than fit beside all the declared ones.
      const requiredCount = members.filter((m) => m.required).length;
      const min = Math.max(0, (count(s.minProperties) ?? 0) - requiredCount);
      const max = Math.max(0, (count(s.maxProperties) ?? Infinity) - members.length);
      if (min > max) throw new InvalidSchemaError(`minProperties ${String(s.minProperties)} is more than maxProperties ${String(s.maxProperties)} allows`);
      if (key !== undefined) extra = { kv: this.rules.add(`${hint}-additional-kv`, `${key} space ":" space ${value}`), min, max };
      else if (min > 0) throw new InvalidSchemaError("minProperties needs keys that propertyNames does not allow");
    }
    return this.rules.add(hint, objectRule(members, extra, this.rules, hint));
  }

  /** Keys of additional properties: none of the declared names, and as propertyNames says;
   *  undefined when no key is allowed. */
  private keyRule(names: string[], propertyNames: unknown, hint: string, depth: number): string | undefined {
    if (propertyNames === false) return undefined;
    const pn = isSchemaObject(propertyNames) ? this.deref(propertyNames, depth) : {};
    const s = isSchemaObject(pn) ? pn : {};
    const fixed = "const" in s ? [s.const] : Array.isArray(s.enum) ? s.enum : undefined;
    if (fixed) {
      const keys = [...new Set(fixed.filter((v): v is string => typeof v === "string" && !names.includes(v)))];
      return keys.length === 0 ? undefined : this.rules.add(`${hint}-key`, keys.map((k) => gbnfLiteral(JSON.stringify(k))).join(" | "));
    }
    const within = names.length > 0 ? noneOf(names) : undefined;
    return stringGrammar(s, this.rules, `${hint}-key`, () => this.prim("char"), within) ?? this.prim("string");
  }

  private array(s: Schema, hint: string, depth: number): string {
    const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? (s.items as unknown[]) : [];
    const rest = Array.isArray(s.items) ? s.additionalItems : s.items;
    const minItems = count(s.minItems) ?? 0;
    let maxItems = count(s.maxItems) ?? Infinity;
    if (rest === false) maxItems = Math.min(maxItems, tuple.length);
    if (minItems > maxItems) throw new InvalidSchemaError(`minItems ${minItems} is more than the ${maxItems} items allowed`);
    this.prim("space");
    const n = Math.min(tuple.length, maxItems);
    const parts = tuple.slice(0, n).map((t, i) => this.visit(t, `${hint}-${i}`, depth + 1));
    const more = { min: Math.max(0, minItems - n), max: maxItems - n };
    let body = parts.join(' "," space ');
    if (more.max > 0) {
      const item = this.visit(rest ?? true, `${hint}-item`, depth + 1);
      const sep = `"," space ${item}`;
      if (n > 0) body += ` ${this.rules.repeat(sep, more.min, more.max)}`;
      else if (more.min > 0) body = `${item} ${this.rules.repeat(sep, more.min - 1, more.max - 1)}`;
      else body = `(${item} ${this.rules.repeat(sep, 0, more.max - 1)})?`;
    }
    return this.rules.add(hint, body === "" ? `"[" space "]"` : `"[" space ${body} space "]"`);
  }
}

export interface GrammarOptions {
  /** Text the output starts with, before the value. */
  prefix?: string;
  /** At most one space between tokens instead of up to 21 characters. */
  compact?: boolean;
}

/** The GBNF grammar (root rule first) of a JSON Schema; throws InvalidSchemaError. */
export function jsonSchemaGrammar(schema: unknown, { prefix, compact }: GrammarOptions = {}): string {
  const c = new Compiler(schema, compact);
  const body = c.visit(schema, "root", 0);
  // No rule refers to root (a $ref gets a rule of its own), so the prefix is written once.
  c.rules.named("root", prefix ? `${gbnfLiteral(prefix)} (${body})` : body);
  return c.rules.text();
}

/** A rule in `rules` for compact JSON values of `schema`, its $refs resolved in `root` (a tool's
 *  parameters, of which `schema` is one property); throws InvalidSchemaError. */
export function schemaValueRule(rules: RuleSet, schema: unknown, root: unknown, hint: string): string {
  return rules.add(hint, new Compiler(root, true, rules).visit(schema, hint, 0));
}
