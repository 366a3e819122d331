// What is made once per template source (its parse, its tool-call syntax, thinking tags, answer
// wrapper), kept for the 64 sources used last: request `template`s are sources too, so distinct
// ones cannot grow it.
const MAX = 64;

export class SourceCache<T> {
  private readonly map = new Map<string, T>();

  /** The value for `source`, made by `make` the first time (a throw is not kept). */
  get(source: string, make: () => T): T {
    const known = this.map.get(source);
    if (known !== undefined) return known;
    const value = make();
    if (this.map.size >= MAX) this.map.delete(this.map.keys().next().value as string);
    this.map.set(source, value);
    return value;
  }
}
