// Mutations of a valid request: values (type confusion, edge numbers, nasty strings, huge
// arrays, 100,000-level nesting), fields (removed, added, duplicated), the JSON text itself
// (invalid, truncated, wrong encoding) and the HTTP framing (method, path, content type,
// content length, Host and Origin headers).
import { OPTION_TYPES } from "../../src/registry/modelfile.js";
import { cloneTree, deepNesting, isObject, RawJson, setKey, toJsonText, type JsonObject, type JsonTree } from "./json-text.js";
import type { Rng } from "./prng.js";
import { BAD_UTF8, edgeFloat, edgeInt, nastyString } from "./values.js";

export interface HttpShape {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The JSON tree (before text mutations). */
  tree?: JsonTree;
  /** Set by text-level mutations: the bytes sent instead of the tree's text. */
  text?: Buffer;
  /** A Content-Length that lies, computed from the final body (contentLength()). */
  lengthLie?: LengthLie;
}

export type LengthLie = "zero" | "one-short" | "half" | "over-limit";

/** The Content-Length a lie declares for a body of `n` bytes. A declared length above the body
 *  but under the limit is never sent: the daemon would rightly wait for the rest until the
 *  deadline, a slow client rather than a bad request. */
export function contentLength(lie: LengthLie, n: number): number {
  switch (lie) {
    case "zero": return 0;
    case "one-short": return Math.max(0, n - 1);
    case "half": return Math.floor(n / 2);
    case "over-limit": return 99_999_999_999;
  }
}

type Path = Array<string | number>;

/** Every node of the tree with its path (the root is []), breadth-first, at most `max`. */
function nodes(tree: JsonTree, max = 400): Array<{ path: Path; value: JsonTree }> {
  const out: Array<{ path: Path; value: JsonTree }> = [];
  const queue: Array<{ path: Path; value: JsonTree }> = [{ path: [], value: tree }];
  while (queue.length && out.length < max) {
    const n = queue.shift()!;
    out.push(n);
    if (Array.isArray(n.value)) n.value.slice(0, 20).forEach((v, i) => queue.push({ path: [...n.path, i], value: v }));
    else if (isObject(n.value)) for (const [k, v] of Object.entries(n.value)) queue.push({ path: [...n.path, k], value: v });
  }
  return out;
}

function parentOf(tree: JsonTree, path: Path): JsonTree | undefined {
  let cur: JsonTree | undefined = tree;
  for (const p of path.slice(0, -1)) {
    if (Array.isArray(cur) && typeof p === "number") cur = cur[p];
    else if (isObject(cur) && typeof p === "string") cur = cur[p];
    else return undefined;
  }
  return cur;
}

function setAt(tree: JsonTree, path: Path, value: JsonTree | undefined): JsonTree {
  if (path.length === 0) return value ?? null;
  const parent = parentOf(tree, path);
  const last = path[path.length - 1]!;
  if (Array.isArray(parent) && typeof last === "number") {
    if (value === undefined) parent.splice(last, 1);
    else parent[last] = value;
  } else if (isObject(parent) && typeof last === "string") {
    if (value === undefined) delete parent[last];
    else setKey(parent, last, value);
  }
  return tree;
}

const show = (path: Path) => (path.length ? path.join(".") : "(body)");
const brief = (v: JsonTree) => {
  const t = toJsonText(v);
  return t.length > 80 ? `${t.slice(0, 80)}… (${t.length} chars)` : t;
};

/** Any JSON value, shallow. */
function randomValue(rng: Rng): JsonTree {
  switch (rng.int(9)) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return edgeInt(rng);
    case 3: return edgeFloat(rng);
    case 4: return nastyString(rng);
    case 5: return [];
    case 6: return {};
    case 7: return [rng.pick<JsonTree>([1, "a", null, {}, []]), rng.pick<JsonTree>([true, 2.5, "b"])];
    default: return { [rng.pick(["a", "type", "model", "__proto__", ""])]: rng.pick<JsonTree>([1, "x", null, [], {}]) };
  }
}

/** Numbers JSON.stringify cannot write. */
const RAW_NUMBERS = ["1e999", "-1e999", "1e-999", "-0", "123456789012345678901234567890", "0.0000000000000000000001", "1E+308", "2e308"];

/** A value for option `key`: an edge value of its type, or a value of the wrong type. */
function optionValue(rng: Rng, key: string): JsonTree {
  const type = OPTION_TYPES[key];
  if (rng.chance(0.2)) return randomValue(rng);
  switch (type) {
    case "int": return rng.chance(0.85) ? edgeInt(rng) : new RawJson(rng.pick(RAW_NUMBERS));
    case "float": return rng.chance(0.85) ? edgeFloat(rng) : new RawJson(rng.pick(RAW_NUMBERS));
    case "bool": return rng.pick<JsonTree>([true, false, 1, "true"]);
    default: return rng.pick<JsonTree>([[], [""], Array.from({ length: rng.pick([100, 100_000]) }, () => "x"), ["a".repeat(1 << 20)], nastyString(rng)]);
  }
}

/** Every option, weighted towards those that size the runner's work and memory. Options added
 *  after the corpus was fixed are left out, so that a case number keeps meaning the same body. */
const SIZING = new Set(["num_ctx", "num_batch", "num_thread", "num_predict", "num_keep", "num_gpu"]);
const LATER_OPTIONS = new Set(["prompt_lookup"]);
const OPTION_KEYS: ReadonlyArray<readonly [number, string]> = Object.keys(OPTION_TYPES)
  .filter((k) => !LATER_OPTIONS.has(k))
  .map((k) => [SIZING.has(k) ? 4 : 1, k] as const);

/** One edit of the tree; returns the new tree and what was done. */
function treeEdit(rng: Rng, tree: JsonTree, optionsKey: string): [JsonTree, string] {
  const all = nodes(tree);
  const target = rng.pick(all);
  const at = show(target.path);
  switch (rng.weighted([
    [4, "type"], [4, "number"], [3, "string"], [2, "deep"], [3, "remove"], [3, "add"], [5, "option"], [2, "big-array"], [1, "raw-number"],
  ] as const)) {
    case "type": {
      const v = randomValue(rng);
      return [setAt(tree, target.path, v), `${at} = ${brief(v)}`];
    }
    case "number": {
      const v = rng.chance(0.6) ? edgeInt(rng, typeof target.value === "number" ? target.value : undefined) : edgeFloat(rng);
      return [setAt(tree, target.path, v), `${at} = ${brief(v)}`];
    }
    case "string": {
      const v = nastyString(rng);
      return [setAt(tree, target.path, v), `${at} = ${brief(v)}`];
    }
    case "deep": {
      const depth = rng.pick([100, 1000, 10_000, 100_000, 1_000_000]);
      const shape = rng.pick(["array", "object", "mixed"] as const);
      return [setAt(tree, target.path, deepNesting(depth, shape)), `${at} = ${shape}s nested ${depth} deep`];
    }
    case "remove":
      if (target.path.length === 0) return [tree, "(nothing removed)"];
      return [setAt(tree, target.path, undefined), `${at} removed`];
    case "add": {
      const objs = all.filter((n) => isObject(n.value));
      const o = (objs.length ? rng.pick(objs) : { path: [] as Path, value: tree });
      if (!isObject(o.value)) return [tree, "(no object to add to)"];
      const key = rng.pick(["__proto__", "constructor", "prototype", "", "x".repeat(10_000), "model", "stream", "options", "format", "keep_alive", "extra"]);
      const v = randomValue(rng);
      setKey(o.value, key, v);
      return [tree, `${show([...o.path, key.length > 40 ? `${key.slice(0, 10)}…` : key])} added = ${brief(v)}`];
    }
    case "option": {
      // options are where sizes come from: num_ctx, num_batch, num_thread, num_predict, ...
      const root = isObject(tree) ? tree : undefined;
      if (!root) return [tree, "(no options on a non-object body)"];
      const current = root[optionsKey];
      const opts = isObject(current) ? current : {};
      setKey(root, optionsKey, opts);
      const key = rng.weighted(OPTION_KEYS);
      const v = optionValue(rng, key);
      setKey(opts, key, v);
      return [tree, `${optionsKey}.${key} = ${brief(v)}`];
    }
    case "big-array": {
      const item = Array.isArray(target.value) && target.value.length ? target.value[0]! : rng.pick<JsonTree>([1, "x", { role: "user", content: "hi" }]);
      const itemText = toJsonText(item);
      // at most 16 MB of body, a quarter of the daemon's limit
      const n = Math.min(rng.pick([1000, 100_000, 1_000_000]), Math.floor((16 << 20) / (itemText.length + 1)));
      const v = new RawJson(`[${Array(n).fill(itemText).join(",")}]`);
      return [setAt(tree, target.path, v), `${at} = array of ${n} × ${brief(item)}`];
    }
    case "raw-number": {
      const v = new RawJson(rng.pick(RAW_NUMBERS));
      return [setAt(tree, target.path, v), `${at} = ${v.text}`];
    }
  }
}

/** Damage to the JSON text itself. */
function textEdit(rng: Rng, text: string): [Buffer, string] {
  const b = Buffer.from(text, "utf8");
  switch (rng.int(9)) {
    case 0: {
      const at = rng.int(b.length + 1);
      return [b.subarray(0, at), `JSON text cut at byte ${at} of ${b.length}`];
    }
    case 1: {
      const at = rng.int(b.length + 1);
      const ins = rng.pick([Buffer.from(rng.pick(["{", "}", "[", "]", "\"", ",", ":", "\\", "\u0000"])), rng.pick(BAD_UTF8), rng.bytes(rng.between(1, 8))]);
      return [Buffer.concat([b.subarray(0, at), ins, b.subarray(at)]), `${ins.length} bytes inserted at ${at}: ${ins.toString("hex")}`];
    }
    case 2:
      return [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b]), "UTF-8 BOM before the JSON"];
    case 3:
      return [Buffer.concat([b, Buffer.from(rng.pick(["}", "]]]", " garbage", "\n{}", "\u0000"]))]), "trailing text after the JSON"];
    case 4: {
      const alt = rng.pick(["", " ", "null", "[]", "1", "\"x\"", "true", "NaN", "{", "{\"model\":}", "\u0000", "[".repeat(100_000)]);
      return [Buffer.from(alt), `body replaced by ${JSON.stringify(alt.slice(0, 20))}${alt.length > 20 ? `… (${alt.length})` : ""}`];
    }
    case 5: {
      // duplicate the first key with another value (the last one wins in JSON.parse)
      const m = /^\{"([^"]*)":/.exec(text);
      if (!m) return [b, "(no key to duplicate)"];
      const dup = `{"${m[1]}":${toJsonText(randomValue(rng))},${text.slice(1)}`;
      return [Buffer.from(dup), `key "${m[1]}" duplicated`];
    }
    case 6:
      return [Buffer.from(text, "utf16le"), "JSON sent as UTF-16LE"];
    case 7: {
      const at = rng.int(b.length);
      const c = Buffer.from(b);
      c[at] = rng.int(256);
      return [c, `byte ${at} set to 0x${c[at]!.toString(16)}`];
    }
    default:
      return [Buffer.from(text.replace(/"/g, "'")), "single quotes instead of double"];
  }
}

const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"];

/** Damage to the HTTP framing around the body. */
function httpEdit(rng: Rng, req: HttpShape): string {
  switch (rng.int(7)) {
    case 0: {
      const m = rng.pick(METHODS.filter((x) => x !== req.method));
      req.method = m;
      return `method ${m}`;
    }
    case 1: {
      const p = rng.pick([`${req.path}/`, req.path.toUpperCase(), `/${req.path}`, `${req.path}?x=1&model=%00`, `${req.path}/..`, `${req.path}%2e%2e%2f`, `${req.path}?${"a".repeat(8000)}`, `${req.path}#x`]);
      req.path = p;
      return `path ${p.slice(0, 60)}`;
    }
    case 2: {
      const ct = rng.pick(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/json; charset=utf-16", "application/octet-stream", "", "application/json, text/html"]);
      req.headers["content-type"] = ct;
      return `content-type ${JSON.stringify(ct)}`;
    }
    case 3:
      req.lengthLie = rng.pick(["zero", "one-short", "half", "over-limit"] as const);
      delete req.headers["transfer-encoding"];
      return `content-length: ${req.lengthLie}`;
    case 4: {
      const enc = rng.pick(["gzip", "deflate", "br", "identity, gzip"]);
      req.headers["content-encoding"] = enc;
      return `content-encoding ${enc} (body not encoded)`;
    }
    case 5: {
      const [h, v] = rng.pick([["host", "evil.example.com"], ["host", "127.0.0.1.nip.io"], ["origin", "http://evil.example.com"], ["origin", "null"], ["x-fuzz", "y".repeat(8000)], ["authorization", "Bearer x"]] as const);
      req.headers[h] = v;
      return `header ${h}: ${v.slice(0, 40)}`;
    }
    default:
      req.headers["transfer-encoding"] = "chunked";
      delete req.lengthLie;
      return "transfer-encoding chunked";
  }
}

export interface BodyMutation {
  req: HttpShape;
  edits: string[];
}

/** 1–3 edits of the tree, the text or the framing of a valid request. */
export function mutateRequest(rng: Rng, method: string, path: string, valid: JsonObject | undefined): BodyMutation {
  let tree: JsonTree | undefined = valid ? cloneTree(valid) : undefined;
  const req: HttpShape = { method, path, headers: valid ? { "content-type": "application/json" } : {} };
  const edits: string[] = [];
  const n = rng.weighted([[6, 1], [3, 2], [1, 3]] as const);
  let text: Buffer | undefined;
  for (let i = 0; i < n; i++) {
    const kind = tree === undefined ? rng.weighted([[3, "http"], [1, "body"]] as const) : rng.weighted([[14, "tree"], [3, "text"], [3, "http"]] as const);
    if (kind === "tree" && tree !== undefined && !text) {
      const [t, e] = treeEdit(rng, tree, path === "/api/create" ? "parameters" : "options");
      tree = t;
      edits.push(e);
    } else if (kind === "text" && tree !== undefined) {
      const [b, e] = textEdit(rng, text ? text.toString("utf8") : toJsonText(tree));
      text = b;
      edits.push(e);
    } else if (kind === "body") {
      // a body where none is expected
      tree = randomValue(rng);
      edits.push(`body ${brief(tree)} on a bodiless route`);
    } else {
      edits.push(httpEdit(rng, req));
    }
  }
  req.tree = tree;
  req.text = text;
  return { req, edits };
}
