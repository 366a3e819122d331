// A markup shape (backend.ts MarkupPiece: a tool call as Qwen3-Coder's XML, GLM's pairs, …) → a
// GBNF grammar: literal text, JSON values through the schema compiler, raw values that never
// contain their closing tags (text-avoiding.ts), choices, and members with
// separators placed right whichever optional ones are left out (as object-grammar.ts does), and
// repeats (a list's items in a template's own syntax).
import type { MarkupPiece } from "../backend.js";
import { gbnfLiteral, InvalidSchemaError, type RuleSet } from "./gbnf.js";
import { schemaRuleSet, schemaValueRule } from "./json-schema-grammar.js";
import { parseUnanchored } from "./regex-tree.js";
import { literalRx, textAvoiding } from "./text-avoiding.js";

/** The GBNF grammar (root rule first) of a markup shape; throws InvalidSchemaError. */
export function markupGrammar(pieces: readonly MarkupPiece[]): string {
  const rules = schemaRuleSet();
  const body = new MarkupCompiler(rules).sequence(pieces, "m");
  rules.named("root", body === "" ? '""' : body);
  return rules.text();
}

class MarkupCompiler {
  private n = 0;

  constructor(private readonly rules: RuleSet) {}

  sequence(pieces: readonly MarkupPiece[], hint: string): string {
    return pieces
      .map((p) => this.piece(p, hint))
      .filter((x) => x !== "")
      .join(" ");
  }

  private piece(p: MarkupPiece, hint: string): string {
    if ("text" in p) return p.text === "" ? "" : gbnfLiteral(p.text);
    if ("json" in p) return schemaValueRule(this.rules, p.json, p.root, `${hint}-value-${this.n++}`);
    if ("free" in p) return textAvoiding(this.rules, [...p.free.filter((a) => a !== "").map(literalRx), ...(p.patterns ?? []).map(parseUnanchored)]);
    if ("choice" in p) {
      if (p.choice.length === 0) throw new InvalidSchemaError("a markup choice has no alternatives");
      const alts = p.choice.map((c) => this.sequence(c, hint) || '""');
      return this.rules.add(`${hint}-choice`, alts.join(" | "));
    }
    if ("repeat" in p) {
      const body = this.rules.add(`${hint}-item`, this.sequence(p.repeat, hint) || '""');
      const sep = p.separator === "" ? "" : `${gbnfLiteral(p.separator)} `;
      return this.rules.add(`${hint}-repeat`, `(${body} (${sep}${body})*)?`);
    }
    return this.members(p.members, p.separator, hint);
  }

  /** `a` when nothing was written yet, `b` after a member (each starts with the separator). */
  private members(members: readonly { pieces: readonly MarkupPiece[]; required: boolean }[], separator: string, hint: string): string {
    const sep = separator === "" ? "" : gbnfLiteral(separator);
    const seq = (...xs: string[]) => xs.filter((x) => x !== "").join(" ");
    let a = "";
    let b = "";
    for (let i = members.length - 1; i >= 0; i--) {
      const m = members[i]!;
      const body = this.rules.add(`${hint}-member`, this.sequence(m.pieces, hint) || '""');
      const takeA = seq(body, b);
      const takeB = seq(sep, body, b);
      a = this.rules.add(`${hint}-from`, m.required ? takeA : a === "" ? `(${takeA})?` : `${takeA} | ${a}`);
      b = this.rules.add(`${hint}-after`, m.required ? takeB : b === "" ? `(${takeB})?` : `${takeB} | ${b}`);
    }
    return a;
  }
}
