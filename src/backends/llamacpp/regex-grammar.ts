// A pattern tree as GBNF for the content of a JSON string: every character becomes its JSON
// encodings (raw, or escaped: a quote, a backslash, \n and the like).
import { CharSet } from "./char-set.js";
import { gbnfClass, gbnfLiteral, type RuleSet } from "./gbnf.js";
import type { Rx } from "./regex-tree.js";

const SHORT_ESCAPES: Array<[number, string]> = [
  [0x22, '\\"'],
  [0x5c, "\\\\"],
  [0x08, "\\b"],
  [0x09, "\\t"],
  [0x0a, "\\n"],
  [0x0c, "\\f"],
  [0x0d, "\\r"],
];
const RAW = CharSet.ALL.minus(CharSet.of([0, 0x1f], [0x22, 0x22], [0x5c, 0x5c]));

/** One character of `set` as it appears inside a JSON string: raw, or its escape. */
export function jsonChar(set: CharSet, rules: RuleSet): string {
  const raw = set.intersect(RAW);
  const parts: string[] = [];
  if (!raw.isEmpty) parts.push(raw.single !== undefined ? gbnfLiteral(String.fromCodePoint(raw.single)) : gbnfClass(raw));
  for (const [cp, esc] of SHORT_ESCAPES) if (set.has(cp)) parts.push(gbnfLiteral(esc));
  if (parts.length === 1) return parts[0]!;
  return rules.add("jchar", parts.join(" | "));
}

/** A character that is written as itself inside a JSON string and a GBNF literal. */
function plainChar(r: Rx): string | undefined {
  if (r.t !== "set") return undefined;
  const cp = r.set.single;
  return cp !== undefined && RAW.has(cp) ? String.fromCodePoint(cp) : undefined;
}

/** The JSON-string content matching `r`, as a GBNF expression. */
export function renderRx(r: Rx, rules: RuleSet): string {
  switch (r.t) {
    case "set":
      return jsonChar(r.set, rules);
    case "seq": {
      const out: string[] = [];
      let lit = "";
      for (const it of r.items) {
        const c = plainChar(it);
        if (c !== undefined) {
          lit += c;
          continue;
        }
        if (lit) out.push(gbnfLiteral(lit));
        lit = "";
        out.push(renderRx(it, rules));
      }
      if (lit) out.push(gbnfLiteral(lit));
      return out.length === 0 ? '""' : out.join(" ");
    }
    case "alt":
      return `(${r.alts.map((a) => renderRx(a, rules)).join(" | ")})`;
    case "rep":
      return rules.repeat(renderRx(r.node, rules), r.min, r.max);
  }
}
