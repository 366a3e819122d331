// Any text in which none of some patterns matches anywhere, as GBNF: a raw value that runs up to
// what would end it (a closing tag; LFM2's quote followed by `)` or `, name=`). The patterns
// become one automaton (Thompson's construction, then subsets over the classes of characters the
// patterns tell apart); a character that would complete a match has no transition, and the text
// may end in any state. One rule per state of the automaton.
import { CharSet } from "./char-set.js";
import { gbnfClass, gbnfLiteral, type RuleSet } from "./gbnf.js";
import type { Rx } from "./regex-tree.js";

// Patterns are ours and short; a bounded repeat is written out, so keep it from exploding.
const MAX_NFA_STATES = 4_000;

class Nfa {
  readonly eps: number[][] = [[]];
  readonly edges: Array<Array<[CharSet, number]>> = [[]];
  readonly accept = new Set<number>();

  state(): number {
    if (this.eps.length >= MAX_NFA_STATES) throw new Error("an avoided pattern is too large");
    this.eps.push([]);
    this.edges.push([]);
    return this.eps.length - 1;
  }

  /** The state reached after `rx`, starting from `from`. */
  add(rx: Rx, from: number): number {
    switch (rx.t) {
      case "set": {
        const to = this.state();
        this.edges[from]!.push([rx.set, to]);
        return to;
      }
      case "seq":
        return rx.items.reduce((at, item) => this.add(item, at), from);
      case "alt": {
        const join = this.state();
        for (const a of rx.alts) this.eps[this.add(a, from)]!.push(join);
        return join;
      }
      case "rep": {
        let at = from;
        for (let k = 0; k < rx.min; k++) at = this.add(rx.node, at);
        if (rx.max === Infinity) {
          const loop = this.state();
          this.eps[at]!.push(loop);
          this.eps[this.add(rx.node, loop)]!.push(loop);
          return loop;
        }
        for (let k = rx.min; k < rx.max; k++) {
          const next = this.state();
          this.eps[at]!.push(next);
          this.eps[this.add(rx.node, at)]!.push(next);
          at = next;
        }
        return at;
      }
    }
  }

  closure(states: Iterable<number>): Set<number> {
    const out = new Set(states);
    const todo = [...out];
    while (todo.length > 0) for (const n of this.eps[todo.pop()!]!) if (!out.has(n)) todo.push((out.add(n), n));
    return out;
  }
}

/** The coarsest partition of all characters that none of `sets` splits. */
function atoms(sets: readonly CharSet[]): CharSet[] {
  let parts = [CharSet.ALL];
  for (const s of sets) {
    parts = parts.flatMap((p) => [p.intersect(s), p.minus(s)]).filter((p) => !p.isEmpty);
  }
  return parts;
}

/** The GBNF rule name of any text containing no match of `avoid` (none: any text). */
export function textAvoiding(rules: RuleSet, avoid: readonly Rx[]): string {
  const nfa = new Nfa();
  for (const rx of avoid) nfa.accept.add(nfa.add(rx, 0));
  const matched = (states: Set<number>) => [...states].some((n) => nfa.accept.has(n));
  // a match may begin at any character: the start state is in every state of the automaton
  const start = nfa.closure([0]);
  if (matched(start)) throw new Error("an avoided pattern matches the empty text");
  const classes = atoms(nfa.edges.flatMap((e) => e.map(([set]) => set)));
  const key = (s: Set<number>) => [...s].sort((a, b) => a - b).join(",");
  const names = new Map<string, string>();
  const todo: Set<number>[] = [];
  const nameOf = (s: Set<number>): string => {
    const k = key(s);
    let name = names.get(k);
    if (name === undefined) {
      if (names.size >= 1_000) throw new Error("the avoided patterns make too many states");
      name = rules.reserve("free");
      names.set(k, name);
      todo.push(s);
    }
    return name;
  };
  const first = nameOf(start);
  while (todo.length > 0) {
    const state = todo.pop()!;
    const byTarget = new Map<string, CharSet>();
    for (const c of classes) {
      const moved: number[] = [0];
      for (const n of state) for (const [set, to] of nfa.edges[n]!) if (!set.intersect(c).isEmpty) moved.push(to);
      const next = nfa.closure(moved);
      if (matched(next)) continue; // it would complete a match
      const target = nameOf(next);
      byTarget.set(target, (byTarget.get(target) ?? CharSet.EMPTY).union(c));
    }
    const alts = [...byTarget].map(([target, set]) => {
      const single = set.single;
      return `${single !== undefined ? gbnfLiteral(String.fromCodePoint(single)) : gbnfClass(set)} ${target}`;
    });
    rules.define(names.get(key(state))!, alts.length === 0 ? '""' : `(${alts.join(" | ")})?`);
  }
  return first;
}

/** The literal `s` as a pattern tree. */
export function literalRx(s: string): Rx {
  return { t: "seq", items: [...s].map((ch) => ({ t: "set", set: CharSet.char(ch.codePointAt(0)!) })) };
}
