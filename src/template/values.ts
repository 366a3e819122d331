// Go value model for the text/template interpreter.
//
// JS values are read as Go values like this:
//   undefined            -> the invalid reflect.Value ("no value")
//   null                 -> a nil interface{} (JSON null, a nil map entry, a nil field)
//   boolean / string     -> bool / string
//   number               -> int when Number.isInteger, float64 otherwise
//   GoFloat              -> float64 whose value happens to be integral (JSON numbers decode to float64)
//   bigint               -> int
//   Array                -> []interface{}
//   Uint8Array           -> []byte
//   plain object / Map   -> map[string]interface{} (keys iterate sorted, as Go does)
//   GoStruct             -> a struct (ordered fields, optional json tags and String method)
//   GoNamed              -> a named type over any of the above with optional String/MarshalJSON methods
//   function             -> func (for `call`)

export class GoFloat {
  constructor(readonly value: number) {}
}

export interface StructField {
  readonly name: string;
  /** Go json tag, e.g. "name,omitempty" or "-". Absent: the Go field name is the key. */
  readonly json?: string;
}

export interface StructType {
  /** Go type name as reflect prints it, e.g. "template.templateMessage". */
  readonly name: string;
  readonly fields: readonly StructField[];
  /** Printed through a pointer: "&{...}" at top level. */
  readonly pointer?: boolean;
  /** A String() method (fmt and template printing use it). */
  readonly string?: (self: GoStruct) => string;
}

export class GoStruct {
  constructor(
    readonly type: StructType,
    readonly values: Readonly<Record<string, unknown>>,
  ) {}
  hasField(name: string): boolean {
    return this.type.fields.some((f) => f.name === name);
  }
  field(name: string): unknown {
    const v = this.values[name];
    return v === undefined ? null : v;
  }
}

export interface NamedOptions {
  /** Go type name used in messages and %T, e.g. "template.templateArgs". */
  readonly type: string;
  /** String() method. */
  readonly string?: () => string;
  /** MarshalJSON() method; must return compact Go-style JSON. */
  readonly marshalJSON?: () => string;
}

/** A Go named type (slice, map, string ...) with methods. Behaves as its underlying value otherwise. */
export class GoNamed {
  constructor(
    readonly value: unknown,
    readonly opts: NamedOptions,
  ) {}
}

/** A value that prints (via String()) as its compact Go JSON encoding, like Ollama's tool types. */
export function jsonPrintable(value: unknown, type = "template.jsonValue", jsonValue?: unknown): GoNamed {
  const src = jsonValue === undefined ? value : jsonValue;
  return new GoNamed(value, { type, string: () => marshalJSON(src) });
}

export type Kind =
  | "invalid"
  | "nil"
  | "bool"
  | "int"
  | "float"
  | "string"
  | "slice"
  | "bytes"
  | "map"
  | "struct"
  | "func";

export function unwrap(v: unknown): unknown {
  while (v instanceof GoNamed) v = v.value;
  return v;
}

export function kindOf(v: unknown): Kind {
  v = unwrap(v);
  if (v === undefined) return "invalid";
  if (v === null) return "nil";
  switch (typeof v) {
    case "boolean":
      return "bool";
    case "string":
      return "string";
    case "bigint":
      return "int";
    case "number":
      return Number.isInteger(v) ? "int" : "float";
    case "function":
      return "func";
    case "object":
      if (v instanceof GoFloat) return "float";
      if (v instanceof GoStruct) return "struct";
      if (v instanceof Uint8Array) return "bytes";
      if (Array.isArray(v)) return "slice";
      return "map";
    default:
      return "invalid";
  }
}

export function typeName(v: unknown): string {
  if (v instanceof GoNamed) return v.opts.type;
  if (v instanceof GoStruct) return (v.type.pointer ? "*" : "") + v.type.name;
  switch (kindOf(v)) {
    case "invalid":
      return "<invalid reflect.Value>";
    case "nil":
      return "interface {}";
    case "bool":
      return "bool";
    case "int":
      return "int";
    case "float":
      return "float64";
    case "string":
      return "string";
    case "slice":
      return "[]interface {}";
    case "bytes":
      return "[]uint8";
    case "map":
      return "map[string]interface {}";
    case "func":
      return "func(...interface {}) interface {}";
    default:
      return "struct {}";
  }
}

/** Numeric value of an int/float kind value. */
export function numberValue(v: unknown): number {
  v = unwrap(v);
  if (v instanceof GoFloat) return v.value;
  if (typeof v === "bigint") return Number(v);
  return v as number;
}

export function stringerOf(v: unknown): (() => string) | undefined {
  if (v instanceof GoNamed) return v.opts.string;
  if (v instanceof GoStruct && v.type.string) {
    const fn = v.type.string;
    return () => fn(v);
  }
  return undefined;
}

// ---- strings as Go sees them (UTF-8 bytes) ----

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

export function utf8Bytes(s: string): Uint8Array {
  return encoder.encode(s);
}

export function utf8Decode(b: Uint8Array): string {
  return decoder.decode(b);
}

/** Go string ordering (bytewise on UTF-8 == code point order). */
export function compareStrings(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx < cy ? -1 : 1;
  }
}

// ---- containers ----

export function lengthOf(v: unknown): number {
  v = unwrap(v);
  if (typeof v === "string") return utf8Length(v);
  if (v instanceof Uint8Array || Array.isArray(v)) return v.length;
  if (v instanceof Map) return v.size;
  return Object.keys(v as object).length;
}

/** Map entries sorted by key as Go's fmtsort does. */
export function mapEntries(v: unknown): Array<[unknown, unknown]> {
  v = unwrap(v);
  const entries: Array<[unknown, unknown]> =
    v instanceof Map ? [...v.entries()] : Object.entries(v as object);
  entries.sort((x, y) => compareKeys(x[0], y[0]));
  return entries.map(([k, val]) => [k, val === undefined ? null : val]);
}

function compareKeys(a: unknown, b: unknown): number {
  if (typeof a === "string" && typeof b === "string") return compareStrings(a, b);
  const ka = kindOf(a);
  const kb = kindOf(b);
  if ((ka === "int" || ka === "float") && (kb === "int" || kb === "float")) {
    return numberValue(a) - numberValue(b);
  }
  return compareStrings(String(a), String(b));
}

/** Map lookup: found flag and value (nil entries read as null). */
export function mapGet(v: unknown, key: string): { found: boolean; value: unknown } {
  v = unwrap(v);
  if (v instanceof Map) {
    if (!v.has(key)) return { found: false, value: null };
    const val: unknown = v.get(key);
    return { found: true, value: val === undefined ? null : val };
  }
  const obj = v as Record<string, unknown>;
  if (!Object.prototype.hasOwnProperty.call(obj, key)) return { found: false, value: null };
  const val = obj[key];
  return { found: true, value: val === undefined ? null : val };
}

// ---- encoding/json ----

export class JsonError extends Error {}

const HEX = "0123456789abcdef";

export function jsonString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case "\\":
        out += "\\\\";
        continue;
      case "\b":
        out += "\\b";
        continue;
      case "\f":
        out += "\\f";
        continue;
      case "\n":
        out += "\\n";
        continue;
      case "\r":
        out += "\\r";
        continue;
      case "\t":
        out += "\\t";
        continue;
      case "<":
      case ">":
      case "&":
        out += "\\u00" + HEX[c >> 4] + HEX[c & 15];
        continue;
    }
    if (c < 0x20) out += "\\u00" + HEX[c >> 4] + HEX[c & 15];
    else if (c === 0x2028 || c === 0x2029) out += "\\u" + c.toString(16);
    else if (c >= 0xd800 && c <= 0xdfff) out += "\\ufffd"; // lone surrogate: invalid UTF-8 in Go
    else out += ch;
  }
  return out + '"';
}

export function jsonFloat(f: number): string {
  if (!Number.isFinite(f)) throw new JsonError(`json: unsupported value: ${f === f ? (f > 0 ? "+Inf" : "-Inf") : "NaN"}`);
  if (Object.is(f, -0)) return "-0";
  // JS and Go agree: decimal notation for 1e-6 <= |f| < 1e21, exponent otherwise, shortest digits.
  return String(f);
}

function parseTag(tag: string | undefined, goName: string): { name: string; omitEmpty: boolean; skip: boolean } {
  if (tag === "-") return { name: "", omitEmpty: false, skip: true };
  const parts = (tag ?? "").split(",");
  return { name: parts[0] || goName, omitEmpty: parts.slice(1).includes("omitempty"), skip: false };
}

function isEmptyValue(v: unknown): boolean {
  switch (kindOf(v)) {
    case "invalid":
    case "nil":
      return true;
    case "bool":
      return unwrap(v) === false;
    case "int":
    case "float":
      return numberValue(v) === 0;
    case "string":
    case "slice":
    case "bytes":
    case "map":
      return lengthOf(v) === 0;
    default:
      return false;
  }
}

/** Go's json.Marshal (compact, HTML-escaped, map keys sorted). Throws JsonError when Go would fail. */
export function marshalJSON(v: unknown): string {
  if (v instanceof GoNamed && v.opts.marshalJSON) return v.opts.marshalJSON();
  if (v instanceof GoStruct) {
    const parts: string[] = [];
    for (const f of v.type.fields) {
      const tag = parseTag(f.json, f.name);
      if (tag.skip) continue;
      const fv = v.field(f.name);
      if (tag.omitEmpty && isEmptyValue(fv)) continue;
      parts.push(jsonString(tag.name) + ":" + marshalJSON(fv));
    }
    return "{" + parts.join(",") + "}";
  }
  const u = unwrap(v);
  switch (kindOf(u)) {
    case "invalid":
    case "nil":
      return "null";
    case "bool":
      return u ? "true" : "false";
    case "int":
      return typeof u === "bigint" ? u.toString() : BigInt(u as number).toString();
    case "float":
      return jsonFloat(numberValue(u));
    case "string":
      return jsonString(u as string);
    case "bytes":
      return '"' + Buffer.from(u as Uint8Array).toString("base64") + '"';
    case "slice":
      return "[" + (u as unknown[]).map((e) => marshalJSON(e)).join(",") + "]";
    case "map":
      return (
        "{" +
        mapEntries(u)
          .map(([k, val]) => jsonString(String(k)) + ":" + marshalJSON(val))
          .join(",") +
        "}"
      );
    case "func":
      throw new JsonError("json: unsupported type: func()");
    default:
      return "null";
  }
}

/**
 * Converts JSON.parse output into the values Go's encoding/json produces when decoding into
 * interface{}: every number becomes a float64 (GoFloat when integral), objects stay maps.
 */
export function fromJSON(v: unknown): unknown {
  if (typeof v === "number") return Number.isInteger(v) ? new GoFloat(v) : v;
  if (Array.isArray(v)) return v.map(fromJSON);
  if (v !== null && typeof v === "object" && !(v instanceof GoFloat) && !(v instanceof GoStruct) && !(v instanceof GoNamed)) {
    // fromEntries defines own properties: a key "__proto__" (a tool parameter's name) stays a key
    return Object.fromEntries(Object.entries(v).map(([k, val]) => [k, fromJSON(val)]));
  }
  return v;
}
