// What CPU this process may use at most, from Linux's own files: the CPUs its affinity allows
// (taskset, cpuset) and its cgroup's CPU quota (docker --cpus, systemd CPUQuota=), v2 or v1.
// os.availableParallelism() sees only the affinity. Elsewhere (no /proc) every figure is absent
// and the callers fall back to the core count.

import { readFileSync } from "node:fs";

/** Reads a text file; null when it cannot be read. Injectable so tests use a fake /proc and /sys. */
export type ReadText = (path: string) => string | null;

/** The real files. */
export const readText: ReadText = (p) => {
  try {
    return readFileSync(p, "utf8");
  } catch {
    return null;
  }
};

export interface CpuLimits {
  /** CPU numbers the affinity allows (null: unknown, take every CPU). */
  cpus: number[] | null;
  /** The tightest quota of the cgroup and its parents, in cores (null: none). */
  quotaCores: number | null;
  /** The file with the cgroup's total CPU time (v2 cpu.stat, v1 cpuacct.usage), when there is a quota. */
  usageFile: { path: string; unit: "usec-stat" | "nsec" } | null;
}

/** "0-3,8,10-11" → [0,1,2,3,8,10,11]; null when malformed. */
export function parseCpuList(text: string): number[] | null {
  const out: number[] = [];
  for (const part of text.trim().split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) return null;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a || b - a > 65_536) return null;
    for (let c = a; c <= b; c++) out.push(c);
  }
  return out.length > 0 ? out : null;
}

function allowedCpus(read: ReadText): number[] | null {
  const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(read("/proc/self/status") ?? "");
  return m ? parseCpuList(m[1]!) : null;
}

interface CgroupMount {
  version: 1 | 2;
  root: string;
  mountPoint: string;
  controllers: string[];
}

/** cgroup mounts from mountinfo: "ID parent maj:min root mountpoint opts [tags] - fstype source superopts". */
function cgroupMounts(read: ReadText): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of (read("/proc/self/mountinfo") ?? "").split("\n")) {
    const sep = line.indexOf(" - ");
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(" ");
    const [fstype, , superOpts = ""] = line.slice(sep + 3).split(" ");
    if (fstype !== "cgroup" && fstype !== "cgroup2") continue;
    const root = left[3];
    const mountPoint = left[4];
    if (root === undefined || mountPoint === undefined) continue;
    mounts.push({ version: fstype === "cgroup2" ? 2 : 1, root, mountPoint: unescapeMount(mountPoint), controllers: superOpts.split(",") });
  }
  return mounts;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** The directories of this process's cgroup and its ancestors up to the mount's root, innermost first. */
function cgroupDirs(mount: CgroupMount, cgPath: string): string[] {
  const root = mount.root === "/" ? "" : mount.root;
  // Inside a container the mount's root is the container's own cgroup: the path is relative to it.
  let rel = root && (cgPath === root || cgPath.startsWith(`${root}/`)) ? cgPath.slice(root.length) : cgPath;
  if (rel.includes("..")) return []; // never build a path that climbs out of the mount
  const dirs: string[] = [];
  for (;;) {
    dirs.push(`${mount.mountPoint}${rel === "/" ? "" : rel}`);
    if (rel === "" || rel === "/") break;
    rel = rel.slice(0, rel.lastIndexOf("/"));
  }
  return dirs;
}

function numberIn(text: string | null): number | null {
  if (text === null) return null;
  const n = Number(text.trim());
  return Number.isFinite(n) ? n : null;
}

function tightest(quotas: Array<number | null>): number | null {
  const real = quotas.filter((q): q is number => q !== null && q > 0);
  return real.length > 0 ? Math.min(...real) : null;
}

function v2Limits(read: ReadText, mount: CgroupMount, cgPath: string): Omit<CpuLimits, "cpus"> {
  const dirs = cgroupDirs(mount, cgPath);
  const quotaCores = tightest(
    dirs.map((d) => {
      const [quota, period] = (read(`${d}/cpu.max`) ?? "").trim().split(/\s+/);
      const q = Number(quota);
      const p = Number(period);
      return quota === "max" || !(q > 0 && p > 0) ? null : q / p;
    }),
  );
  const own = dirs[0];
  return { quotaCores, usageFile: quotaCores !== null && own !== undefined ? { path: `${own}/cpu.stat`, unit: "usec-stat" } : null };
}

function v1Limits(read: ReadText, cpuMount: CgroupMount, cpuPath: string, acct: { mount: CgroupMount; path: string } | null): Omit<CpuLimits, "cpus"> {
  const quotaCores = tightest(
    cgroupDirs(cpuMount, cpuPath).map((d) => {
      const q = numberIn(read(`${d}/cpu.cfs_quota_us`));
      const p = numberIn(read(`${d}/cpu.cfs_period_us`));
      return q !== null && p !== null && q > 0 && p > 0 ? q / p : null;
    }),
  );
  const own = acct ? cgroupDirs(acct.mount, acct.path)[0] : undefined;
  return { quotaCores, usageFile: quotaCores !== null && own !== undefined ? { path: `${own}/cpuacct.usage`, unit: "nsec" } : null };
}

/** Reads the affinity and the cgroup quota; anything unreadable is left out. */
export function readCpuLimits(read: ReadText): CpuLimits {
  const cpus = allowedCpus(read);
  const none = { cpus, quotaCores: null, usageFile: null };
  const mounts = cgroupMounts(read);
  const memberships = (read("/proc/self/cgroup") ?? "").split("\n").flatMap((line) => {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line);
    return m ? [{ controllers: m[2]!.split(","), path: m[3]! }] : [];
  });
  const v1 = (name: string) => {
    const member = memberships.find((m) => m.controllers.includes(name));
    const mount = mounts.find((x) => x.version === 1 && x.controllers.includes(name));
    return member && mount ? { mount, path: member.path } : null;
  };
  const cpu = v1("cpu");
  if (cpu) return { cpus, ...v1Limits(read, cpu.mount, cpu.path, v1("cpuacct")) };
  const unified = memberships.find((m) => m.controllers.length === 1 && m.controllers[0] === "");
  const mount2 = mounts.find((x) => x.version === 2);
  if (unified && mount2) return { cpus, ...v2Limits(read, mount2, unified.path) };
  return none;
}

/** The cgroup's total CPU time in seconds, from the file readCpuLimits found; null if unreadable. */
export function cgroupUsageSeconds(read: ReadText, file: NonNullable<CpuLimits["usageFile"]>): number | null {
  const text = read(file.path);
  if (text === null) return null;
  if (file.unit === "nsec") {
    const n = numberIn(text);
    return n === null ? null : n / 1e9;
  }
  const m = /^usage_usec\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) / 1e6 : null;
}
