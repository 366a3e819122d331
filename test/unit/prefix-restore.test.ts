// PrefixReuse's restore ahead (prefix-reuse.ts) with fake sequences and a real PromptCache over
// fake state files: which slot and snapshot it picks, that a newcomer always finds a free slot,
// and that a request arriving during the load waits for it and moves into that slot.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PrefixReuse } from "../../src/backends/llamacpp/prefix-reuse.js";
import { PromptCache } from "../../src/backends/llamacpp/prompt-cache.js";
import { SlotPool } from "../../src/backends/llamacpp/slots.js";
import { StepGate } from "../../src/backends/llamacpp/step-gate.js";

/** The parts of a sequence PrefixReuse reads: its tokens, compared and cleared. */
class FakeSeq {
  constructor(public contextTokens: Token[] = []) {}
  get nextTokenIndex(): number {
    return this.contextTokens.length;
  }
  compareContextTokens(tokens: Token[]): { firstDifferentIndex: number } {
    let i = 0;
    while (i < tokens.length && i < this.contextTokens.length && tokens[i] === this.contextTokens[i]) i++;
    return { firstDifferentIndex: i };
  }
  async clearHistory(): Promise<void> {
    this.contextTokens = [];
  }
}

const range = (from: number, n: number): Token[] => Array.from({ length: n }, (_, i) => (from + i) as Token);
/** `prefix` and then one more token. */
const then = (prefix: Token[], last: number): Token[] => [...prefix, last as Token];

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "prefix-restore-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A runner's prefix reuse over `n` fake slots; saves and loads wait at a gate when one is set. */
function setup(n: number) {
  const seqs = Array.from({ length: n }, () => new FakeSeq());
  const asSeq = (s: FakeSeq) => s as unknown as LlamaContextSequence;
  const pool = new SlotPool(seqs.map(asSeq));
  let loadGate: Promise<void> | undefined;
  let saveGate: Promise<void> | undefined;
  const loads: FakeSeq[] = [];
  const cache = new PromptCache<LlamaContextSequence>(() => dir, 1 << 30, {
    tokensOf: (s) => s.contextTokens,
    save: async (s, file) => {
      const tokens = JSON.stringify(s.contextTokens);
      await saveGate;
      await writeFile(file, tokens);
      return s.contextTokens.length * 4;
    },
    load: async (s, file) => {
      loads.push(s as unknown as FakeSeq);
      await loadGate;
      (s as unknown as FakeSeq).contextTokens = JSON.parse(await readFile(file, "utf8")) as Token[];
    },
  });
  const warnings: string[] = [];
  const reuse = new PrefixReuse(seqs.map(asSeq), pool, new StepGate(), cache, () => dir, (what) => warnings.push(what));
  /** A request: takes a slot as the runner does (best prefix score), adopts, "evaluates" the
   *  prompt into the slot, releases it and hands it to afterGeneration. */
  const request = async (tokens: Token[], hold?: Promise<void>) => {
    const taken = await pool.acquire((s) => (s as unknown as FakeSeq).compareContextTokens(tokens).firstDifferentIndex);
    const { seq, from } = await reuse.adopt(taken, tokens);
    const reused = Math.min(seq.compareContextTokens(tokens).firstDifferentIndex, tokens.length - 1);
    const held = seq.nextTokenIndex;
    await hold;
    (seq as unknown as FakeSeq).contextTokens = [...tokens];
    pool.release(seq);
    reuse.afterGeneration(seq, tokens, { reused, held });
    return { seq: seq as unknown as FakeSeq, from, reused };
  };
  return {
    seqs,
    pool,
    cache,
    reuse,
    loads,
    warnings,
    request,
    holdSaves: () => hold((g) => (saveGate = g)),
    holdLoads: () => hold((g) => (loadGate = g)),
  };
}

/** Sets a gate that file operations wait at; returns what opens it (and clears it). */
function hold(set: (gate: Promise<void> | undefined) => void): () => void {
  let open!: () => void;
  set(new Promise((r) => (open = r)));
  return () => {
    set(undefined);
    open();
  };
}

/** Whether `p` settles within a few turns of the event loop (a held file write never does). */
async function settlesSoon(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 20 && !done; i++) await new Promise((r) => setImmediate(r));
  return done;
}

describe("delayed snapshots", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a request in another slot does not wait for one; a request that overwrites its slot does, and the prefix stays in the cache", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] }); // the snapshot's delay never runs out by itself
    const t = setup(2);
    const prefix = range(1000, 600);
    const first = await t.request(then(prefix, 1));
    const open = t.holdSaves();
    const other = await t.pool.acquire((s) => (s === (first.seq as unknown as LlamaContextSequence) ? -1 : 0));
    expect(await settlesSoon(t.reuse.adopt(other, range(5000, 40)))).toBe(true);
    t.pool.release(other);
    const same = await t.pool.acquire((s) => (s === (first.seq as unknown as LlamaContextSequence) ? 1 : 0));
    const overwriting = t.reuse.adopt(same, range(7000, 40));
    expect(await settlesSoon(overwriting)).toBe(false); // the slot's snapshot is being written first
    open();
    await overwriting;
    expect(t.cache.best(then(prefix, 1)).common).toBe(prefix.length + 1); // all the slot held
    t.pool.release(same);
    expect(t.warnings).toEqual([]);
  });
});

describe("restore ahead", () => {
  it("loads the prefix short prompts pushed out back into an idle slot; the next request with it starts there", async () => {
    const t = setup(2);
    const prefix = range(1000, 600);
    await t.request(then(prefix, 1));
    await t.reuse.idle(); // its snapshot written
    expect(t.cache.size).toBe(1);
    await Promise.all([t.request(range(5000, 40)), t.request(range(6000, 40))]);
    await t.reuse.idle();
    expect(t.seqs.filter((s) => s.compareContextTokens(prefix).firstDifferentIndex === prefix.length)).toHaveLength(1);
    const again = await t.request(then(prefix, 2));
    expect(again.from).toBe("restored");
    expect(again.reused).toBe(prefix.length);
    expect(t.warnings).toEqual([]);
  });

  it("a request that wants the prefix while it is being loaded waits for the load and moves into that slot", async () => {
    const t = setup(3);
    const prefix = range(1000, 600);
    await t.request(then(prefix, 1));
    await t.reuse.idle();
    const open = t.holdLoads();
    await Promise.all([t.request(range(5000, 40)), t.request(range(6000, 40)), t.request(range(7000, 40))]);
    await new Promise((r) => setTimeout(r, 10));
    expect(t.loads).toHaveLength(1); // the restore, held
    const loading = t.loads[0]!;
    expect(t.pool.idle).toBe(2); // its slot is taken for the load, the others are free
    const pending = t.request(then(prefix, 2));
    await new Promise((r) => setTimeout(r, 10));
    open();
    const again = await pending;
    expect(again.seq).toBe(loading);
    expect(again.from).toBe("restored");
    expect(t.loads.filter((s) => s === loading)).toHaveLength(1); // not loaded a second time
    await t.reuse.idle();
    expect(t.pool.idle).toBe(3); // the slot it took first went back to the pool
  });

  it("a request that does not want it does not wait for the load", async () => {
    const t = setup(2);
    const prefix = range(1000, 600);
    await t.request(then(prefix, 1));
    await t.reuse.idle();
    const open = t.holdLoads();
    await Promise.all([t.request(range(5000, 40)), t.request(range(6000, 40))]);
    await new Promise((r) => setTimeout(r, 10));
    expect(t.loads).toHaveLength(1);
    const other = await t.request(range(8000, 40)); // would hang here if it waited
    expect(other.from).toBe("own");
    open();
    await t.reuse.idle();
  });

  it("never with one slot, and never over a slot that holds what no snapshot has", async () => {
    const one = setup(1);
    await one.request(then(range(1000, 600), 1));
    await one.reuse.idle();
    await one.request(range(5000, 40));
    await one.reuse.idle();
    expect(one.loads).toHaveLength(0);

    const t = setup(2);
    await t.request(then(range(1000, 600), 1));
    await t.reuse.idle();
    // Each slot then holds 200 tokens no snapshot has (under the snapshot threshold) ...
    await Promise.all([t.request(range(5000, 200)), t.request(range(6000, 200))]);
    await t.reuse.idle();
    expect(t.loads).toHaveLength(1); // ... which is cheap enough to lose: restored once
    // A long conversation in one slot and the prefix in the other: nothing to restore.
    const before = t.loads.length;
    await t.request(range(9000, 900));
    await t.reuse.idle();
    expect(t.loads).toHaveLength(before);
  });
});
