// The runner's parallel sequences. A request takes the free slot whose cached tokens share the
// longest prefix with its prompt (so a follow-up turn re-evaluates only what is new). A prefix
// counts only when it keeps at least half of what the slot holds: a shared BOS token or chat
// template header alone must not send a new conversation over another conversation's cache.
// Among equal scores the least recently used slot wins (never-used slots first). When all slots
// are busy requests wait in arrival order; a waiter whose request is aborted leaves the line at
// once.

/** The score of a slot: its common prefix with the prompt if that keeps >= half of its cache. */
export function prefixScore(common: number, cached: number): number {
  return common > 0 && 2 * common >= cached ? common : 0;
}

export class SlotAbortedError extends Error {
  constructor() {
    super("request aborted while waiting for a slot");
  }
}

interface Waiter<S> {
  score: (s: S) => number;
  resolve: (s: S) => void;
  reject: (e: Error) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

export class SlotPool<S> {
  /** Free slots, least recently released first. */
  private readonly free: S[];
  private readonly waiting: Array<Waiter<S>> = [];

  constructor(slots: S[]) {
    this.free = [...slots];
  }

  get idle(): number {
    return this.free.length;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Taken by a request right now. */
  isBusy(slot: S): boolean {
    return !this.free.includes(slot);
  }

  acquire(score: (s: S) => number, signal?: AbortSignal): Promise<S> {
    if (signal?.aborted) return Promise.reject(new SlotAbortedError());
    if (this.free.length > 0) return Promise.resolve(this.take(score));
    return new Promise((resolve, reject) => {
      const w: Waiter<S> = {
        score,
        resolve,
        reject,
        signal,
        onAbort: () => {
          const i = this.waiting.indexOf(w);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(new SlotAbortedError());
        },
      };
      signal?.addEventListener("abort", w.onAbort, { once: true });
      this.waiting.push(w);
    });
  }

  /** Takes the free slot `pick` chooses, if any, without waiting (background work on a slot). */
  claim(pick: (free: readonly S[]) => S | undefined): S | undefined {
    const slot = pick(this.free);
    const i = slot === undefined ? -1 : this.free.indexOf(slot);
    return i < 0 ? undefined : (this.free.splice(i, 1)[0] as S);
  }

  /** Gives back `held` and takes `wanted` in its place, if `wanted` is free (no waiter can be
   *  skipped: with a slot free, nobody waits). */
  swap(held: S, wanted: S): boolean {
    const i = this.free.indexOf(wanted);
    if (i < 0) return false;
    this.free[i] = held;
    return true;
  }

  release(slot: S): void {
    this.free.push(slot);
    const next = this.waiting.shift();
    if (!next) return;
    next.signal?.removeEventListener("abort", next.onAbort);
    next.resolve(this.take(next.score));
  }

  private take(score: (s: S) => number): S {
    let best = 0;
    let bestScore = -Infinity;
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
