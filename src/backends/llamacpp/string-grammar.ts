// JSON strings under a schema's string keywords: `pattern`, `format` (date, time, date-time,
// duration, uuid, email, hostname, ipv4, ipv6, uri, uri-reference: written here as patterns),
// `minLength`/`maxLength`. A pattern and a format are both
// honoured (their intersection); lengths narrow the pattern's counts. What cannot be honoured is
// dropped, the rest kept: an unsupported pattern leaves the format and lengths, lengths that
// contradict the pattern leave the pattern.
import { InvalidSchemaError, type RuleSet } from "./gbnf.js";
import { boundLength, maxLen, minLen, raiseLength } from "./regex-length.js";
import { renderIntersection } from "./regex-automaton.js";
import { renderRx } from "./regex-grammar.js";
import { parsePattern, UnsupportedPatternError, type Rx } from "./regex-tree.js";

const DAY31 = "(0[1-9]|[12][0-9]|3[01])";
const DAY30 = "(0[1-9]|[12][0-9]|30)";
const DAY28 = "(0[1-9]|1[0-9]|2[0-8])";
const LEAP_YEAR = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[048]|[2468][048]|[13579][26])00)";
/** RFC 3339 full-date, with the days of each month and February 29 only in leap years. */
const DATE = `([0-9]{4}-((0[13578]|1[02])-${DAY31}|(0[469]|11)-${DAY30}|02-${DAY28})|${LEAP_YEAR}-02-29)`;
/** RFC 3339 full-time: a time zone is required; no leap second. */
const TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
const LABEL = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,20}[a-zA-Z0-9])?";
const OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
/** A domain name: labels, then a top-level label of letters. */
const DOMAIN = `(${LABEL}\\.){1,3}[a-zA-Z]{2,12}`;
/** An http(s) URL of a domain, a path and a query of plain characters: what every URI validator
 *  and WHATWG URL parser (zod's z.url()) accepts. */
const HTTP_URL = `https?://${DOMAIN}(/[a-zA-Z0-9._~-]{1,24}){0,4}/?(\\?[a-zA-Z0-9_.~-]{1,16}=[a-zA-Z0-9_.~-]{0,16}(&[a-zA-Z0-9_.~-]{1,16}=[a-zA-Z0-9_.~-]{0,16}){0,3})?`;

/** Formats as anchored patterns; other formats are not enforced (ignored, as Ollama does). */
const FORMATS: Record<string, string> = {
  date: `^${DATE}$`,
  time: `^${TIME}$`,
  "date-time": `^${DATE}T${TIME}$`,
  uuid: "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
  // The common subset of what validators accept: dot-separated atoms, a domain of labels.
  email: `^[a-zA-Z0-9_+-]{1,24}(\\.[a-zA-Z0-9_+-]{1,24}){0,2}@${DOMAIN}$`,
  ipv4: `^(${OCTET}\\.){3}${OCTET}$`,
  // the full form, eight groups (no "::" shortening)
  ipv6: "^([0-9a-f]{1,4}:){7}[0-9a-f]{1,4}$",
  hostname: `^(${LABEL}\\.){0,3}${LABEL}$`,
  uri: `^${HTTP_URL}$`,
  "uri-reference": `^${HTTP_URL}$`,
  // ISO 8601: days, or a time of hours, minutes and seconds, or both
  duration: "^P(([1-9][0-9]{0,3}D)(T([1-9][0-9]{0,2}H)?([1-9][0-9]{0,2}M)?([1-9][0-9]{0,2}S))?|T([1-9][0-9]{0,2}H)?([1-9][0-9]{0,2}M)?[1-9][0-9]{0,2}S)$",
};

export interface StringKeywords {
  pattern?: unknown;
  format?: unknown;
  minLength?: unknown;
  maxLength?: unknown;
}

const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined);

function patternTree(pattern: unknown): Rx | undefined {
  if (typeof pattern !== "string") return undefined;
  try {
    return parsePattern(pattern);
  } catch (err) {
    if (err instanceof UnsupportedPatternError) return undefined;
    throw err;
  }
}

/** Lengths applied to a tree: the narrowed tree, or the tree as it was if they contradict it. */
function withLengths(tree: Rx, min: number, max: number): Rx {
  let t: Rx | undefined = tree;
  if (min > 0 && minLen(t) < min) t = raiseLength(t, min);
  if (t && max !== Infinity && maxLen(t) > max) t = boundLength(t, max);
  return t ?? tree;
}

/**
 * The JSON string (quotes included) for these keywords, or undefined when none of them constrains
 * the string (the caller uses its plain string rule). `within` is a further set of strings the
 * value must belong to (object keys: none of the declared names).
 */
export function stringGrammar(k: StringKeywords, rules: RuleSet, hint: string, char: () => string, within?: Rx): string | undefined {
  const min = count(k.minLength) ?? 0;
  const max = count(k.maxLength) ?? Infinity;
  if (min > max) throw new InvalidSchemaError(`minLength ${min} is greater than maxLength ${max}`);
  const pattern = patternTree(k.pattern);
  const format = typeof k.format === "string" && Object.hasOwn(FORMATS, k.format) ? parsePattern(FORMATS[k.format]!) : undefined;
  const quoted = (body: string) => rules.add(hint, `"\\"" ${body} "\\""`);
  // Lengths narrow the first tree; a second one is intersected (the pattern's own format first).
  const [first, second] = [pattern, within ?? format, format].filter((t, i, all): t is Rx => t !== undefined && all.indexOf(t) === i);
  if (first && second) {
    const both = renderIntersection(withLengths(first, min, max), second, rules, hint);
    if (both) return quoted(both);
  }
  if (first) return quoted(renderRx(withLengths(first, min, max), rules));
  if (min === 0 && max === Infinity) return undefined;
  return quoted(rules.repeat(char(), min, max));
}
