// tool_choice's shape for a nested value (an object or list parameter) in the syntax the model's
// template writes it in, beside compact JSON, which every reader takes too: Gemma 4's
// `{key:<|"|>text<|"|>,n:1}` (keys sorted, as its `dictsort`), the Python literal a template's
// `{{ value }}` prints (`{'key': 'text', 'on': True}`: Seed-OSS, MiniCPM, LFM2's lists), and
// MiniMax-M3's nested elements (`NS<key>text NS</key>`, a list as `NS<item>…NS</item>`s). A forced
// call is then one the model was trained to write. Only plain schemas get a style (types,
// properties, items, string enums); one with constraints a style would not keep (pattern,
// minimum, $ref, anyOf, …) stays compact JSON, which enforces them.
import type { MarkupPiece } from "../../backends/backend.js";
import { isObject } from "./tool-call-syntax.js";

export interface ValueStyle {
  /** Any string, as the style quotes it. */
  string: MarkupPiece[];
  /** One of a string enum's words as written (undefined: not writable in this style). */
  word(w: string): string | undefined;
  bool: readonly [string, string];
  /** An object's member: what is written before its value (its key), and after it. */
  key(k: string): { before: string; after: string } | undefined;
  object: { open: string; close: string; separator: string; sorted: boolean };
  /** A list's item: what goes around each, and between them. */
  list: { open: string; close: string; separator: string; item: { before: string; after: string } };
}

const text = (t: string): MarkupPiece => ({ text: t });

export const GEMMA4_STYLE: ValueStyle = {
  string: [text('<|"|>'), { free: ['<|"|>'] }, text('<|"|>')],
  word: (w) => (w.includes('<|"|>') ? undefined : `<|"|>${w}<|"|>`),
  bool: ["true", "false"],
  key: (k) => (/^[A-Za-z_][\w.-]*$/.test(k) ? { before: `${k}:`, after: "" } : undefined),
  object: { open: "{", close: "}", separator: ",", sorted: true },
  list: { open: "[", close: "]", separator: ",", item: { before: "", after: "" } },
};

/** Python's repr of a string: in single quotes, a quote, backslash or line break escaped; or
 *  double-quoted as JSON writes it, as repr does a string with a quote in it. */
const PY_PLAIN: MarkupPiece = { free: ["'", "\\", "\n", "\r"] };
const PY_ESCAPE: MarkupPiece = { choice: ["\\\\", "\\'", "\\n", "\\r", "\\t"].map((e) => [text(e)]) };
const PY_STRING: MarkupPiece[] = [
  { choice: [[text("'"), PY_PLAIN, { repeat: [PY_ESCAPE, PY_PLAIN], separator: "" }, text("'")], [{ json: { type: "string" }, root: {} }]] },
];

export const PYTHON_STYLE: ValueStyle = {
  string: PY_STRING,
  word: (w) => (/['\\\n\r]/.test(w) ? JSON.stringify(w) : `'${w}'`),
  bool: ["True", "False"],
  key: (k) => (/['\\\n\r]/.test(k) ? undefined : { before: `'${k}': `, after: "" }),
  object: { open: "{", close: "}", separator: ", ", sorted: false },
  list: { open: "[", close: "]", separator: ", ", item: { before: "", after: "" } },
};

/** MiniMax-M3's elements, `ns` (its separator token) before every tag. */
export function elementsStyle(ns: string): ValueStyle {
  return {
    string: [{ free: [ns] }],
    word: (w) => (w.includes(ns) ? undefined : w),
    bool: ["true", "false"],
    key: (k) => (/^[A-Za-z_][\w.:-]{0,128}$/.test(k) ? { before: `${ns}<${k}>`, after: `${ns}</${k}>` } : undefined),
    object: { open: "", close: "", separator: "", sorted: false },
    list: { open: "", close: "", separator: "", item: { before: `${ns}<item>`, after: `${ns}</item>` } },
  };
}

/** The keywords a styled value keeps; any other (a constraint) leaves the value to JSON. */
const PLAIN = new Set(["type", "properties", "required", "items", "enum", "description", "title", "default", "examples", "additionalProperties", "$comment"]);
const MAX_DEPTH = 6;

/** `schema`'s values in `style`; undefined where the schema is not plain enough to keep. */
export function styledValue(schema: unknown, style: ValueStyle, root: unknown, depth = 0): MarkupPiece[] | undefined {
  if (!isObject(schema) || depth > MAX_DEPTH || Object.keys(schema).some((k) => !PLAIN.has(k))) return undefined;
  const s = schema;
  if (Array.isArray(s.enum)) {
    if (!s.enum.every((w): w is string => typeof w === "string") || s.enum.length === 0) return undefined;
    const words = s.enum.map((w) => style.word(w));
    return words.every((w): w is string => w !== undefined) ? [{ choice: words.map((w) => [text(w)]) }] : undefined;
  }
  // a member's or item's value in the same style where its schema is plain, else as JSON
  const inner = (child: unknown): MarkupPiece[] => styledValue(child, style, root, depth + 1) ?? [{ json: child, root }];
  switch (s.type) {
    case "string":
      return style.string;
    case "boolean":
      return [{ choice: [[text(style.bool[0])], [text(style.bool[1])]] }];
    case "integer":
    case "number":
      return [{ json: s, root }];
    case "array": {
      if (s.items !== undefined && !isObject(s.items)) return undefined;
      const { open, close, separator, item } = style.list;
      const one = [text(item.before), ...(s.items === undefined ? [{ json: {}, root }] : inner(s.items)), text(item.after)];
      return [text(open), { repeat: one, separator }, text(close)];
    }
    case "object": {
      if (!isObject(s.properties) || s.additionalProperties === true || isObject(s.additionalProperties)) return undefined;
      const required = new Set(Array.isArray(s.required) ? s.required : []);
      let entries = Object.entries(s.properties);
      if (style.object.sorted) entries = sortedByKey(entries);
      const members: { pieces: MarkupPiece[]; required: boolean }[] = [];
      for (const [k, child] of entries) {
        const key = style.key(k);
        if (!key) return undefined;
        members.push({ pieces: [text(key.before), ...inner(child), text(key.after)], required: required.has(k) });
      }
      const { open, close, separator } = style.object;
      return [text(open), { members, separator }, text(close)];
    }
    default:
      return undefined;
  }
}

/** In Jinja's `dictsort` order: keys compared lower-cased, ties as they came. */
export function sortedByKey<T>(entries: Array<[string, T]>): Array<[string, T]> {
  return entries
    .map((e) => ({ e, k: e[0].toLowerCase() }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map(({ e }) => e);
}
