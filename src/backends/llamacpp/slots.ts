// The runner's parallel sequences. A request takes the free slot whose cached tokens share the
// longest prefix with its prompt (so a follow-up turn re-evaluates only what is new); when all
// slots are busy it waits in arrival order.

export class SlotPool<S> {
  private readonly free: S[];
  private readonly waiting: Array<{ score: (s: S) => number; resolve: (s: S) => void }> = [];

  constructor(slots: S[]) {
    this.free = [...slots];
  }

  get idle(): number {
    return this.free.length;
  }

  acquire(score: (s: S) => number): Promise<S> {
    if (this.free.length > 0) return Promise.resolve(this.take(score));
    return new Promise((resolve) => this.waiting.push({ score, resolve }));
  }

  release(slot: S): void {
    this.free.push(slot);
    const next = this.waiting.shift();
    if (next) next.resolve(this.take(next.score));
  }

  private take(score: (s: S) => number): S {
    let best = 0;
    let bestScore = -1;
    this.free.forEach((s, i) => {
      const v = score(s);
      if (v > bestScore) {
        best = i;
        bestScore = v;
      }
    });
    return this.free.splice(best, 1)[0] as S;
  }
}
