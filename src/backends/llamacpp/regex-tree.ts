// JSON Schema `pattern` (an ECMAScript regular expression) parsed into a small tree: character
// sets, sequences, alternatives, counted repetitions. An unanchored side matches anything there,
// as a search does; characters a JSON string cannot carry in our grammar are removed.
//
// Backreferences, lookaround, word boundaries and property escapes have no grammar: such a
// pattern is UnsupportedPatternError and the caller ignores it, as llama.cpp does. A pattern that
// is not a regular expression at all is InvalidPatternError.
import { CharSet, DIGIT, DOT, SPACE, WORD } from "./char-set.js";
import { InvalidSchemaError } from "./gbnf.js";

export class UnsupportedPatternError extends Error {}
export class InvalidPatternError extends InvalidSchemaError {}

export type Rx =
  | { t: "set"; set: CharSet }
  | { t: "seq"; items: Rx[] }
  | { t: "alt"; alts: Rx[] }
  | { t: "rep"; node: Rx; min: number; max: number };

type Node = Rx | { t: "bol" } | { t: "eol" } | { t: "seq"; items: Node[] } | { t: "alt"; alts: Node[] } | { t: "rep"; node: Node; min: number; max: number };

/** Characters a JSON string can carry in our grammar: all but the control characters without a
 *  short escape (\b \t \n \f \r). */
export const ENCODABLE = CharSet.ALL.minus(CharSet.of([0, 0x1f], [0x7f, 0x7f])).union(CharSet.of([8, 10], [12, 13]));

const EMPTY_SEQ: Rx = { t: "seq", items: [] };
export const ANY_STRING: Rx = { t: "rep", node: { t: "set", set: ENCODABLE }, min: 0, max: Infinity };
const MAX_COUNT = 1_000_000;

const cpOf = (s: string): number => s.codePointAt(0)!;

/** Groups nested deeper than this are not followed (the tree walkers recurse). */
const MAX_GROUP_DEPTH = 100;

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly src: string) {}

  parse(): Node {
    const n = this.disjunction();
    if (this.i < this.src.length) throw new InvalidPatternError(`unbalanced parenthesis at ${this.i}`);
    return n;
  }

  private peek(): string | undefined {
    return this.src[this.i];
  }

  private disjunction(): Node {
    const alts: Node[] = [this.alternative()];
    while (this.peek() === "|") {
      this.i++;
      alts.push(this.alternative());
    }
    return alts.length === 1 ? alts[0]! : { t: "alt", alts };
  }

  private alternative(): Node {
    const items: Node[] = [];
    for (let c = this.peek(); c !== undefined && c !== "|" && c !== ")"; c = this.peek()) {
      const atom = this.atom();
      const q = this.quantifier();
      if (q) {
        if (atom.t === "bol" || atom.t === "eol") throw new UnsupportedPatternError("a quantified anchor");
        items.push({ t: "rep", node: atom, min: q.min, max: q.max });
      } else items.push(atom);
    }
    return items.length === 1 ? items[0]! : { t: "seq", items };
  }

  private quantifier(): { min: number; max: number } | undefined {
    const c = this.peek();
    let q: { min: number; max: number } | undefined;
    if (c === "*") q = { min: 0, max: Infinity };
    else if (c === "+") q = { min: 1, max: Infinity };
    else if (c === "?") q = { min: 0, max: 1 };
    if (q) this.i++;
    else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return undefined; // a literal brace (outside unicode mode)
      this.i += m[0].length;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      if (max < min) throw new InvalidPatternError("numbers out of order in a {} quantifier");
      if (min > MAX_COUNT) throw new UnsupportedPatternError(`a repetition of ${min}`);
      q = { min, max: max > MAX_COUNT ? Infinity : max };
    }
    if (q && this.peek() === "?") this.i++; // lazy: the same strings
    return q;
  }

  private atom(): Node {
    const c = this.src.codePointAt(this.i)!;
    const ch = String.fromCodePoint(c);
    this.i += ch.length;
    switch (ch) {
      case "^":
        return { t: "bol" };
      case "$":
        return { t: "eol" };
      case ".":
        return { t: "set", set: DOT };
      case "[":
        return { t: "set", set: this.charClass() };
      case "\\":
        return { t: "set", set: this.escape(false) };
      case "(": {
        if (this.src.startsWith("?:", this.i)) this.i += 2;
        else if (this.src.startsWith("?<", this.i) && !this.src.startsWith("?<=", this.i) && !this.src.startsWith("?<!", this.i)) {
          const end = this.src.indexOf(">", this.i);
          if (end === -1) throw new InvalidPatternError("an unterminated group name");
          this.i = end + 1;
        } else if (this.peek() === "?") throw new UnsupportedPatternError("lookaround or inline flags");
        if (++this.depth > MAX_GROUP_DEPTH) throw new UnsupportedPatternError("groups nested too deeply");
        const inner = this.disjunction();
        this.depth--;
        if (this.peek() !== ")") throw new InvalidPatternError("an unterminated group");
        this.i++;
        return inner;
      }
      case "*":
      case "+":
      case "?":
        throw new InvalidPatternError("nothing to repeat");
      default:
        return { t: "set", set: CharSet.char(c) };
    }
  }

  private hexDigits(n: number): number | undefined {
    const s = this.src.slice(this.i, this.i + n);
    if (s.length !== n || !/^[0-9a-fA-F]+$/.test(s)) return undefined;
    this.i += n;
    return parseInt(s, 16);
  }

  /** After a backslash: a class escape or one character (inClass: \b is a backspace). */
  private escape(inClass: boolean): CharSet {
    const c = this.peek();
    if (c === undefined) throw new InvalidPatternError("a trailing backslash");
    this.i++;
    switch (c) {
      case "d":
        return DIGIT;
      case "D":
        return DIGIT.complement();
      case "w":
        return WORD;
      case "W":
        return WORD.complement();
      case "s":
        return SPACE;
      case "S":
        return SPACE.complement();
      case "t":
        return CharSet.char(9);
      case "n":
        return CharSet.char(10);
      case "v":
        return CharSet.char(11);
      case "f":
        return CharSet.char(12);
      case "r":
        return CharSet.char(13);
      case "b":
        if (inClass) return CharSet.char(8);
        throw new UnsupportedPatternError("a word boundary");
      case "B":
        throw new UnsupportedPatternError("a word boundary");
      case "p":
      case "P":
        throw new UnsupportedPatternError("a unicode property escape");
      case "k":
        throw new UnsupportedPatternError("a backreference");
      case "c": {
        const l = this.peek();
        if (l !== undefined && /[a-zA-Z]/.test(l)) {
          this.i++;
          return CharSet.char(cpOf(l) % 32);
        }
        return CharSet.char(cpOf("\\"));
      }
      case "x": {
        const v = this.hexDigits(2);
        return CharSet.char(v ?? cpOf("x"));
      }
      case "u": {
        if (this.peek() === "{") {
          const m = /^\{([0-9a-fA-F]{1,6})\}/.exec(this.src.slice(this.i));
          if (m && parseInt(m[1]!, 16) <= 0x10ffff) {
            this.i += m[0].length;
            return CharSet.char(parseInt(m[1]!, 16));
          }
        }
        const v = this.hexDigits(4);
        if (v === undefined) return CharSet.char(cpOf("u"));
        // A surrogate pair written as two escapes is one code point.
        if (v >= 0xd800 && v <= 0xdbff && this.src.startsWith("\\u", this.i)) {
          const save = this.i;
          this.i += 2;
          const lo = this.hexDigits(4);
          if (lo !== undefined && lo >= 0xdc00 && lo <= 0xdfff) return CharSet.char(0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00));
          this.i = save;
        }
        return CharSet.char(v);
      }
      case "0":
        if (!/[0-9]/.test(this.peek() ?? "")) return CharSet.char(0);
        throw new UnsupportedPatternError("an octal escape");
      default:
        if (/[1-9]/.test(c)) throw new UnsupportedPatternError("a backreference");
        return CharSet.char(this.src.codePointAt(this.i - 1)!);
    }
  }

  private charClass(): CharSet {
    let negated = false;
    if (this.peek() === "^") {
      negated = true;
      this.i++;
    }
    let set = CharSet.EMPTY;
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new InvalidPatternError("an unterminated character class");
      if (c === "]") {
        this.i++;
        break;
      }
      const lo = this.classAtom();
      if (this.peek() === "-" && this.src[this.i + 1] !== "]" && this.src[this.i + 1] !== undefined) {
        this.i++;
        const hi = this.classAtom();
        const a = lo.single;
        const b = hi.single;
        if (a === undefined || b === undefined) {
          // A class escape at either end: the dash is a literal (outside unicode mode).
          set = set.union(lo).union(hi).union(CharSet.char(cpOf("-")));
          continue;
        }
        if (a > b) throw new InvalidPatternError("a character class range out of order");
        set = set.union(CharSet.of([a, b]));
      } else set = set.union(lo);
    }
    return negated ? set.complement() : set;
  }

  private classAtom(): CharSet {
    const cp = this.src.codePointAt(this.i)!;
    const ch = String.fromCodePoint(cp);
    this.i += ch.length;
    if (ch === "\\") return this.escape(true);
    return CharSet.char(cp);
  }
}

/** Removes characters outside `within` (by default those JSON strings cannot carry); undefined
 *  when nothing can match. */
function encodable(n: Node, within: CharSet = ENCODABLE): Rx | undefined {
  switch (n.t) {
    case "bol":
    case "eol":
      throw new UnsupportedPatternError("an anchor inside the pattern");
    case "set": {
      const set = n.set.intersect(within);
      return set.isEmpty ? undefined : { t: "set", set };
    }
    case "seq": {
      const items: Rx[] = [];
      for (const i of n.items) {
        const r = encodable(i, within);
        if (!r) return undefined;
        items.push(r);
      }
      return items.length === 1 ? items[0]! : { t: "seq", items };
    }
    case "alt": {
      const alts = n.alts.map((a) => encodable(a, within)).filter((a): a is Rx => a !== undefined);
      if (alts.length === 0) return undefined;
      return alts.length === 1 ? alts[0]! : { t: "alt", alts };
    }
    case "rep": {
      const node = encodable(n.node, within);
      if (!node) return n.min === 0 ? EMPTY_SEQ : undefined;
      return { t: "rep", node, min: n.min, max: n.max };
    }
  }
}

/** Each top-level alternative loses its anchors; an unanchored side matches anything. */
function anchored(n: Node): Node {
  const alts = n.t === "alt" ? n.alts : [n];
  const out = alts.map((a): Node => {
    let items = a.t === "seq" ? [...a.items] : [a];
    let start = false;
    let end = false;
    while (items[0]?.t === "bol") {
      items = items.slice(1);
      start = true;
    }
    while (items[items.length - 1]?.t === "eol") {
      items = items.slice(0, -1);
      end = true;
    }
    return { t: "seq", items: [...(start ? [] : [ANY_STRING]), ...items, ...(end ? [] : [ANY_STRING])] };
  });
  return out.length === 1 ? out[0]! : { t: "alt", alts: out };
}

/** The strings a JSON Schema `pattern` accepts, as a tree; see the errors above. */
export function parsePattern(pattern: string): Rx {
  try {
    new RegExp(pattern, "u");
  } catch {
    try {
      new RegExp(pattern);
    } catch (err) {
      throw new InvalidPatternError(`invalid pattern ${JSON.stringify(pattern)}: ${(err as Error).message}`);
    }
  }
  let tree: Node;
  try {
    tree = new Parser(pattern).parse();
  } catch (err) {
    if (err instanceof InvalidPatternError) throw new InvalidPatternError(`invalid pattern ${JSON.stringify(pattern)}: ${err.message}`);
    throw err;
  }
  const rx = encodable(anchored(tree));
  if (!rx) throw new UnsupportedPatternError("no string a JSON value can carry matches it");
  return rx;
}

/** A pattern of our own (no anchors) as a tree over every character: what a raw value must not
 *  contain (markup-grammar.ts). */
export function parseUnanchored(pattern: string): Rx {
  const rx = encodable(new Parser(pattern).parse(), CharSet.ALL);
  if (!rx) throw new UnsupportedPatternError(`nothing matches ${JSON.stringify(pattern)}`);
  return rx;
}

interface Trie {
  end: boolean;
  next: Map<number, Trie>;
}

/** Every string except the given ones (object keys other than the declared names). */
export function noneOf(strings: string[]): Rx {
  const root: Trie = { end: false, next: new Map() };
  for (const s of strings) {
    let t = root;
    for (const ch of s) {
      const cp = ch.codePointAt(0)!;
      let child = t.next.get(cp);
      if (!child) {
        child = { end: false, next: new Map() };
        t.next.set(cp, child);
      }
      t = child;
    }
    t.end = true;
  }
  const rest = (t: Trie): Rx => {
    const alts: Rx[] = [...t.next].map(([cp, child]): Rx => ({ t: "seq", items: [{ t: "set", set: CharSet.char(cp) }, rest(child)] }));
    // A character that leaves every name behind, then anything.
    const others = ENCODABLE.minus([...t.next.keys()].reduce((set, cp) => set.union(CharSet.char(cp)), CharSet.EMPTY));
    if (!others.isEmpty) alts.push({ t: "seq", items: [{ t: "set", set: others }, ANY_STRING] });
    if (!t.end) alts.push(EMPTY_SEQ);
    return alts.length === 1 ? alts[0]! : { t: "alt", alts };
  };
  return rest(root);
}
