// GBNF text for llama.cpp's grammar parser: literals, character classes, and a rule set that names
// and shares rules and writes repetitions llama.cpp can parse whatever their counts (it expands
// `x{m,n}` into n rules and refuses a repetition of 2,000 or more, so large counts are built from
// blocks). Used by json-schema-grammar.ts and regex-grammar.ts.
import type { CharSet } from "./char-set.js";

/** A schema no value can satisfy, or one that is not a schema (a 400). */
export class InvalidSchemaError extends Error {}

/** Raised when a schema needs more grammar than a runner should parse (a 400, not a hang). */
export class GrammarTooLargeError extends InvalidSchemaError {}

/** Counts above this are written as blocks of this many. */
const BLOCK = 500;
/** An upper bound above this is no bound: no generation is that long (num_predict caps it). */
export const UNBOUNDED_ABOVE = 1_000_000;
// The daemon compiles schemas (before any load) and sends the text to the runner with each job.
const MAX_RULES = 20_000;
const MAX_TEXT = 2 * 1024 * 1024;
/** Compile work units (a rule, 64 characters of rule text, 64 automaton steps): see spend(). */
const MAX_WORK = 60_000;

const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, "0");

function escapeCodePoint(cp: number): string {
  if (cp <= 0xff) return `\\x${hex(cp, 2)}`;
  if (cp <= 0xffff) return `\\u${hex(cp, 4)}`;
  return `\\U${hex(cp, 8)}`;
}

/** A GBNF string literal matching `text` exactly. */
export function gbnfLiteral(text: string): string {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (cp < 0x20 || cp === 0x7f || (cp >= 0xd800 && cp <= 0xdfff)) out += escapeCodePoint(cp);
    else out += ch;
  }
  return `${out}"`;
}

const isAlnum = (cp: number) => (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
const classChar = (cp: number) => (isAlnum(cp) ? String.fromCodePoint(cp) : escapeCodePoint(cp));

/** A GBNF character class matching one code point of a non-empty set. */
export function gbnfClass(set: CharSet): string {
  let out = "[";
  for (const [a, b] of set.ranges) out += a === b ? classChar(a) : `${classChar(a)}-${classChar(b)}`;
  return `${out}]`;
}

/** An expression that is one symbol in llama.cpp's parser (a rule name, literal, class, group). */
function isAtom(expr: string): boolean {
  if (/^[a-zA-Z0-9-]+$/.test(expr)) return true;
  if (/^"(?:[^"\\]|\\.)*"$/.test(expr)) return true;
  if (/^\[(?:[^\]\\]|\\.)*\]$/.test(expr)) return true;
  if (expr.startsWith("(") && expr.endsWith(")")) {
    // Only when the first parenthesis closes at the end: "(a) | (b)" is not one group.
    let depth = 0;
    let quote: string | null = null;
    for (let i = 0; i < expr.length; i++) {
      const c = expr[i]!;
      if (quote) {
        if (c === "\\") i++;
        else if (c === quote) quote = null;
      } else if (c === '"' || c === "[") quote = c === "[" ? "]" : '"';
      else if (c === "(") depth++;
      else if (c === ")" && --depth === 0 && i < expr.length - 1) return false;
    }
    return true;
  }
  return false;
}

/** Rules by name, shared by body; names are derived from hints and never collide. */
export class RuleSet {
  private readonly bodies = new Map<string, string>();
  private readonly byBody = new Map<string, string>();
  /** The next suffix to try per name base (so naming stays linear in the number of rules). */
  private readonly suffixes = new Map<string, number>();
  private size = 0;
  private work = 0;

  constructor(private readonly reserved: ReadonlySet<string> = new Set()) {}

  /** A rule with this body (the existing one if the body is already a rule). */
  add(hint: string, body: string): string {
    this.spend(1);
    const existing = this.byBody.get(body);
    if (existing !== undefined) return existing;
    const name = this.reserve(hint);
    this.define(name, body);
    return name;
  }

  /** A fresh name, to be defined later (recursive rules refer to themselves). */
  reserve(hint: string): string {
    const base = hint.replace(/[^a-zA-Z0-9-]+/g, "-").replace(/-+/g, "-").replace(/^-|-$/g, "").slice(0, 48) || "r";
    let name = base;
    let i = this.suffixes.get(base) ?? 1;
    while (this.bodies.has(name) || this.reserved.has(name)) name = `${base}-${i++}`;
    this.suffixes.set(base, i);
    this.bodies.set(name, "");
    return name;
  }

  define(name: string, body: string): void {
    this.bodies.set(name, body);
    if (!this.byBody.has(body)) this.byBody.set(body, name);
    this.size += name.length + body.length + 6;
    this.spend(1 + Math.floor(body.length / 64));
    if (this.bodies.size > MAX_RULES || this.size > MAX_TEXT) {
      throw new GrammarTooLargeError("the schema needs a grammar too large to parse; simplify it (fewer alternatives, smaller counts)");
    }
  }

  /**
   * Counts compile work (rules, text, automaton steps) against one budget, so a schema costs the
   * daemon at most ~100 ms whatever its shape; past it the schema is refused with a 400.
   */
  spend(units: number): void {
    this.work += units;
    if (this.work > MAX_WORK) throw new GrammarTooLargeError("the schema needs too much work to compile; simplify it (fewer properties, alternatives or patterns)");
  }

  /** Optional work (an intersection): false, and nothing spent, when it would exceed half the budget. */
  trySpend(units: number): boolean {
    if (this.work + units > MAX_WORK / 2) return false;
    this.work += units;
    return true;
  }

  /** A primitive rule under its own (reserved) name. */
  named(name: string, body: string): string {
    if (!this.bodies.has(name)) this.define(name, body);
    return name;
  }

  has(name: string): boolean {
    return this.bodies.has(name);
  }

  /** `expr` repeated min..max times (max Infinity: no bound). */
  repeat(expr: string, min: number, max: number): string {
    if (min > UNBOUNDED_ABOVE) throw new GrammarTooLargeError(`a repetition of at least ${min} cannot be generated`);
    if (max > UNBOUNDED_ABOVE) max = Infinity;
    if (max === 0) return '""';
    const atom = isAtom(expr) ? expr : `(${expr})`;
    if (max === Infinity) {
      if (min === 0) return `${atom}*`;
      if (min === 1) return `${atom}+`;
      return `${this.exactly(atom, min)} ${atom}*`;
    }
    if (min === max) return this.exactly(atom, min);
    if (min === 0 && max === 1) return `${atom}?`;
    if (max <= BLOCK) return `${atom}{${min},${max}}`;
    const fixed = min > 0 ? `${this.exactly(atom, min)} ` : "";
    return fixed + this.upTo(atom, max - min);
  }

  private exactly(atom: string, n: number): string {
    if (n === 1) return atom;
    if (n <= BLOCK) return `${atom}{${n}}`;
    const block = this.add("block", `${atom}{${BLOCK}}`);
    const rest = n % BLOCK;
    return `${this.exactly(block, Math.floor(n / BLOCK))}${rest > 0 ? ` ${this.exactly(atom, rest)}` : ""}`;
  }

  /** 0..m times as nested levels: level k is a block then level k-1, or fewer than a block. */
  private upTo(atom: string, m: number): string {
    if (m <= BLOCK) return `${atom}{0,${m}}`;
    const block = this.add("block", `${atom}{${BLOCK}}`);
    const short = this.add("short", `${atom}{0,${BLOCK - 1}}`);
    let level = this.add("upto", `${atom}{0,${m % BLOCK}}`);
    for (let k = 1; k <= Math.floor(m / BLOCK); k++) level = this.add("upto", `${block} ${level} | ${short}`);
    return level;
  }

  /** The grammar text with `root` first. */
  text(): string {
    const lines: string[] = [];
    const root = this.bodies.get("root");
    if (root !== undefined) lines.push(`root ::= ${root}`);
    for (const [name, body] of this.bodies) if (name !== "root") lines.push(`${name} ::= ${body}`);
    return `${lines.join("\n")}\n`;
  }
}
