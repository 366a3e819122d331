// JSON objects with declared properties: in the schema's order, required ones always present,
// optional ones each free to be left out (commas placed right either way), then the additional
// properties (their keys, none of the declared names, come from json-schema-grammar.ts).
import type { RuleSet } from "./gbnf.js";

export interface Member {
  /** The key-value rule: "key" space ":" space value. */
  kv: string;
  required: boolean;
}

/**
 * Members from the first on: `a[i]` when nothing was written yet, `b[i]` after a member (each
 * starts with its comma); optional members can be skipped. `extra` is the additional key-value
 * rule, if any, allowed min..max times at the end.
 */
export function objectRule(members: Member[], extra: { kv: string; min: number; max: number } | undefined, rules: RuleSet, hint: string): string {
  let a = "";
  let b = "";
  if (extra && extra.max > 0) {
    const more = (min: number) => rules.repeat(`"," space ${extra.kv}`, min, extra.max - 1);
    a = extra.min > 0 ? `${extra.kv} ${more(extra.min - 1)}` : `(${extra.kv} ${more(0)})?`;
    b = rules.repeat(`"," space ${extra.kv}`, extra.min, extra.max);
  }
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
