// The lengths of a pattern tree's strings, and subsets of it within a minLength/maxLength: the
// counts of its repetitions are narrowed (a subset of the pattern's strings is still valid).
import type { Rx } from "./regex-tree.js";

/** The shortest and longest strings of a tree (longest: Infinity when unbounded). */
function lengths(r: Rx): { min: number; max: number } {
  switch (r.t) {
    case "set":
      return { min: 1, max: 1 };
    case "seq":
      return r.items.map(lengths).reduce((a, b) => ({ min: a.min + b.min, max: a.max + b.max }), { min: 0, max: 0 });
    case "alt": {
      const all = r.alts.map(lengths);
      return { min: Math.min(...all.map((l) => l.min)), max: Math.max(...all.map((l) => l.max)) };
    }
    case "rep": {
      const l = lengths(r.node);
      return { min: r.min * l.min, max: l.max === 0 ? 0 : r.max * l.max };
    }
  }
}

export const minLen = (r: Rx): number => lengths(r).min;
export const maxLen = (r: Rx): number => lengths(r).max;

/** A subset of `r` whose strings are at most `limit` long; undefined if none is. */
export function boundLength(r: Rx, limit: number): Rx | undefined {
  if (maxLen(r) <= limit) return r;
  if (minLen(r) > limit) return undefined;
  switch (r.t) {
    case "set":
      return r;
    case "seq": {
      // Each item keeps its minimum; what is left is shared among the items that can grow.
      const mins = r.items.map(minLen);
      const spare = limit - mins.reduce((a, b) => a + b, 0);
      const growing = r.items.filter((it, k) => maxLen(it) > mins[k]!).length;
      const share = Math.floor(spare / Math.max(1, growing));
      let extra = spare - share * growing;
      const items = r.items.map((it, k) => {
        if (maxLen(it) <= mins[k]!) return it;
        const give = share + (extra > 0 ? 1 : 0);
        if (extra > 0) extra--;
        return boundLength(it, mins[k]! + give)!;
      });
      return { t: "seq", items };
    }
    case "alt": {
      const alts = r.alts.map((a) => boundLength(a, limit)).filter((a): a is Rx => a !== undefined);
      return alts.length === 1 ? alts[0]! : { t: "alt", alts };
    }
    case "rep": {
      const unitMax = maxLen(r.node);
      if (unitMax !== Infinity && r.min * unitMax <= limit) return { ...r, max: Math.min(r.max, Math.floor(limit / unitMax)) };
      const unit = Math.max(minLen(r.node), Math.floor(limit / Math.max(r.min, 1)));
      const node = boundLength(r.node, unit)!;
      const m = maxLen(node);
      return { t: "rep", node, min: r.min, max: m === 0 ? r.min : Math.min(r.max, Math.floor(limit / m)) };
    }
  }
}

/** A subset of `r` whose strings are at least `limit` long; undefined if none is. */
export function raiseLength(r: Rx, limit: number): Rx | undefined {
  if (minLen(r) >= limit) return r;
  if (maxLen(r) < limit) return undefined;
  switch (r.t) {
    case "set":
      return r;
    case "seq": {
      let need = limit - minLen(r);
      const items = r.items.map((it) => {
        if (need <= 0) return it;
        const lo = minLen(it);
        const target = Math.min(maxLen(it), lo + need);
        if (target <= lo) return it;
        need -= target - lo;
        return raiseLength(it, target)!;
      });
      return { t: "seq", items };
    }
    case "alt": {
      const alts = r.alts.map((a) => raiseLength(a, limit)).filter((a): a is Rx => a !== undefined);
      return alts.length === 1 ? alts[0]! : { t: "alt", alts };
    }
    case "rep": {
      const unitMin = minLen(r.node);
      if (unitMin > 0 && Math.ceil(limit / unitMin) <= r.max) return { ...r, min: Math.max(r.min, Math.ceil(limit / unitMin)) };
      const count = r.max === Infinity ? Math.max(r.min, 1, limit) : r.max;
      const node = raiseLength(r.node, Math.ceil(limit / count));
      return node ? { t: "rep", node, min: count, max: r.max } : undefined;
    }
  }
}
