// Request checks for /v1 with OpenAI's own wording, so a client sees the message it would get
// from api.openai.com ("Invalid type for 'messages[0].content': expected …, but got … instead.").
import { badRequest, type ApiError } from "../../errors.js";

export type Obj = Record<string, unknown>;

export function isObject(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** How OpenAI names the JSON type of a value in its messages. */
export function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  switch (typeof v) {
    case "string":
      return "a string";
    case "boolean":
      return "a boolean";
    case "number":
      return Number.isInteger(v) ? "an integer" : "a decimal";
    case "object":
      return "an object";
    default:
      return typeof v;
  }
}

export function invalidType(path: string, expected: string, v: unknown): ApiError {
  return badRequest(`Invalid type for '${path}': expected ${expected}, but got ${typeName(v)} instead.`);
}

export function missingParameter(path: string): ApiError {
  return badRequest(`Missing required parameter: '${path}'.`);
}

function quoteList(values: readonly string[]): string {
  const q = values.map((v) => `'${v}'`);
  if (q.length <= 1) return q.join("");
  if (q.length === 2) return `${q[0]} and ${q[1]}`;
  return `${q.slice(0, -1).join(", ")}, and ${q.at(-1)}`;
}

export function invalidValue(v: unknown, supported: readonly string[]): ApiError {
  return badRequest(`Invalid value: '${String(v)}'. Supported values are: ${quoteList(supported)}.`);
}

export function aboveMaximum(path: string, max: number, v: number): ApiError {
  return badRequest(`Invalid '${path}': integer above maximum value. Expected a value <= ${max}, but got ${v} instead.`);
}

export function belowMinimum(path: string, min: number, v: number): ApiError {
  return badRequest(`Invalid '${path}': integer below minimum value. Expected a value >= ${min}, but got ${v} instead.`);
}

/** Typed optional-field readers: absent or null → undefined; a wrong type → OpenAI's 400. */
export const field = {
  string(o: Obj, key: string, path = key): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") throw invalidType(path, "a string", v);
    return v;
  },
  number(o: Obj, key: string, path = key): number | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v)) throw invalidType(path, "a number", v);
    return v;
  },
  integer(o: Obj, key: string, path = key): number | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isInteger(v)) throw invalidType(path, "an integer", v);
    return v;
  },
  boolean(o: Obj, key: string, path = key): boolean | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "boolean") throw invalidType(path, "a boolean", v);
    return v;
  },
  object(o: Obj, key: string, path = key): Obj | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (!isObject(v)) throw invalidType(path, "an object", v);
    return v;
  },
  array(o: Obj, key: string, path = key): unknown[] | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) throw invalidType(path, "an array", v);
    return v;
  },
};

/** `stop`: a string or an array of strings (OpenAI); null or absent → none. */
export function stopList(o: Obj): string[] | undefined {
  const v = o.stop;
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return [v];
  if (Array.isArray(v)) {
    v.forEach((s, i) => {
      if (typeof s !== "string") throw invalidType(`stop[${i}]`, "a string", s);
    });
    return v as string[];
  }
  throw invalidType("stop", "one of a string or array of strings", v);
}

/** The request body as an object, or OpenAI's complaint. */
export function requestObject(body: unknown): Obj {
  if (!isObject(body)) throw badRequest(`Invalid type for request body: expected an object, but got ${typeName(body)} instead.`);
  return body;
}

/** `model`: required, a string. */
export function modelOf(o: Obj): string {
  const model = field.string(o, "model");
  if (!model) throw badRequest("you must provide a model parameter");
  return model;
}
