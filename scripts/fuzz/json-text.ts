// Request bodies as JSON trees that may hold text JSON.stringify cannot produce: numbers such as
// 1e999, duplicate keys, nesting 100,000 levels deep (kept as text, so building and printing a
// case never recurses that deep), or outright invalid JSON.

/** JSON text inserted verbatim where a value goes. */
export class RawJson {
  constructor(readonly text: string) {}
}

export type JsonTree = null | boolean | number | string | RawJson | JsonTree[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonTree;
}

export function isObject(v: JsonTree | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof RawJson);
}

/** Sets an own property, also for "__proto__" (a plain assignment would set the prototype). */
export function setKey(o: JsonObject, key: string, value: JsonTree): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Copy of a tree (raw nodes are shared: they are immutable). */
export function cloneTree(v: JsonTree): JsonTree {
  if (Array.isArray(v)) return v.map(cloneTree);
  if (isObject(v)) {
    const o: JsonObject = {};
    for (const [k, x] of Object.entries(v)) setKey(o, k, cloneTree(x));
    return o;
  }
  return v;
}

/** JSON text of a tree; non-finite numbers become 1e999-style literals. */
export function toJsonText(v: JsonTree): string {
  if (v instanceof RawJson) return v.text;
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "NaN";
    if (!Number.isFinite(v)) return v > 0 ? "1e999" : "-1e999";
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(",")}]`;
  if (isObject(v)) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${toJsonText(x)}`).join(",")}}`;
  return JSON.stringify(v);
}

/** `depth` levels of arrays or objects around `inner` (or left open), as text. */
export function deepNesting(depth: number, shape: "array" | "object" | "mixed", inner = "1", closed = true): RawJson {
  const open = shape === "array" ? "[" : shape === "object" ? '{"a":' : '[{"a":';
  const close = shape === "array" ? "]" : shape === "object" ? "}" : "}]";
  const reps = shape === "mixed" ? Math.ceil(depth / 2) : depth;
  return new RawJson(open.repeat(reps) + inner + (closed ? close.repeat(reps) : ""));
}
