// JSON objects with declared properties: in the schema's order, required ones always present,
// optional ones each free to be left out (commas placed right either way), then any additional
// properties under keys that are none of the declared names (so no key repeats).
import { gbnfClass, gbnfLiteral, type RuleSet } from "./gbnf.js";
import { CharSet } from "./char-set.js";

export interface Member {
  /** The key-value rule: "key" space ":" space value. */
  kv: string;
  required: boolean;
}

/**
 * Members from the first on: `a[i]` when nothing was written yet, `b[i]` after a member (each
 * starts with its comma); optional members can be skipped. `extra` is the additional key-value
 * rule, if any, allowed any number of times at the end.
 */
export function objectRule(members: Member[], extra: string | undefined, rules: RuleSet, hint: string): string {
  let a = extra ? `(${extra} ("," space ${extra})*)?` : "";
  let b = extra ? `("," space ${extra})*` : "";
  const seq = (...xs: string[]) => xs.filter((x) => x !== "").join(" ");
  for (let i = members.length - 1; i >= 0; i--) {
    const m = members[i]!;
    const takeA = seq(m.kv, b);
    const takeB = seq('","', "space", m.kv, b);
    const nextA = m.required ? takeA : a === "" ? `(${takeA})?` : `${takeA} | ${a}`;
    const nextB = m.required ? takeB : b === "" ? `(${takeB})?` : `${takeB} | ${b}`;
    a = rules.add(`${hint}-from-${i}`, nextA);
    b = rules.add(`${hint}-after-${i}`, nextB);
  }
  return a === "" ? `"{" space "}"` : `"{" space ${a} space "}"`;
}

/** Characters of an object key written as themselves (no escape). */
const RAW_KEY_CHARS = CharSet.ALL.minus(CharSet.of([0, 0x1f], [0x22, 0x22], [0x5c, 0x5c]));

interface Trie {
  end: boolean;
  next: Map<string, Trie>;
}

/**
 * A JSON string that is none of `names`; undefined when a name needs escapes (the caller then
 * allows any key).
 */
export function keyOtherThan(names: string[], char: string, rules: RuleSet, hint: string): string | undefined {
  const root: Trie = { end: false, next: new Map() };
  for (const n of names) {
    if (JSON.stringify(n) !== `"${n}"`) return undefined;
    let t = root;
    for (const c of n) {
      let child = t.next.get(c);
      if (!child) {
        child = { end: false, next: new Map() };
        t.next.set(c, child);
      }
      t = child;
    }
    t.end = true;
  }
  const escape = `"\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})`;
  const rest = (t: Trie): string => {
    const alts: string[] = [];
    for (const [c, child] of t.next) alts.push(`${gbnfLiteral(c)} ${rest(child)}`.trim());
    // A first character that leaves every name behind: then anything.
    const others = RAW_KEY_CHARS.minus([...t.next.keys()].reduce((s, c) => s.union(CharSet.char(c.codePointAt(0)!)), CharSet.EMPTY));
    alts.push(`${gbnfClass(others)} ${char}*`, `${escape} ${char}*`);
    const body = alts.join(" | ");
    return t.end ? `(${body})` : `(${body})?`;
  };
  return rules.add(`${hint}-key`, `"\\"" ${rest(root)} "\\""`);
}
