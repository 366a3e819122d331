import { describe, expect, it } from "vitest";
import type { BatchItem } from "node-llama-cpp";
import { batchPlanStrategy, planBatch, PROMPT_CHUNK_WITH_DECODERS } from "../../src/backends/llamacpp/batch-plan.js";
import type { BatchShape } from "../../src/backends/llamacpp/decode-threads.js";
import { StepGate } from "../../src/backends/llamacpp/step-gate.js";
import { blockMicroseconds, MAX_PAUSE_US, pauseMicroseconds, StepPause } from "../../src/backends/llamacpp/step-pause.js";

describe("planBatch", () => {
  it("gives decoding sequences their token and a long prompt at most one chunk", () => {
    expect(planBatch([1, 1, 900, 1], 512)).toEqual([1, 1, PROMPT_CHUNK_WITH_DECODERS, 1]);
  });
  it("lets a prompt alone (or prompts among themselves) fill the batch", () => {
    expect(planBatch([900], 512)).toEqual([512]);
    expect(planBatch([900, 40], 512)).toEqual([472, 40]);
    expect(planBatch([300, 300], 512)).toEqual([256, 256]);
  });
  it("shares a small batch fairly and never exceeds it", () => {
    const a = planBatch([10, 10, 10, 10], 8);
    expect(a).toEqual([2, 2, 2, 2]);
    const b = planBatch([1, 1, 1, 1, 1], 3);
    expect(b.reduce((x, y) => x + y, 0)).toBe(3);
  });
});

describe("batchPlanStrategy", () => {
  it("tells the hook the shape of the batch it planned, before the batch runs", () => {
    const shapes: BatchShape[] = [];
    const strategy = batchPlanStrategy(() => undefined, (b) => shapes.push(b));
    const item = (n: number) => ({ tokens: new Array(n).fill(1), evaluationPriority: 1 }) as unknown as BatchItem;
    strategy({ items: [item(1), item(900), item(1)], size: 512 });
    strategy({ items: [item(1), item(1)], size: 512 });
    expect(shapes).toEqual([
      { items: 3, tokens: PROMPT_CHUNK_WITH_DECODERS + 2 },
      { items: 2, tokens: 2 },
    ]);
  });
});

describe("StepGate", () => {
  const tick = () => new Promise((r) => setImmediate(r));
  it("releases a step only when every member arrived, in ascending id order", async () => {
    const g = new StepGate();
    const order: number[] = [];
    for (const id of [2, 0, 1]) g.join(id);
    const p2 = g.arrive(2).then(() => order.push(2));
    const p0 = g.arrive(0).then(() => order.push(0));
    await tick();
    expect(order).toEqual([]);
    const p1 = g.arrive(1).then(() => order.push(1));
    await Promise.all([p0, p1, p2]);
    expect(order).toEqual([0, 1, 2]);
  });
  it("a member that leaves releases the others; a non-member never waits", async () => {
    const g = new StepGate();
    g.join(0);
    g.join(1);
    let released = false;
    const p = g.arrive(0).then(() => (released = true));
    await tick();
    expect(released).toBe(false);
    g.leave(1);
    await p;
    expect(released).toBe(true);
    await g.arrive(7); // not a member
    expect(g.size).toBe(1);
  });
  it("hold() waits for the members' current step, keeps them at the gate until let go", async () => {
    const g = new StepGate();
    g.join(0);
    g.join(1);
    let held = false;
    const holding = g.hold().then((letGo) => {
      held = true;
      return letGo;
    });
    await tick();
    expect(held).toBe(false); // both are still computing their token
    let stepped = 0;
    const a0 = g.arrive(0).then(() => stepped++);
    await tick();
    expect(held).toBe(false);
    const a1 = g.arrive(1).then(() => stepped++);
    const letGo = await holding;
    expect(held).toBe(true);
    await tick();
    expect(stepped).toBe(0); // held at the gate
    letGo();
    letGo(); // twice is harmless
    await Promise.all([a0, a1]);
    expect(stepped).toBe(2);
    g.leave(0);
    g.leave(1);
    const again = await g.hold(); // no member left: at once
    again();
  });
});

describe("StepPause", () => {
  it("pauses 0.5% of the last step, at most 0.25 ms, and nothing before the first", () => {
    expect(pauseMicroseconds(48)).toBeCloseTo(240, 6);
    expect(pauseMicroseconds(1)).toBeCloseTo(5, 6);
    expect(pauseMicroseconds(400)).toBe(MAX_PAUSE_US);
    expect(pauseMicroseconds(0)).toBe(0);
    expect(pauseMicroseconds(Number.NaN)).toBe(0);
    let clock = 1000;
    const blocks: number[] = [];
    const p = new StepPause(() => clock, (us) => blocks.push(us));
    p.settle();
    clock += 20;
    p.settle();
    clock += 2;
    p.settle();
    expect(blocks.map((us) => Math.round(us))).toEqual([100, 10]);
  });
  it("blocks the thread for the time asked", () => {
    const t0 = performance.now();
    blockMicroseconds(3000);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(2.9);
  });
  it("the gate calls it once per released step, never while held or for nobody", async () => {
    let steps = 0;
    const g = new StepGate(() => steps++);
    g.join(0);
    g.join(1);
    await Promise.all([g.arrive(0), g.arrive(1)]);
    expect(steps).toBe(1);
    const holding = g.hold(); // waits for both to finish the step they are computing
    const both = Promise.all([g.arrive(0), g.arrive(1)]);
    const letGo = await holding;
    await new Promise((r) => setImmediate(r));
    expect(steps).toBe(1);
    letGo();
    await both;
    expect(steps).toBe(2);
    g.leave(0);
    g.leave(1);
    expect(steps).toBe(2);
  });
});
