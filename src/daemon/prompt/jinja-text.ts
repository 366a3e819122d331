// Jinja2's text filters and Python's str methods that have no JavaScript twin, on plain strings:
// truncate, wordwrap (Python's textwrap), center, striptags, filesizeformat, urlencode's quoting,
// and str.title/str.swapcase. Lengths count code points, as Python's len() does.
import { toFixed } from "./jinja-format.js";

const chars = (s: string): string[] => [...s];
const len = (s: string): number => chars(s).length;

/** Jinja2's truncate: kept whole within `leeway` characters over; else cut at `length` (less the end
 *  marker), at the last space unless killwords. */
export function truncate(s: string, length: number, killwords: boolean, end: string, leeway: number): string {
  if (len(s) <= length + leeway) return s;
  const head = chars(s).slice(0, Math.max(0, length - len(end))).join("");
  if (killwords) return head + end;
  const space = head.lastIndexOf(" ");
  return (space < 0 ? head : head.slice(0, space)) + end;
}

/** Python's str.center(width, fill): the odd space goes left when the width is odd. */
export function center(s: string, width: number, fill = " "): string {
  const pad = width - len(s);
  if (pad <= 0) return s;
  const left = Math.floor(pad / 2) + (pad & width & 1);
  return fill.repeat(left) + s + fill.repeat(pad - left);
}

// textwrap's chunking (TextWrapper.wordsep_re): whitespace runs, em-dashes, words split after hyphens.
const W = "[\\p{L}\\p{N}_]";
const LT = "[\\p{L}_]";
const WP = `[\\p{L}\\p{N}_!"'&.,?]`;
const WS = "[\\t\\n\\x0b\\x0c\\r ]";
const NWS = "[^\\t\\n\\x0b\\x0c\\r ]";
const WORDSEP = new RegExp(`(${WS}+|(?<=${WP})-{2,}(?=${W})|${NWS}+?(?:-(?:(?<=${LT}{2}-)|(?<=${LT}-${LT}-))(?=${LT}-?${LT})|(?=${WS}|$)|(?<=${WP})(?=-{2,}${W})))`, "u");
const WORDSEP_SIMPLE = new RegExp(`(${WS}+)`, "u");

/** Python's textwrap.wrap(text, width, expand_tabs=False, replace_whitespace=False, ...). */
function wrapLine(text: string, width: number, breakLongWords: boolean, breakOnHyphens: boolean): string[] {
  const chunks = text.split(breakOnHyphens ? WORDSEP : WORDSEP_SIMPLE).filter((c) => c !== "").reverse();
  const lines: string[] = [];
  const blank = (c: string) => c.trim() === "" && !/[^\t\n\x0b\x0c\r ]/.test(c);
  while (chunks.length > 0) {
    const line: string[] = [];
    let used = 0;
    if (blank(chunks.at(-1)!) && lines.length > 0) chunks.pop();
    while (chunks.length > 0 && used + len(chunks.at(-1)!) <= width) used += len(line[line.push(chunks.pop()!) - 1]!);
    if (chunks.length > 0 && len(chunks.at(-1)!) > width) {
      const room = width < 1 ? 1 : width - used;
      if (breakLongWords) {
        const chunk = chars(chunks.at(-1)!);
        let end = room;
        if (breakOnHyphens && chunk.length > room) {
          const hyphen = chunk.slice(0, room).lastIndexOf("-");
          if (hyphen > 0 && chunk.slice(0, hyphen).some((c) => c !== "-")) end = hyphen + 1;
        }
        line.push(chunk.slice(0, end).join(""));
        chunks[chunks.length - 1] = chunk.slice(end).join("");
      } else if (line.length === 0) line.push(chunks.pop()!);
    }
    if (line.length > 0 && blank(line.at(-1)!)) line.pop();
    if (line.length > 0) lines.push(line.join(""));
  }
  return lines;
}

/** Jinja2's wordwrap: each line of the text wrapped on its own, joined by `wrapstring`. */
export function wordwrap(s: string, width: number, breakLongWords: boolean, wrapstring: string, breakOnHyphens: boolean): string {
  return splitLines(s).map((line) => wrapLine(line, width, breakLongWords, breakOnHyphens).join(wrapstring)).join(wrapstring);
}

/** Python's str.splitlines(). */
export function splitLines(s: string): string[] {
  return s.split(/\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/).filter((x, i, all) => i < all.length - 1 || x !== "");
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };
/** markupsafe's striptags: comments and tags out, entities decoded, whitespace collapsed. */
export function striptags(s: string): string {
  const text = s.replace(/<!--[\s\S]*?-->/g, "").replace(/<[^>]*>/g, "");
  const decoded = text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === "#") {
      const cp = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
  return decoded.split(/\s+/).filter(Boolean).join(" ");
}

/** Jinja2's filesizeformat: "1 Byte", "12 Bytes", then one decimal of kB/MB/… (KiB/MiB/… when binary). */
export function filesizeformat(bytes: number, binary: boolean): string {
  const base = binary ? 1024 : 1000;
  const prefixes = binary ? ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"] : ["kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
  if (bytes === 1) return "1 Byte";
  if (bytes < base) return `${Math.trunc(bytes)} Bytes`;
  let i = 0;
  for (; i < prefixes.length - 1; i++) if (bytes < base ** (i + 2)) break;
  return `${toFixed((base * bytes) / base ** (i + 2), 1)} ${prefixes[i]}`;
}

/** Python's urllib.parse.quote on UTF-8: unreserved characters and `safe` stay, the rest is %XX. */
export function urlQuote(s: string, safe: string): string {
  let out = "";
  for (const byte of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_.\-~]/.test(c) || safe.includes(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Python's str.title(): a letter after a non-letter is upper case, others lower. */
export function title(s: string): string {
  let prevCased = false;
  let out = "";
  for (const c of s) {
    const cased = c.toLowerCase() !== c.toUpperCase();
    out += cased ? (prevCased ? c.toLowerCase() : c.toUpperCase()) : c;
    prevCased = cased;
  }
  return out;
}

/** Jinja2's title filter (not str.title): a word starts after a dash, space or opening bracket. */
export function titleFilter(s: string): string {
  return s.split(/([-\s({[<]+)/u).filter(Boolean).map((w) => { const [first = "", ...rest] = [...w]; return first.toUpperCase() + rest.join("").toLowerCase(); }).join("");
}

/** Python's str.istitle(). */
export function isTitle(s: string): boolean {
  let prevCased = false, any = false;
  for (const c of s) {
    const upper = c !== c.toLowerCase(), lower = c !== c.toUpperCase();
    if (upper && prevCased) return false;
    if (lower && !prevCased) return false;
    if (upper || lower) any = true;
    prevCased = upper || lower;
  }
  return any;
}

/** Python's str.expandtabs(tabsize). */
export function expandTabs(s: string, size: number): string {
  let col = 0, out = "";
  for (const c of s) {
    if (c === "\t") {
      const n = size > 0 ? size - (col % size) : 0;
      out += " ".repeat(n);
      col += n;
    } else {
      out += c;
      col = c === "\n" || c === "\r" ? 0 : col + 1;
    }
  }
  return out;
}
