// A process and its descendants, read from /proc: their CPU time, and one signal to all of them.
// The spare runner (spare-runner.ts) starts with children of its own (node-llama-cpp tests its
// native binary in a child process), so pausing it or discounting its CPU means its whole tree.
import type { ReadText } from "./cpu-limits.js";

/** Linux reports /proc/stat and /proc/<pid>/stat in USER_HZ ticks, 100 per second everywhere. */
export const TICKS_PER_SECOND = 100;

/** The fields of a /proc/<pid>/stat text after the command (which may hold spaces and
 *  parentheses): [0] state, [1] parent pid, [11] utime, [12] stime, [13] cutime, [14] cstime. */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** The pid and every live descendant (Linux; elsewhere just the pid). */
export function processTree(pid: number, read: ReadText): number[] {
  const out: number[] = [];
  const seen = new Set<number>();
  const visit = (p: number) => {
    if (seen.has(p) || out.length >= 256) return;
    seen.add(p);
    out.push(p);
    // Children are listed per thread that forked them; Node forks from its main thread.
    for (const c of (read(`/proc/${p}/task/${p}/children`) ?? "").trim().split(/\s+/)) {
      const child = Number(c);
      if (Number.isInteger(child) && child > 0) visit(child);
    }
  };
  visit(pid);
  return out;
}

/**
 * CPU seconds used so far by the tree under `pid` (null when the pid is gone): each member's own
 * time plus that of the children it has reaped, so a child that exits between two readings
 * moves its time into its parent's figure rather than out of the sum.
 */
export function treeCpuSeconds(pid: number, read: ReadText): number | null {
  let ticks = 0;
  let found = false;
  for (const p of processTree(pid, read)) {
    const stat = read(`/proc/${p}/stat`);
    if (stat === null) continue;
    const f = statFields(stat);
    ticks += (Number(f[11]) || 0) + (Number(f[12]) || 0) + (Number(f[13]) || 0) + (Number(f[14]) || 0);
    if (p === pid) found = true;
  }
  return found ? ticks / TICKS_PER_SECOND : null;
}

/** Sends `signal` to the pid and its descendants; false when the platform cannot. */
export function signalTree(pid: number, signal: NodeJS.Signals, read: ReadText): boolean {
  let sent = false;
  for (const p of processTree(pid, read)) {
    try {
      process.kill(p, signal);
      sent = true;
    } catch {
      // gone already, or a signal this platform does not have (SIGSTOP on Windows)
    }
  }
  return sent;
}

/** Reads a text file without blocking; null when it cannot be read. */
export type ReadTextAsync = (path: string) => Promise<string | null>;

/**
 * Lets orphaned spare runners that are stopped go on, so they see their daemon is gone and exit.
 * A spare is paused while runners compute (spare-runner.ts); should its daemon be killed then
 * (SIGKILL, the OOM killer), nothing would ever continue it unless the kernel does so for an
 * orphaned process group (it does when the daemon led its group: a shell, systemd). A daemon
 * starting looks for such processes: stopped, parent init, a runner's command line with `mark`.
 * It reads a file or two per process (~25 µs each here), so it runs beside the start, not in it.
 */
export async function continueOrphanedSpares(mark: string, entry: RegExp, read: ReadTextAsync, list: () => Promise<string[]>): Promise<number> {
  let continued = 0;
  for (const name of await list()) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await read(`/proc/${name}/stat`);
    if (!stat) continue;
    const f = statFields(stat);
    if (f[0] !== "T" || f[1] !== "1") continue;
    const argv = ((await read(`/proc/${name}/cmdline`)) ?? "").split("\0");
    if (!argv.includes(mark) || !argv.some((a) => entry.test(a))) continue;
    try {
      process.kill(Number(name), "SIGCONT");
      continued++;
    } catch {
      // gone, or not ours to signal
    }
  }
  return continued;
}
