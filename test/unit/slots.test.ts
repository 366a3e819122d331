import { describe, expect, it } from "vitest";
import { prefixScore, SlotAbortedError, SlotPool } from "../../src/backends/llamacpp/slots.js";

/** A slot is its cached tokens; the score is the common prefix with the prompt. */
const prefix = (prompt: number[]) => (s: number[]) => {
  let i = 0;
  while (i < s.length && i < prompt.length && s[i] === prompt[i]) i++;
  return i;
};

describe("SlotPool", () => {
  it("claim takes the free slot it picks at once, and a waiting request gets it when released", async () => {
    const a = [1];
    const b = [2];
    const pool = new SlotPool([a, b]);
    expect(pool.claim((free) => free.find((s) => s[0] === 2))).toBe(b);
    expect(pool.claim(() => undefined)).toBeUndefined();
    expect(pool.claim(() => [3])).toBeUndefined(); // not one of its free slots
    expect(await pool.acquire(() => 0)).toBe(a);
    expect(pool.claim((free) => free[0])).toBeUndefined(); // none free
    const waiting = pool.acquire(() => 0);
    pool.release(b);
    expect(await waiting).toBe(b);
  });

  it("takes the free slot with the longest common prefix", async () => {
    const a = [1, 2, 3];
    const b = [1, 5, 6, 7];
    const c = [1, 5, 6, 9, 9];
    const pool = new SlotPool([a, b, c]);
    expect(await pool.acquire(prefix([1, 5, 6, 9, 10]))).toBe(c);
    expect(await pool.acquire(prefix([1, 5, 7]))).toBe(b);
    expect(await pool.acquire(prefix([]))).toBe(a);
    expect(pool.idle).toBe(0);
  });

  it("among equal prefixes, the least recently released slot", async () => {
    const a = [1];
    const b = [2];
    const pool = new SlotPool([a, b]);
    const first = await pool.acquire(() => 0);
    expect(first).toBe(a);
    pool.release(first);
    expect(await pool.acquire(() => 0)).toBe(b); // a was just used: keep its cache
  });

  it("waiters are served in arrival order, each with its own best slot", async () => {
    const a = [1, 1];
    const b = [2, 2];
    const pool = new SlotPool([a, b]);
    const s1 = await pool.acquire(prefix([1]));
    const s2 = await pool.acquire(prefix([2]));
    const order: string[] = [];
    const w1 = pool.acquire(prefix([2, 2])).then((s) => (order.push("w1"), s));
    const w2 = pool.acquire(prefix([1, 1])).then((s) => (order.push("w2"), s));
    expect(pool.queued).toBe(2);
    pool.release(s1);
    expect(await w1).toBe(a); // only a is free when w1's turn comes
    pool.release(s2);
    expect(await w2).toBe(b);
    expect(order).toEqual(["w1", "w2"]);
  });

  it("an aborted waiter leaves the line at once and does not take a slot", async () => {
    const a = [1];
    const pool = new SlotPool([a]);
    const held = await pool.acquire(() => 0);
    const ac = new AbortController();
    const gone = pool.acquire(() => 0, ac.signal);
    const next = pool.acquire(() => 0);
    ac.abort();
    await expect(gone).rejects.toBeInstanceOf(SlotAbortedError);
    expect(pool.queued).toBe(1);
    pool.release(held);
    expect(await next).toBe(a);
    await expect(pool.acquire(() => 0, AbortSignal.abort())).rejects.toBeInstanceOf(SlotAbortedError);
  });
});

describe("SlotPool.swap", () => {
  it("trades a held slot for a free one, and refuses one that is not free", async () => {
    const pool = new SlotPool(["a", "b", "c"]);
    const held = await pool.acquire((s) => (s === "a" ? 1 : 0));
    expect(held).toBe("a");
    expect(pool.swap("a", "c")).toBe(true);
    expect(pool.isBusy("c")).toBe(true);
    expect(pool.isBusy("a")).toBe(false);
    expect(pool.idle).toBe(2);
    const other = await pool.acquire((s) => (s === "b" ? 1 : 0));
    expect(pool.swap("c", other)).toBe(false); // held by another request
    expect(pool.isBusy("c")).toBe(true);
  });
});

describe("prefixScore", () => {
  it("counts a prefix that keeps at least half of the slot's cache", () => {
    expect(prefixScore(40, 44)).toBe(40); // a follow-up turn
    expect(prefixScore(10, 20)).toBe(10);
    expect(prefixScore(1, 30)).toBe(0); // only BOS in common: another conversation
    expect(prefixScore(5, 400)).toBe(0); // only the template header
    expect(prefixScore(0, 0)).toBe(0); // an unused slot
  });
});
