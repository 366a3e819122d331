// guardOutputOrder (output-order.ts): after a decode whose outputs llama.cpp may have to put back
// in order, the first sample runs alone and the others wait for it; decode steps and single
// outputs keep sampling in parallel. The native context here is a stand-in with the same
// method shapes (read-only prototype methods, as a Napi class has); the real engine's half is in
// test/integration/batching.test.ts.
import type { LlamaContext } from "node-llama-cpp";
import { describe, expect, it } from "vitest";
import { guardOutputOrder } from "../../src/backends/llamacpp/output-order.js";

interface Pending {
  index: number;
  resolve: (v: number) => void;
  reject: (e: Error) => void;
}

class FakeNative {
  pending: Pending[] = [];
  initBatch(_size: number): void {}
  addToBatch(_sequenceId: number, _first: number, _tokens: Uint32Array, logits: Uint32Array): Uint32Array {
    return logits;
  }
  async decodeBatch(): Promise<void> {}
  sampleToken(index: number): Promise<number> {
    return new Promise((resolve, reject) => this.pending.push({ index, resolve, reject }));
  }
  /** The batch indexes of the samples started and not finished. */
  inFlight(): number[] {
    return this.pending.map((p) => p.index);
  }
  finishAll(): void {
    for (const p of this.pending.splice(0)) p.resolve(0);
  }
}
// As node-addon-api defines instance methods: not writable.
for (const name of ["initBatch", "addToBatch", "decodeBatch", "sampleToken"]) {
  const d = Object.getOwnPropertyDescriptor(FakeNative.prototype, name)!;
  Object.defineProperty(FakeNative.prototype, name, { ...d, writable: false });
}

/** A stand-in native context, its methods wrapped (called through it, as node-llama-cpp does). */
function guarded(): FakeNative {
  const native = new FakeNative();
  expect(guardOutputOrder({ _ctx: native } as unknown as LlamaContext)).toBe(true);
  return native;
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** Fills and decodes one batch: each item is [sequence id, tokens, outputs]. */
async function batch(native: FakeNative, items: Array<[number, number, number]>): Promise<void> {
  native.initBatch(items.reduce((a, [, n]) => a + n, 0));
  for (const [seq, n, outputs] of items) native.addToBatch(seq, 0, new Uint32Array(n), new Uint32Array(outputs));
  await native.decodeBatch();
}

describe("guardOutputOrder", () => {
  it("after prompts of several tokens with several outputs, the first sample runs alone", async () => {
    const native = guarded();
    await batch(native, [
      [0, 30, 1],
      [1, 3, 1],
      [2, 11, 1],
    ]);
    const results = [0, 1, 2].map((i) => native.sampleToken(i));
    await tick();
    expect(native.inFlight()).toEqual([0]);
    native.pending.shift()!.resolve(10);
    await tick();
    expect(native.inFlight()).toEqual([1, 2]); // both at once after the first
    for (const p of native.pending.splice(0)) p.resolve(11 + p.index);
    expect(await Promise.all(results)).toEqual([10, 12, 13]);
    // A later sample of the same batch (speculative verification reads more rows) runs at once.
    void native.sampleToken(3);
    expect(native.inFlight()).toEqual([3]);
  });

  it("a failed first sample still lets the others run", async () => {
    const native = guarded();
    await batch(native, [
      [0, 5, 1],
      [1, 9, 1],
    ]);
    const first = native.sampleToken(0);
    const second = native.sampleToken(1);
    await tick();
    native.pending.shift()!.reject(new Error("no output"));
    await expect(first).rejects.toThrow("no output");
    await tick();
    expect(native.inFlight()).toEqual([1]);
    native.pending.shift()!.resolve(7);
    expect(await second).toBe(7);
  });

  it("decode steps (one token per sequence) and single outputs sample in parallel", async () => {
    const native = guarded();
    await batch(native, [
      [0, 1, 1],
      [1, 1, 1],
      [2, 1, 1],
      [3, 1, 1],
    ]);
    [0, 1, 2, 3].forEach((i) => void native.sampleToken(i));
    expect(native.inFlight()).toEqual([0, 1, 2, 3]);
    native.finishAll();
    // A long prompt's middle chunk next to a decoder: one output, nothing to reorder.
    await batch(native, [
      [0, 1, 1],
      [1, 128, 0],
    ]);
    void native.sampleToken(0);
    expect(native.inFlight()).toEqual([0]);
    native.finishAll();
    // Its last chunk next to the decoder: two outputs, one item of several tokens: guarded.
    await batch(native, [
      [0, 1, 1],
      [1, 64, 1],
    ]);
    void native.sampleToken(0);
    void native.sampleToken(1);
    await tick();
    expect(native.inFlight()).toEqual([0]);
    native.finishAll();
    await tick();
    expect(native.inFlight()).toEqual([1]);
    native.finishAll();
    // A long prompt alone: one output.
    await batch(native, [[2, 300, 1]]);
    void native.sampleToken(0);
    expect(native.inFlight()).toEqual([0]);
  });

  it("a new decode starts a new batch's order", async () => {
    const native = guarded();
    await batch(native, [
      [0, 4, 1],
      [1, 2, 1],
    ]);
    void native.sampleToken(0);
    native.pending.shift()!.resolve(1);
    void native.sampleToken(1);
    await tick();
    native.pending.shift()!.resolve(1);
    await batch(native, [
      [0, 6, 1],
      [1, 2, 1],
    ]);
    void native.sampleToken(0);
    void native.sampleToken(1);
    await tick();
    expect(native.inFlight()).toEqual([0]);
  });

  it("a context of another shape is left alone and reported", () => {
    const other = { _ctx: { decodeBatch: async () => undefined } } as unknown as LlamaContext;
    expect(guardOutputOrder(other)).toBe(false);
    expect(guardOutputOrder({} as LlamaContext)).toBe(false);
  });
});
