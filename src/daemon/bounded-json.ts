// JSON from clients (request bodies, and JSON carried inside them as strings, such as OpenAI tool
// call arguments) is parsed here with its nesting bounded. JSON.parse itself is iterative in V8,
// but nearly everything after it recurses once per level (zod, the format schema walker, the
// template engines' value conversion, JSON.stringify), so 100,000 nested arrays became a 500
// "Maximum call stack size exceeded" (issue 13). The depth is counted by a flat scan of the raw
// text before anything is parsed, so no recursion, and no allocation, ever sees a deep value.

/**
 * The deepest nesting of arrays and objects accepted. Real clients stay far below it (a JSON
 * schema that zod generates nests 20-30 levels, each level of the request body adds one); every
 * recursive walker reachable from a request is safe well past it. Go's encoding/json, which
 * Ollama uses, stops at 10,000 ("exceeded max depth"); ours is lower because our walkers recurse
 * on a JavaScript stack of fixed size, and nothing legitimate needs more.
 */
export const MAX_JSON_DEPTH = 128;

/** Arrays and objects in one body: real requests hold at most thousands (messages, tools, schema
 *  nodes); each costs ~100 bytes of heap, so 541,200 tiny objects (a 16.7 MB body) kept 75 MB. */
export const MAX_JSON_CONTAINERS = 100_000;

export class JsonSizeError extends Error {
  override name = "JsonSizeError";
  constructor(readonly limit: number) {
    super(`too many values: more than ${limit} arrays and objects in one body`);
  }
}

export class JsonDepthError extends Error {
  override name = "JsonDepthError";
  constructor(readonly limit: number) {
    super(`exceeded max depth: arrays and objects nest more than ${limit} levels deep`);
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether `text` nests arrays and objects deeper than `limit`, counting brackets outside string
 * literals in one pass (strings are skipped with indexOf: base64 images make most of a large
 * body). Malformed text is scanned the same way; JSON.parse rejects it afterwards.
 */
export function nestsDeeperThan(text: string, limit: number, maxContainers = Infinity): boolean {
  let depth = 0;
  let containers = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i === -1) return false; // unterminated string
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return true;
      if (++containers > maxContainers) throw new JsonSizeError(maxContainers);
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that ends the string opened at `open` (one not escaped by an odd run
 *  of backslashes), or -1. */
function closingQuote(text: string, open: number): number {
  for (let j = text.indexOf('"', open + 1); j !== -1; j = text.indexOf('"', j + 1)) {
    let k = j - 1;
    while (text.charCodeAt(k) === BACKSLASH) k--;
    if ((j - 1 - k) % 2 === 0) return j;
  }
  return -1;
}

/** JSON.parse, refusing nesting deeper than `limit` (JsonDepthError) and more than
 *  MAX_JSON_CONTAINERS arrays and objects (JsonSizeError) before parsing. */
export function parseJson(text: string, limit = MAX_JSON_DEPTH): unknown {
  if (nestsDeeperThan(text, limit, MAX_JSON_CONTAINERS)) throw new JsonDepthError(limit);
  return JSON.parse(text) as unknown;
}
