import { describe, expect, it } from "vitest";
import { DecodeThreads, type BatchShape } from "../../src/backends/llamacpp/decode-threads.js";

const DECODE: BatchShape = { items: 1, tokens: 1 };
const PROMPT: BatchShape = { items: 1, tokens: 256 };

/** Runs `steps` decode steps of a machine where a step on n threads takes stepMs(n); returns the
 *  thread count of every step and the total time. */
function decode(t: DecodeThreads, cap: number, steps: number, stepMs: (n: number) => number, clock: { now: number }, shape = DECODE) {
  const seen: number[] = [];
  for (let i = 0; i < steps; i++) {
    const n = t.threadsFor(cap, shape);
    seen.push(n);
    clock.now += stepMs(n);
  }
  return seen;
}

function tuner() {
  const clock = { now: 0 };
  return { clock, t: new DecodeThreads(() => clock.now) };
}

describe("DecodeThreads", () => {
  it("keeps every free core when more threads decode faster, trying fewer only rarely", () => {
    const { clock, t } = tuner();
    // a model whose step is short enough to try: 12 ms on 2 threads, 18 on 1
    const seen = decode(t, 2, 2000, (n) => (n === 2 ? 12 : 18), clock);
    expect(t.current).toBe(2);
    const tries = seen.filter((n) => n === 1).length;
    expect(tries).toBeGreaterThan(0);
    // each lost comparison costs one step; they come ever more rarely
    expect(tries).toBeLessThanOrEqual(5);
  });

  it("never tries fewer threads on a long step, so a larger model's thread count (and text) stays put", () => {
    const { clock, t } = tuner();
    // the 1B-shaped model here: 41 ms on 2 threads, 62 on 1
    expect(decode(t, 2, 2000, (n) => (n === 2 ? 41 : 62), clock).every((n) => n === 2)).toBe(true);
    // and on a faster host: 29 ms on 2 threads, 38 on 1 (a trial there cost ~4 % of decode)
    const faster = tuner();
    expect(decode(faster.t, 2, 2000, (n) => (n === 2 ? 29 : 38), faster.clock).every((n) => n === 2)).toBe(true);
  });

  it("moves to fewer threads when they decode faster, and stays there", () => {
    const { clock, t } = tuner();
    // a small model on a VM: starting a second thread each step costs more than it saves
    const seen = decode(t, 2, 500, (n) => (n === 2 ? 15 : 0.8), clock);
    expect(t.current).toBe(1);
    expect(seen.slice(-400).filter((n) => n === 2).length).toBeLessThanOrEqual(2);
  });

  it("halves step by step on many cores and finds the best count, then tries back up", () => {
    const { clock, t } = tuner();
    const cost: Record<number, number> = { 16: 10, 8: 6, 4: 4, 2: 5, 1: 8 };
    decode(t, 16, 3000, (n) => cost[n]!, clock);
    expect(t.current).toBe(4);
  });

  it("gives prompt batches every free core", () => {
    const { clock, t } = tuner();
    decode(t, 2, 200, (n) => (n === 2 ? 15 : 0.8), clock);
    expect(t.current).toBe(1);
    expect(t.threadsFor(2, PROMPT)).toBe(2);
    expect(t.threadsFor(2, DECODE)).toBe(1);
  });

  it("relearns when the free cores change, starting from all of them", () => {
    const { clock, t } = tuner();
    decode(t, 2, 200, (n) => (n === 2 ? 15 : 0.8), clock);
    expect(t.current).toBe(1);
    expect(t.threadsFor(3, DECODE)).toBe(3);
    decode(t, 3, 400, (n) => (n === 3 ? 10 : n === 1 ? 30 : 20), clock);
    expect(t.current).toBe(3);
  });

  it("remembers the count chosen under each number of free cores", () => {
    const { clock, t } = tuner();
    decode(t, 2, 200, (n) => (n === 2 ? 15 : 0.8), clock);
    decode(t, 1, 50, () => 0.8, clock); // another process took a core for a while
    const back = decode(t, 2, 50, (n) => (n === 2 ? 15 : 0.8), clock);
    // one thread from the first step; only the trials (one slow step each, at 4 and 20) try two
    expect(back.slice(0, 4)).toEqual([1, 1, 1, 1]);
    expect(back.filter((n) => n === 2).length).toBeLessThanOrEqual(2);
  });

  it("does not count a pause between requests as a step", () => {
    const { clock, t } = tuner();
    decode(t, 2, 40, (n) => (n === 2 ? 41 : 62), clock);
    // requests whose whole prompt was cached start with a one-token batch after a pause
    for (let i = 0; i < 20; i++) {
      clock.now += 5000;
      decode(t, 2, 30, (n) => (n === 2 ? 41 : 62), clock);
    }
    expect(t.current).toBe(2);
  });

  it("streams joining and leaving (other batch widths) do not make trials more frequent", () => {
    const { clock, t } = tuner();
    let tries = 0;
    for (let i = 0; i < 400; i++) {
      const shape = { items: 1 + (i % 3), tokens: 1 + (i % 3) };
      tries += decode(t, 2, 5, (n) => (n === 2 ? 41 : 62) * (1 + 0.3 * (shape.items - 1)), clock, shape).filter((n) => n === 1).length;
    }
    expect(t.current).toBe(2);
    expect(tries).toBeLessThanOrEqual(5);
  });

  it("never changes a single core's count", () => {
    const { clock, t } = tuner();
    expect(decode(t, 1, 100, () => 5, clock).every((n) => n === 1)).toBe(true);
  });
});
