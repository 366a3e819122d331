// Sets of Unicode code points as sorted, disjoint, inclusive ranges: the character classes of the
// regex compiler (regex-grammar.ts), with the set operations it needs. Surrogates are never
// members: a grammar matches UTF-8 text, which cannot hold them.

export type Range = readonly [number, number];

const MAX = 0x10ffff;
const SURROGATES: Range = [0xd800, 0xdfff];

function normalize(ranges: Range[]): Range[] {
  const sorted = ranges.filter(([a, b]) => a <= b).sort((x, y) => x[0] - y[0]);
  const out: Array<[number, number]> = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

export class CharSet {
  readonly ranges: readonly Range[];

  private constructor(ranges: Range[]) {
    this.ranges = normalize(ranges);
  }

  /** The set of the given ranges, surrogates removed. */
  static of(...ranges: Range[]): CharSet {
    return new CharSet(ranges).minus(new CharSet([SURROGATES]));
  }

  static char(cp: number): CharSet {
    return CharSet.of([cp, cp]);
  }

  static readonly EMPTY = new CharSet([]);
  static readonly ALL = CharSet.of([0, MAX]);

  get isEmpty(): boolean {
    return this.ranges.length === 0;
  }

  /** The one code point this set holds, or undefined. */
  get single(): number | undefined {
    const r = this.ranges;
    return r.length === 1 && r[0]![0] === r[0]![1] ? r[0]![0] : undefined;
  }

  has(cp: number): boolean {
    return this.ranges.some(([a, b]) => cp >= a && cp <= b);
  }

  union(other: CharSet): CharSet {
    return new CharSet([...this.ranges, ...other.ranges]);
  }

  complement(): CharSet {
    return CharSet.of(...complementRanges(this.ranges));
  }

  minus(other: CharSet): CharSet {
    if (other.isEmpty) return this;
    return this.intersect(new CharSet(complementRanges(other.ranges)));
  }

  intersect(other: CharSet): CharSet {
    const out: Range[] = [];
    let i = 0;
    let j = 0;
    const a = this.ranges;
    const b = other.ranges;
    while (i < a.length && j < b.length) {
      const lo = Math.max(a[i]![0], b[j]![0]);
      const hi = Math.min(a[i]![1], b[j]![1]);
      if (lo <= hi) out.push([lo, hi]);
      if (a[i]![1] < b[j]![1]) i++;
      else j++;
    }
    return new CharSet(out);
  }

  /** Stable text identity (for caches and rule sharing). */
  key(): string {
    return this.ranges.map(([a, b]) => (a === b ? a.toString(16) : `${a.toString(16)}-${b.toString(16)}`)).join(",");
  }
}

function complementRanges(ranges: readonly Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [a, b] of ranges) {
    if (a > next) out.push([next, a - 1]);
    next = b + 1;
  }
  if (next <= MAX) out.push([next, MAX]);
  return out;
}

const cp = (s: string): number => s.codePointAt(0)!;

/** ECMAScript's \d, \w and \s. */
export const DIGIT = CharSet.of([cp("0"), cp("9")]);
export const WORD = CharSet.of([cp("a"), cp("z")], [cp("A"), cp("Z")], [cp("0"), cp("9")], [cp("_"), cp("_")]);
export const SPACE = CharSet.of(
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
);
/** What `.` matches: everything but line terminators. */
export const DOT = CharSet.of([0x0a, 0x0a], [0x0d, 0x0d], [0x2028, 0x2029]).complement();
