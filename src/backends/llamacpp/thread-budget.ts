// How many threads the runner's next batch should use: the cores actually free.
//
// llama.cpp's workers spin at a barrier after every operation of a graph until the slowest has
// finished it. A thread that another process preempts holds up every other thread at each
// barrier, so a runner that uses every core collapses as soon as anything else runs (measured on
// 2 cores with one busy process: 0.9 tok/s against 7.8 for the same engine left alone with the
// same threads; one thread on the core left free does better than both). The runner therefore
// measures, from /proc, how much CPU everything else used over the last quarter second or so
// (on the CPUs its affinity allows, and within its cgroup's quota), and gives each batch the
// cores left, re-checked between batches.
import os from "node:os";
import { cgroupUsageSeconds, readCpuLimits, readText, type CpuLimits, type ReadText } from "./cpu-limits.js";
import { statFields, TICKS_PER_SECOND, treeCpuSeconds } from "./process-tree.js";

/**
 * A core counts as free when at most this much of it is used by others. A thread sharing a core
 * with another process loses its share and stalls its siblings at each barrier; below ~0.4 of a
 * core taken, the thread still adds more than it costs (prompt evaluation scales with threads,
 * decode about 0.6× per halving on this class of machine).
 */
export const FREE_CORE_SLACK = 0.4;
/** The shortest window a measurement is taken over (ticks are 10 ms: ±4% of a core at 250 ms). */
export const MIN_WINDOW_S = 0.25;

/** Cumulative counters at one moment, in seconds. */
export interface CpuSample {
  t: number;
  /** Busy time of the CPUs this process may run on (all processes). */
  busy: number;
  /** This process's own CPU time (every thread). */
  own: number;
  /** The cgroup's CPU time when it has a quota, else null. */
  cgroup: number | null;
  /** CPU time of each process tree that gives way to this process (the spare runner: it is
   *  paused while a runner computes), by its root pid: not counted as taken. */
  yielding?: ReadonlyMap<number, number>;
}

/** CPU seconds the yielding trees used between two samples (trees in both samples only). */
function yieldedBetween(a: CpuSample, b: CpuSample): number {
  let sum = 0;
  for (const [pid, after] of b.yielding ?? []) {
    const before = a.yielding?.get(pid);
    if (before !== undefined) sum += Math.max(0, after - before);
  }
  return sum;
}

/** Cores free for this process between two samples, given its limits. */
export function freeCores(a: CpuSample, b: CpuSample, cpuCount: number, quotaCores: number | null): number {
  const dt = b.t - a.t;
  if (!(dt > 0)) return cpuCount;
  const own = Math.max(0, b.own - a.own) / dt;
  const yielded = yieldedBetween(a, b) / dt;
  const hostOthers = Math.max(0, (b.busy - a.busy) / dt - own - yielded);
  let free = cpuCount - hostOthers;
  if (quotaCores !== null) {
    const groupOthers = a.cgroup !== null && b.cgroup !== null ? Math.max(0, (b.cgroup - a.cgroup) / dt - own - yielded) : 0;
    free = Math.min(free, quotaCores - groupOthers);
  }
  return free;
}

/** Threads for `free` cores: at least one, at most `max`. */
export function threadsFor(free: number, max: number): number {
  if (!Number.isFinite(free)) return max;
  return Math.max(1, Math.min(max, Math.floor(free + FREE_CORE_SLACK)));
}

/** The most threads a runner should ever use here: allowed CPUs, within the cgroup quota. */
export function threadCapacity(limits: CpuLimits, fallback = os.availableParallelism()): number {
  const cpus = limits.cpus?.length ?? fallback;
  const quota = limits.quotaCores ?? Infinity;
  return Math.max(1, Math.floor(Math.min(cpus, quota)));
}

/** Reads the counters of CpuSample from /proc (and the cgroup's usage file). */
export class ProcCpuMeter {
  readonly limits: CpuLimits;
  private readonly cpuSet: Set<number> | null;
  private yieldingPids: readonly number[] = [];
  constructor(
    private readonly read: ReadText = readText,
    private readonly clock: () => number = () => performance.now() / 1000,
  ) {
    const limits = readCpuLimits(read);
    // The affinity mask may name CPUs that are not online (some VMs list every possible CPU);
    // only those /proc/stat reports count.
    const online = onlineCpus(read("/proc/stat") ?? "");
    const cpus = limits.cpus && online.size > 0 ? limits.cpus.filter((c) => online.has(c)) : limits.cpus;
    this.limits = { ...limits, cpus: cpus && cpus.length > 0 ? cpus : null };
    this.cpuSet = this.limits.cpus ? new Set(this.limits.cpus) : null;
  }

  /** CPUs the counters cover. */
  get cpuCount(): number {
    return this.limits.cpus?.length ?? os.availableParallelism();
  }

  /** Processes whose CPU is not counted as taken: they are paused while this one computes. */
  setYielding(pids: readonly number[]): void {
    this.yieldingPids = pids;
  }

  sample(): CpuSample | null {
    const stat = this.read("/proc/stat");
    const self = this.read("/proc/self/stat");
    if (stat === null || self === null) return null;
    const busy = busyTicks(stat, this.cpuSet);
    const f = statFields(self);
    const own = (Number(f[11]) || 0) + (Number(f[12]) || 0);
    if (busy === null) return null;
    const file = this.limits.usageFile;
    const yielding = new Map<number, number>();
    for (const pid of this.yieldingPids) {
      const seconds = treeCpuSeconds(pid, this.read);
      if (seconds !== null) yielding.set(pid, seconds);
    }
    return {
      t: this.clock(),
      busy: busy / TICKS_PER_SECOND,
      own: own / TICKS_PER_SECOND,
      cgroup: file ? cgroupUsageSeconds(this.read, file) : null,
      ...(yielding.size > 0 ? { yielding } : {}),
    };
  }
}

function onlineCpus(stat: string): Set<number> {
  const out = new Set<number>();
  for (const m of stat.matchAll(/^cpu(\d+)\s/gm)) out.add(Number(m[1]));
  return out;
}

/** Busy ticks (user nice system irq softirq steal) of the given CPUs, or of all ("cpu" line). */
function busyTicks(stat: string, cpus: Set<number> | null): number | null {
  let sum = 0;
  let seen = false;
  for (const line of stat.split("\n")) {
    const m = /^cpu(\d*)\s+(.*)$/.exec(line);
    if (!m) continue;
    const all = m[1] === "";
    if (cpus ? all || !cpus.has(Number(m[1])) : !all) continue;
    const v = m[2]!.trim().split(/\s+/).map(Number);
    sum += [0, 1, 2, 5, 6, 7].reduce((s, i) => s + (v[i] || 0), 0);
    seen = true;
  }
  return seen ? sum : null;
}

export interface CpuMeter {
  readonly cpuCount: number;
  readonly limits: CpuLimits;
  sample(): CpuSample | null;
}

/**
 * The free-core budget, updated at most once per MIN_WINDOW_S, and only when two windows in a row
 * agree: a short lull is not a free core, and a short burst (a request's parsing in the daemon, a
 * client's garbage collection) is not a busy one. A prompt is evaluated in one batch whose thread
 * count is fixed when it starts, so one noisy window at that moment halved a whole prompt's speed;
 * a process that really keeps a core busy costs at most one window more.
 */
export class ThreadBudget {
  readonly capacity: number;
  private last: CpuSample | null;
  private budget: number;
  private movingTo: number | null = null;

  constructor(private readonly meter: CpuMeter) {
    this.capacity = threadCapacity(meter.limits, meter.cpuCount);
    this.budget = this.capacity;
    this.last = meter.sample();
  }

  /** The threads to use now; takes a new measurement when the last one is old enough. */
  current(): number {
    const last = this.last;
    if (last === null) return this.budget;
    const now = this.meter.sample();
    if (now === null || now.t - last.t < MIN_WINDOW_S) return this.budget;
    this.last = now;
    const wanted = threadsFor(freeCores(last, now, this.meter.cpuCount, this.meter.limits.quotaCores), this.capacity);
    const previous = this.movingTo;
    this.movingTo = null;
    if (wanted === this.budget) return this.budget;
    if (previous === null || previous > this.budget !== wanted > this.budget) {
      this.movingTo = wanted; // the first window of a change: remembered, the budget kept
      return this.budget;
    }
    // Two windows agree on the direction: move by the smaller of the two changes.
    this.budget = wanted > this.budget ? Math.min(wanted, previous) : Math.max(wanted, previous);
    return this.budget;
  }
}
