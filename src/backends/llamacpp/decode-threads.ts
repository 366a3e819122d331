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
/** Decode steps before the first trial, and the most between two (the wait grows fourfold after
 *  each trial that changes nothing, and starts again when the free cores change). */
const FIRST_PROBE_AFTER = 4;
const PROBE_BACKOFF = 4;
const MAX_PROBE_INTERVAL = 4096;
/** Fewer threads are tried only while a step is shorter than this. Where one thread wins, the
 *  two-thread step is mostly the wait to start the second (the small model: ~15 ms on two, ~1 on
 *  one); a step longer than this is mostly work, and halving its threads adds more than the wait
 *  (the 1B shape: 41 ms on two threads and 62 on one on one host, 29 and 38 on a faster one,
 *  where a limit of 30 ms let its trials cost ~4 % of decode). Past it no trial runs, so a larger
 *  model keeps one thread count and its greedy text stays the same from run to run (llama.cpp's
 *  sums round differently on another count). */
const MAX_TRIAL_DOWN_STEP_MS = 20;
/** A step that took longer than this was not a step but a pause between requests. */
const MAX_STEP_MS = 2000;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export class DecodeThreads {
  /** The most threads a step may have now (the free cores); timings are relearned when it changes. */
  private cap = 0;
  private chosen = 0;
  /** The count chosen under each cap: the free cores come and go, the best count for each stays. */
  private readonly chosenUnder = new Map<number, number>();
  /** The count being tried against `chosen`, and the batch width it is compared at. */
  private trial: { threads: number; items: number } | null = null;
  /** Recent step times (ms) by batch width and thread count ("items:threads"). */
  private times = new Map<string, number[]>();
  private last: { t: number; threads: number; items: number } | null = null;
  private stepsUntilTrial = FIRST_PROBE_AFTER;
  private interval = FIRST_PROBE_AFTER;
  /** Which way the next trial goes when both are possible. */
  private downNext = true;

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** Threads for the batch about to run, given the most it may have. */
  threadsFor(cap: number, batch: BatchShape): number {
    const now = this.clock();
    const decoding = batch.items > 0 && batch.tokens <= batch.items * DECODE_TOKENS_PER_ITEM;
    // The time since the last decode batch started is that batch's step, sampling included.
    const last = this.last;
    if (last && now - last.t < MAX_STEP_MS) this.samples(last.items, last.threads).push(now - last.t);
    this.last = null;
    if (cap !== this.cap) this.reset(cap);
    if (!decoding || cap <= 1) return cap;
    const threads = this.next(batch.items);
    this.last = { t: now, threads, items: batch.items };
    return threads;
  }

  /** The count decode steps use now (for logs and tests). */
  get current(): number {
    return this.chosen;
  }

  private reset(cap: number): void {
    if (this.cap > 0) this.chosenUnder.set(this.cap, this.chosen);
    this.cap = cap;
    this.chosen = this.chosenUnder.get(cap) ?? cap;
    this.trial = null;
    this.times.clear();
    this.interval = FIRST_PROBE_AFTER;
    this.stepsUntilTrial = FIRST_PROBE_AFTER;
    this.downNext = true;
  }

  /** The recent steps of one width and count (the last SAMPLES kept). */
  private samples(items: number, threads: number): number[] {
    const key = `${items}:${threads}`;
    let xs = this.times.get(key);
    if (!xs) this.times.set(key, (xs = []));
    if (xs.length >= SAMPLES) xs.shift();
    return xs;
  }

  private known(items: number, threads: number): number[] {
    return this.times.get(`${items}:${threads}`) ?? [];
  }

  private next(items: number): number {
    const trial = this.trial;
    if (trial) {
      // Steps of another width neither count for the trial nor end it.
      if (items !== trial.items) return this.chosen;
      const tried = this.known(items, trial.threads);
      const base = this.known(items, this.chosen);
      const lost = tried.length > 0 && tried[0]! > median(base) * PLAIN_LOSS;
      if (tried.length < SAMPLES && !lost) return trial.threads;
      this.trial = null;
      if (!lost && median(tried) < median(base) * (1 - MARGIN)) {
        // A better count may have a better neighbour the same way: look there at once.
        this.downNext = trial.threads < this.chosen;
        this.chosen = trial.threads;
        this.interval = FIRST_PROBE_AFTER;
        this.stepsUntilTrial = 0;
      } else {
        this.downNext = !this.downNext;
        this.interval = Math.min(MAX_PROBE_INTERVAL, this.interval * PROBE_BACKOFF);
        this.stepsUntilTrial = this.interval;
      }
    }
    if (this.stepsUntilTrial > 0 || this.known(items, this.chosen).length < SAMPLES) {
      this.stepsUntilTrial--;
      return this.chosen;
    }
    const down = this.chosen > 1 && median(this.known(items, this.chosen)) < MAX_TRIAL_DOWN_STEP_MS ? Math.max(1, Math.floor(this.chosen / 2)) : null;
    const up = this.chosen < this.cap ? Math.min(this.cap, this.chosen * 2) : null;
    const threads = this.downNext ? (down ?? up) : (up ?? down);
    if (threads === null) {
      this.stepsUntilTrial = this.interval;
      return this.chosen;
    }
    this.trial = { threads, items };
    this.times.delete(`${items}:${threads}`);
    return threads;
  }
}
