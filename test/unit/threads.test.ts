import { describe, expect, it } from "vitest";
import { threadBudgets } from "../../src/daemon/scheduler/threads.js";

const u = (busy: boolean, cpuBound = true, fixed = false) => ({ busy, cpuBound, fixed });

describe("threadBudgets", () => {
  it("splits the cores between busy CPU runners, at least one thread each", () => {
    expect(threadBudgets([u(true), u(true)], 8)).toEqual([4, 4]);
    expect(threadBudgets([u(true), u(true), u(true)], 2)).toEqual([1, 1, 1]);
    expect(threadBudgets([u(true), u(false)], 8)).toEqual([8, 8]);
  });
  it("leaves fully offloaded and explicitly threaded runners alone and out of the split", () => {
    expect(threadBudgets([u(true), u(true, false), u(true, true, true)], 8)).toEqual([8, undefined, undefined]);
  });
});
