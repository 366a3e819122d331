// The intersection of two pattern trees (a pattern and a string format) as GBNF: each tree becomes
// a Glushkov position automaton, their product is walked from the start, and every live product
// state is a rule (a character class and the next state, or the end).
import { CharSet } from "./char-set.js";
import type { RuleSet } from "./gbnf.js";
import { jsonChar } from "./regex-grammar.js";
import { UnsupportedPatternError, type Rx } from "./regex-tree.js";

/** Positions beyond which an intersection is not attempted (the caller keeps one pattern). */
const MAX_POSITIONS = 4_000;
const MAX_PRODUCT_STATES = 6_000;
/** Pairs of transitions looked at in the product: bounds the work whatever the automata. */
const MAX_PAIRS = 2_000_000;

interface Automaton {
  sets: CharSet[]; // per position (index 0 unused: the start state)
  first: Set<number>;
  follow: Array<Set<number>>;
  final: Set<number>; // positions; 0 = the start state
}

interface Frag {
  nullable: boolean;
  first: Set<number>;
  last: Set<number>;
}

function glushkov(r: Rx): Automaton | undefined {
  const sets: CharSet[] = [CharSet.EMPTY];
  const follow: Array<Set<number>> = [new Set()];
  const link = (from: Set<number>, to: Set<number>) => {
    for (const x of from) for (const y of to) follow[x]!.add(y);
  };
  const build = (n: Rx): Frag => {
    switch (n.t) {
      case "set": {
        if (sets.length > MAX_POSITIONS) throw new UnsupportedPatternError("too many positions");
        const p = sets.length;
        sets.push(n.set);
        follow.push(new Set());
        return { nullable: false, first: new Set([p]), last: new Set([p]) };
      }
      case "seq": {
        let acc: Frag = { nullable: true, first: new Set(), last: new Set() };
        for (const it of n.items) {
          const f = build(it);
          link(acc.last, f.first);
          acc = {
            nullable: acc.nullable && f.nullable,
            first: acc.nullable ? new Set([...acc.first, ...f.first]) : acc.first,
            last: f.nullable ? new Set([...acc.last, ...f.last]) : f.last,
          };
        }
        return acc;
      }
      case "alt": {
        const fs = n.alts.map(build);
        return { nullable: fs.some((f) => f.nullable), first: new Set(fs.flatMap((f) => [...f.first])), last: new Set(fs.flatMap((f) => [...f.last])) };
      }
      case "rep": {
        // node{min} then (max-min) optional copies, or a star: each copy has its own positions.
        if (n.min > MAX_POSITIONS || (n.max !== Infinity && n.max > MAX_POSITIONS)) throw new UnsupportedPatternError("too many positions");
        const copies: Rx[] = [];
        for (let k = 0; k < n.min; k++) copies.push(n.node);
        const fixed = build({ t: "seq", items: copies });
        if (n.max === n.min) return fixed;
        if (n.max === Infinity) {
          const loop = build(n.node);
          link(loop.last, loop.first);
          link(fixed.last, loop.first);
          return {
            nullable: fixed.nullable,
            first: fixed.nullable ? new Set([...fixed.first, ...loop.first]) : fixed.first,
            last: new Set([...fixed.last, ...loop.last]),
          };
        }
        // Nested optional copies, node(node(node)?)?: a copy follows only the one before it (or,
        // when that one can be empty, what came before it), so the edges stay linear.
        const first = new Set(fixed.first);
        const last = new Set(fixed.last);
        let tail = fixed.last;
        let emptySoFar = fixed.nullable;
        for (let k = n.min; k < n.max; k++) {
          const f = build(n.node);
          link(tail, f.first);
          if (emptySoFar) for (const x of f.first) first.add(x);
          for (const x of f.last) last.add(x);
          tail = f.nullable ? new Set([...tail, ...f.last]) : f.last;
          emptySoFar = emptySoFar && f.nullable;
        }
        return { nullable: fixed.nullable, first, last };
      }
    }
  };
  try {
    const f = build(r);
    const final = new Set(f.last);
    if (f.nullable) final.add(0);
    return { sets, first: f.first, follow, final };
  } catch (err) {
    if (err instanceof UnsupportedPatternError) return undefined;
    throw err;
  }
}

const next = (a: Automaton, state: number) => (state === 0 ? a.first : a.follow[state]!);

/**
 * The JSON-string content matching both trees, or undefined when no string matches both or the
 * automata would be too large (the caller then keeps one of them).
 */
export function renderIntersection(x: Rx, y: Rx, rules: RuleSet, hint: string): string | undefined {
  const a = glushkov(x);
  const b = glushkov(y);
  if (!a || !b) return undefined;
  const key = (p: number, q: number) => `${p},${q}`;
  const states = new Map<string, { p: number; q: number; edges: Array<{ set: CharSet; to: string }> }>();
  const queue: Array<[number, number]> = [[0, 0]];
  states.set(key(0, 0), { p: 0, q: 0, edges: [] });
  let pairs = 0;
  while (queue.length > 0) {
    const [p, q] = queue.shift()!;
    const s = states.get(key(p, q))!;
    for (const np of next(a, p)) {
      for (const nq of next(b, q)) {
        // Every 64 steps are a unit of the compile's budget; past its share, one pattern is kept.
        if (++pairs > MAX_PAIRS || (pairs % 64 === 0 && !rules.trySpend(1))) return undefined;
        const set = a.sets[np]!.intersect(b.sets[nq]!);
        if (set.isEmpty) continue;
        const k = key(np, nq);
        if (!states.has(k)) {
          if (states.size >= MAX_PRODUCT_STATES) return undefined;
          states.set(k, { p: np, q: nq, edges: [] });
          queue.push([np, nq]);
        }
        s.edges.push({ set, to: k });
      }
    }
  }
  // Keep the states from which a final state is reachable.
  const isFinal = (s: { p: number; q: number }) => a.final.has(s.p) && b.final.has(s.q);
  const live = new Set<string>([...states].filter(([, s]) => isFinal(s)).map(([k]) => k));
  for (let changed = true; changed; ) {
    changed = false;
    for (const [k, s] of states) {
      if (!live.has(k) && s.edges.some((e) => live.has(e.to))) {
        live.add(k);
        changed = true;
      }
    }
  }
  if (!live.has(key(0, 0))) return undefined;
  const names = new Map<string, string>();
  for (const k of live) names.set(k, rules.reserve(`${hint}-st`));
  for (const k of live) {
    const s = states.get(k)!;
    // Edges to the same state are one class.
    const byTarget = new Map<string, CharSet>();
    for (const e of s.edges) if (live.has(e.to)) byTarget.set(e.to, (byTarget.get(e.to) ?? CharSet.EMPTY).union(e.set));
    const alts = [...byTarget].map(([to, set]) => `${jsonChar(set, rules)} ${names.get(to)}`);
    if (isFinal(s)) alts.push('""');
    rules.define(names.get(k)!, alts.join(" | "));
  }
  return names.get(key(0, 0))!;
}
