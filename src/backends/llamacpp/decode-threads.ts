// How many of the free cores a decode step should use, found by timing the steps.
//
// node-llama-cpp's prebuilt binary has no OpenMP and attaches no llama.cpp threadpool, so every
// graph computation starts its extra threads anew and joins them at the end. A prompt batch pays
// that once for much work; a decode step pays it for every token. Where starting a thread is
// cheap and the step is long (a 1B model on a workstation) more threads win; where it is dear (a
// VM whose idle virtual CPUs must be woken by the host: ~10 ms a step measured here) or the step
// is short (a small model), fewer do: on this 2-core VM a 4-layer, 256-wide model decoded at
// 1,200 tok/s on one thread and 50–75 on two, while the 1B-shaped model ran 16 on one and 24 on
// two. No rule predicts it, so the runner measures: decode steps run on the chosen count, and now
// and then a few run on the next count down (or back up) and the faster one is kept.

/** The shape of the batch about to run (batch-plan.ts). */
export interface BatchShape {
  /** Sequences in the batch. */
  items: number;
  /** Tokens in the batch. */
  tokens: number;
}

/** A batch of at most this many tokens per sequence is decoding (a draft's tokens included). */
const DECODE_TOKENS_PER_ITEM = 8;
/** Steps timed per thread count before two counts are compared. */
export const SAMPLES = 4;
/** A count replaces the chosen one when its median step is this much shorter. */
const MARGIN = 0.1;
/** A tried count whose first step is this much longer than the chosen count's median is dropped
 *  at once: a comparison that is plainly lost costs one slow step, not SAMPLES. */
const PLAIN_LOSS = 1.3;
/** Decode steps before the first comparison, and the most between two (the wait grows fourfold
 *  after each comparison that changes nothing, and starts again when the free cores change). */
const FIRST_PROBE_AFTER = 16;
const PROBE_BACKOFF = 4;
const MAX_PROBE_INTERVAL = 4096;
/** A step that took longer than this was not a step but a pause between requests. */
const MAX_STEP_MS = 2000;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export class DecodeThreads {
  /** The most threads a step may have now (the free cores); everything is relearned when it changes. */
  private cap = 0;
  private chosen = 0;
  /** The count being tried against `chosen`, if a comparison is running. */
  private trying: number | null = null;
  /** Step times (ms) of each count, for the current cap and batch width. */
  private times = new Map<number, number[]>();
  private last: { t: number; threads: number; items: number } | null = null;
  private stepsUntilProbe = FIRST_PROBE_AFTER;
  private interval = FIRST_PROBE_AFTER;
  /** Which way the next comparison goes when both are possible. */
  private downNext = true;

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** Threads for the batch about to run, given the most it may have. */
  threadsFor(cap: number, batch: BatchShape): number {
    const now = this.clock();
    const decoding = batch.items > 0 && batch.tokens <= batch.items * DECODE_TOKENS_PER_ITEM;
    const last = this.last;
    this.last = decoding ? { t: now, threads: 0, items: batch.items } : null;
    if (cap !== this.cap) this.reset(cap);
    if (!decoding || cap <= 1) return cap;
    // The time since the last decode step of the same width is that step, sampling included.
    if (last && last.items === batch.items && now - last.t < MAX_STEP_MS) this.record(last.threads, now - last.t);
    else if (last && last.items !== batch.items) this.relearn();
    const threads = this.next();
    this.last!.threads = threads;
    return threads;
  }

  private reset(cap: number): void {
    this.cap = cap;
    this.chosen = cap;
    this.interval = FIRST_PROBE_AFTER;
    this.downNext = true;
    this.relearn();
  }

  /** Forgets the timings (another batch width) and compares again soon. */
  private relearn(): void {
    this.trying = null;
    this.times.clear();
    this.stepsUntilProbe = Math.min(this.stepsUntilProbe, FIRST_PROBE_AFTER);
  }

  private record(threads: number, ms: number): void {
    if (threads <= 0) return;
    const xs = this.times.get(threads) ?? [];
    xs.push(ms);
    if (xs.length > SAMPLES) xs.shift();
    this.times.set(threads, xs);
  }

  private next(): number {
    if (this.trying !== null) {
      const tried = this.times.get(this.trying) ?? [];
      const base = this.times.get(this.chosen) ?? [];
      const lost = tried.length > 0 && tried[0]! > median(base) * PLAIN_LOSS;
      if (tried.length < SAMPLES && !lost) return this.trying;
      const better = !lost && median(tried) < median(base) * (1 - MARGIN);
      const from = this.chosen;
      if (better) this.chosen = this.trying;
      this.trying = null;
      // A better count may have a better neighbour the same way: look there at once.
      if (better) {
        this.downNext = this.chosen < from;
        this.stepsUntilProbe = 0;
        this.interval = FIRST_PROBE_AFTER;
      } else {
        this.downNext = !this.downNext;
        this.interval = Math.min(MAX_PROBE_INTERVAL, this.interval * PROBE_BACKOFF);
        this.stepsUntilProbe = this.interval;
      }
    }
    if (this.stepsUntilProbe > 0 || (this.times.get(this.chosen)?.length ?? 0) < SAMPLES) {
      this.stepsUntilProbe--;
      return this.chosen;
    }
    const down = this.chosen > 1 ? Math.max(1, Math.floor(this.chosen / 2)) : null;
    const up = this.chosen < this.cap ? Math.min(this.cap, this.chosen * 2) : null;
    const candidate = (this.downNext ? (down ?? up) : (up ?? down)) ?? null;
    if (candidate === null) return this.chosen;
    this.trying = candidate;
    this.times.delete(candidate);
    return candidate;
  }

  /** The count decode steps use now (for logs and tests). */
  get current(): number {
    return this.chosen;
  }
}
