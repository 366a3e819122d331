// The runner's free-core thread budget, on fake /proc and /sys trees (cgroup v1 and v2, quotas,
// affinity) and on this machine's real ones.
import os from "node:os";
import { describe, expect, it } from "vitest";
import { parseCpuList, readCpuLimits, type ReadText } from "../../src/backends/llamacpp/cpu-limits.js";
import { freeCores, ProcCpuMeter, threadCapacity, ThreadBudget, threadsFor, type CpuMeter, type CpuSample } from "../../src/backends/llamacpp/thread-budget.js";

const files = (tree: Record<string, string>): ReadText => (p) => tree[p] ?? null;

const V2_MOUNT = "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
const V1_MOUNTS =
  "31 25 0:27 /docker/abc /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
  "32 25 0:28 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";

describe("cpu limits", () => {
  it("parses affinity lists", () => {
    expect(parseCpuList("0-3,8,10-11")).toEqual([0, 1, 2, 3, 8, 10, 11]);
    expect(parseCpuList("5")).toEqual([5]);
    expect(parseCpuList("3-1")).toBeNull();
    expect(parseCpuList("a")).toBeNull();
  });

  it("cgroup v2: the tightest quota of the cgroup and its parents, and its usage file", () => {
    const read = files({
      "/proc/self/status": "Name:\tnode\nCpus_allowed_list:\t0-7\n",
      "/proc/self/mountinfo": V2_MOUNT,
      "/proc/self/cgroup": "0::/user.slice/app.service\n",
      "/sys/fs/cgroup/user.slice/app.service/cpu.max": "max 100000\n",
      "/sys/fs/cgroup/user.slice/cpu.max": "150000 100000\n",
      "/sys/fs/cgroup/cpu.max": "400000 100000\n",
    });
    const l = readCpuLimits(read);
    expect(l.cpus).toHaveLength(8);
    expect(l.quotaCores).toBe(1.5);
    expect(l.usageFile).toEqual({ path: "/sys/fs/cgroup/user.slice/app.service/cpu.stat", unit: "usec-stat" });
    expect(threadCapacity(l)).toBe(1);
  });

  it("cgroup v1 inside a container (the mount's root is the container's cgroup)", () => {
    const read = files({
      "/proc/self/status": "Cpus_allowed_list:\t0-15\n",
      "/proc/self/mountinfo": V1_MOUNTS,
      "/proc/self/cgroup": "4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n",
      "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "300000\n",
      "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    });
    const l = readCpuLimits(read);
    expect(l.quotaCores).toBe(3);
    expect(l.usageFile).toEqual({ path: "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", unit: "nsec" });
    expect(threadCapacity(l)).toBe(3);
  });

  it("no quota (-1, max) and no readable files leave only what is known", () => {
    const v1 = readCpuLimits(
      files({
        "/proc/self/mountinfo": V1_MOUNTS,
        "/proc/self/cgroup": "2:cpu,cpuacct:/docker/abc\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
      }),
    );
    expect(v1).toEqual({ cpus: null, quotaCores: null, usageFile: null });
    expect(readCpuLimits(files({}))).toEqual({ cpus: null, quotaCores: null, usageFile: null });
    expect(threadCapacity({ cpus: null, quotaCores: null, usageFile: null }, 6)).toBe(6);
    expect(threadCapacity({ cpus: [0], quotaCores: 0.2, usageFile: null })).toBe(1);
  });

  it("a cgroup path that climbs out of the mount is not followed", () => {
    const read = files({
      "/proc/self/mountinfo": V2_MOUNT,
      "/proc/self/cgroup": "0::/../../etc\n",
    });
    expect(readCpuLimits(read).quotaCores).toBeNull();
  });
});

const s = (t: number, busy: number, own: number, cgroup: number | null = null): CpuSample => ({ t, busy, own, cgroup });

describe("free cores and threads", () => {
  it("what others use on the allowed CPUs is not free; this process's own use is", () => {
    // 2 CPUs fully busy for 1 s: 1 core by this runner, 1 by someone else.
    expect(freeCores(s(0, 0, 0), s(1, 2, 1), 2, null)).toBeCloseTo(1);
    // only this runner busy
    expect(freeCores(s(0, 0, 0), s(1, 2, 2), 2, null)).toBeCloseTo(2);
    // a quota of 1.5 cores on an idle 8-CPU host, 0.5 core used by other members of the cgroup
    expect(freeCores(s(0, 1, 0, 0), s(1, 2, 0.5, 1), 8, 1.5)).toBeCloseTo(1);
  });

  it("one thread per free core, a core counting as free when others use less than 0.4 of it", () => {
    expect(threadsFor(2, 2)).toBe(2);
    expect(threadsFor(1.7, 2)).toBe(2); // others use 0.3 core
    expect(threadsFor(1.5, 2)).toBe(1); // half a core taken
    expect(threadsFor(1, 2)).toBe(1); // one busy process on two cores
    expect(threadsFor(0, 2)).toBe(1); // never fewer than one
    expect(threadsFor(12.9, 16)).toBe(13);
    expect(threadsFor(Number.NaN, 4)).toBe(4);
  });
});

/** A meter replaying given samples (one per call), on 2 CPUs without a quota. */
function replay(samples: CpuSample[]): CpuMeter {
  let i = 0;
  return { cpuCount: 2, limits: { cpus: [0, 1], quotaCores: null, usageFile: null }, sample: () => samples[Math.min(i++, samples.length - 1)]! };
}

describe("ThreadBudget", () => {
  it("moves only when two windows in a row agree, down as well as up", () => {
    const b = new ThreadBudget(
      replay([
        s(0, 0, 0),
        s(0.5, 1, 0.5), // others 1 core
        s(1.0, 2, 1.0), // others 1 core again
        s(1.5, 2.5, 1.5), // alone again (0 others)
        s(2.0, 3.5, 2.5), // alone
        s(2.5, 4.5, 3.5), // alone
      ]),
    );
    expect(b.capacity).toBe(2);
    expect(b.current()).toBe(2); // one busy window is not a busy core
    expect(b.current()).toBe(1);
    expect(b.current()).toBe(1); // one quiet window is not a free core
    expect(b.current()).toBe(2);
    expect(b.current()).toBe(2);
  });

  it("a burst in one window between quiet ones never moves the budget", () => {
    const b = new ThreadBudget(
      replay([
        s(0, 0, 0),
        s(0.3, 0, 0), // quiet
        s(0.6, 0.6, 0), // others 0.6 s in 0.3 s: a burst
        s(0.9, 0.6, 0), // quiet
        s(1.2, 1.2, 0), // burst
        s(1.5, 1.2, 0), // quiet
      ]),
    );
    for (let i = 0; i < 5; i++) expect(b.current()).toBe(2);
  });

  it("measures over windows of at least a quarter second", () => {
    const b = new ThreadBudget(replay([s(0, 0, 0), s(0.1, 0.2, 0), s(0.3, 0.6, 0), s(0.6, 1.2, 0)]));
    expect(b.current()).toBe(2); // 0.1 s: too short, nothing measured
    expect(b.current()).toBe(2); // 0.3 s since the first sample: 2 cores used by others, once
    expect(b.current()).toBe(1); // and again over the next 0.3 s
  });

  it("without /proc it keeps the capacity", () => {
    const b = new ThreadBudget({ cpuCount: 3, limits: { cpus: null, quotaCores: null, usageFile: null }, sample: () => null });
    expect(b.current()).toBe(3);
  });
});

describe("on this machine", () => {
  it.runIf(process.platform === "linux")("reads the affinity and samples /proc", () => {
    const m = new ProcCpuMeter();
    expect(m.cpuCount).toBe(os.availableParallelism());
    const a = m.sample();
    expect(a).not.toBeNull();
    let x = 0;
    for (let i = 0; i < 3e7; i++) x += i; // some CPU of our own
    const b = m.sample()!;
    expect(x).toBeGreaterThan(0);
    expect(b.own).toBeGreaterThanOrEqual(a!.own);
    expect(b.busy).toBeGreaterThanOrEqual(b.own - a!.own);
  });
});

describe("the budget reaches node-llama-cpp between batches", () => {
  it("a maxThreads set in the batch strategy's hook is the thread count of that very batch", async () => {
    const { getLlama, LlamaLogLevel } = await import("node-llama-cpp");
    const { makeTestModel } = await import("../../scripts/make-test-model.js");
    const { batchPlanStrategy } = await import("../../src/backends/llamacpp/batch-plan.js");
    const llama = await getLlama({ build: "never", gpu: false, maxThreads: 2, logLevel: LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath: await makeTestModel({ type: "Q4_0" }) });
    const budgets = [2, 1, 2];
    const seen: number[] = [];
    let context: Awaited<ReturnType<typeof model.createContext>> | undefined;
    let batch = 0;
    context = await model.createContext({
      contextSize: 128,
      threads: 2,
      batching: {
        itemPrioritizationStrategy: batchPlanStrategy(
          () => context,
          () => {
            llama.maxThreads = budgets[Math.min(batch++, budgets.length - 1)]!;
          },
        ),
      },
    });
    try {
      const seq = context.getSequence();
      for (const tokens of [[1, 20, 21], [22], [23]]) {
        await seq.evaluateWithoutGeneratingNewTokens(tokens as never);
        seen.push(context.currentThreads);
      }
      expect(seen).toEqual([2, 1, 2]);
    } finally {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    }
  }, 60_000);
});

describe("ProcCpuMeter on a fake /proc", () => {
  const stat = (busy0: number, busy1: number, busy5: number) =>
    `cpu  1 1 1 1 0 0 0 0 0 0\ncpu0 ${busy0} 0 0 100 0 0 0 0 0 0\ncpu1 ${busy1} 0 0 100 0 0 0 0 0 0\ncpu5 ${busy5} 0 0 100 0 0 0 0 0 0\n`;
  const selfStat = (utime: number) => `123 (node runner) S 1 2 3 4 5 6 7 8 9 10 ${utime} 0 0 0 20 0 1 0\n`;

  it("counts only allowed CPUs that are online, and this process's own time apart", () => {
    let t = 0;
    let tree: Record<string, string> = {
      "/proc/self/status": "Cpus_allowed_list:\t0-1,5,7-63\n", // 7-63 are not online
      "/proc/stat": stat(0, 0, 0),
      "/proc/self/stat": selfStat(0),
    };
    const m = new ProcCpuMeter((p) => tree[p] ?? null, () => t);
    expect(m.cpuCount).toBe(3);
    const a = m.sample()!;
    // one second: cpu0 busy with this process (100 ticks), cpu1 busy with someone else, cpu5 idle
    tree = { ...tree, "/proc/stat": stat(100, 100, 0), "/proc/self/stat": selfStat(100) };
    t = 1;
    const b = m.sample()!;
    expect(b.own - a.own).toBeCloseTo(1);
    expect(freeCores(a, b, m.cpuCount, null)).toBeCloseTo(2);
    expect(threadCapacity(m.limits)).toBe(3);
  });
});

describe("a spare that gives way is not counted as taking cores", () => {
  const stat = (busy: number) => `cpu  ${busy} 0 0 100 0 0 0 0 0 0\ncpu0 ${busy / 2} 0 0 100 0 0 0 0 0 0\ncpu1 ${busy / 2} 0 0 100 0 0 0 0 0 0\n`;
  const procStat = (pid: number, utime: number, cutime = 0) => `${pid} (node) S 1 2 3 4 5 6 7 8 9 10 ${utime} 0 ${cutime} 0 20 0 1 0\n`;

  it("the spare's tree (its binary test child, then that child's time reaped into the spare) is left out; others still count", () => {
    let t = 0;
    let tree: Record<string, string> = {
      "/proc/self/status": "Cpus_allowed_list:\t0-1\n",
      "/proc/stat": stat(0),
      "/proc/self/stat": procStat(1, 0),
      "/proc/77/stat": procStat(77, 0),
      "/proc/77/task/77/children": "78 ",
      "/proc/78/stat": procStat(78, 0),
    };
    const m = new ProcCpuMeter((p) => tree[p] ?? null, () => t);
    m.setYielding([77]);
    const a = m.sample()!;
    // 1 s: the spare 0.6 core, its child 0.6 core, someone else 0.4 core: 1.6 cores busy
    tree = { ...tree, "/proc/stat": stat(160), "/proc/77/stat": procStat(77, 60), "/proc/78/stat": procStat(78, 60) };
    t = 1;
    const b = m.sample()!;
    expect(freeCores(a, b, 2, null)).toBeCloseTo(1.6);
    expect(threadsFor(freeCores(a, b, 2, null), 2)).toBe(2);
    // 1 s more: the child exits (its 60 + 40 more ticks now in the spare's cutime), the spare 0.5 core, nobody else
    const { "/proc/78/stat": _gone, ...rest } = tree;
    tree = { ...rest, "/proc/77/task/77/children": "", "/proc/stat": stat(250), "/proc/77/stat": procStat(77, 110, 100) };
    t = 2;
    const c = m.sample()!;
    expect(freeCores(b, c, 2, null)).toBeCloseTo(2);
    // without the spare named, the same second leaves a single core free
    m.setYielding([]);
    const d = m.sample()!;
    tree = { ...tree, "/proc/stat": stat(350), "/proc/77/stat": procStat(77, 210, 100) };
    t = 3;
    expect(freeCores(d, m.sample()!, 2, null)).toBeCloseTo(1);
  });

  it("a spare that goes away between two samples counts for nothing either way", () => {
    let t = 0;
    let tree: Record<string, string> = { "/proc/self/status": "Cpus_allowed_list:\t0-1\n", "/proc/stat": stat(0), "/proc/self/stat": procStat(1, 0), "/proc/77/stat": procStat(77, 500) };
    const m = new ProcCpuMeter((p) => tree[p] ?? null, () => t);
    m.setYielding([77]);
    const a = m.sample()!;
    const { "/proc/77/stat": _gone, ...rest } = tree;
    tree = { ...rest, "/proc/stat": stat(100) }; // someone else: 1 core
    t = 1;
    expect(freeCores(a, m.sample()!, 2, null)).toBeCloseTo(1);
  });
});
