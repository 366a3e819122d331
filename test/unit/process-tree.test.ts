// A process tree from a fake /proc: members, CPU seconds with reaped children, and signals.
import { execFileSync, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ReadText } from "../../src/backends/llamacpp/cpu-limits.js";
import { readText } from "../../src/backends/llamacpp/cpu-limits.js";
import { continueOrphanedSpares, processTree, signalTree, treeCpuSeconds } from "../../src/backends/llamacpp/process-tree.js";

const files = (tree: Record<string, string>): ReadText => (p) => tree[p] ?? null;
const procStat = (pid: number, utime: number, stime: number, cutime: number, cstime: number) =>
  `${pid} (node (a) b) S 1 2 3 4 5 6 7 8 9 10 ${utime} ${stime} ${cutime} ${cstime} 20 0 1 0\n`;

describe("process tree", () => {
  it("walks children of children, once each, and stops at a cycle", () => {
    const read = files({ "/proc/10/task/10/children": "11 12 ", "/proc/11/task/11/children": "13", "/proc/13/task/13/children": "10" });
    expect(processTree(10, read)).toEqual([10, 11, 13, 12]);
    expect(processTree(99, read)).toEqual([99]);
  });

  it("CPU seconds: every member's own and reaped children's time; null when the root is gone", () => {
    const read = files({
      "/proc/10/stat": procStat(10, 100, 50, 20, 5), // a command name with spaces and parentheses
      "/proc/10/task/10/children": "11",
      "/proc/11/stat": procStat(11, 30, 0, 0, 0),
    });
    expect(treeCpuSeconds(10, read)).toBeCloseTo(2.05);
    expect(treeCpuSeconds(12, read)).toBeNull();
  });

  it("stops and continues a real process and its child", async () => {
    if (process.platform !== "linux") return;
    // A parent that starts a child; both spin.
    const p = spawn(process.execPath, ["-e", `require("node:child_process").spawn(process.execPath, ["-e", "for(;;){}"], {stdio: "ignore"}); for(;;){}`], { stdio: "ignore" });
    try {
      const pid = p.pid!;
      let tree: number[] = [];
      for (let i = 0; i < 100 && tree.length < 2; i++) {
        await new Promise((r) => setTimeout(r, 50));
        tree = processTree(pid, readText);
      }
      expect(tree).toHaveLength(2);
      const state = (q: number) => /\) (\w)/.exec(readText(`/proc/${q}/stat`) ?? "")?.[1];
      expect(signalTree(pid, "SIGSTOP", readText)).toBe(true);
      // a signalled process stops when the scheduler next runs it: soon, but late on a loaded machine
      for (let i = 0; i < 250 && !tree.every((q) => state(q) === "T"); i++) await new Promise((r) => setTimeout(r, 20));
      expect(tree.map(state)).toEqual(["T", "T"]);
      const before = treeCpuSeconds(pid, readText)!;
      await new Promise((r) => setTimeout(r, 300));
      expect(treeCpuSeconds(pid, readText)).toBe(before); // a stopped tree uses no CPU
      signalTree(pid, "SIGCONT", readText);
      await new Promise((r) => setTimeout(r, 100));
      expect(tree.map(state)).toEqual(["R", "R"]);
      signalTree(pid, "SIGKILL", readText);
    } finally {
      p.kill("SIGKILL");
    }
  });
});

describe("orphaned spares", () => {
  it("a stopped spare whose daemon is gone is continued; one with a live parent, or another process, is not", async () => {
    if (process.platform !== "linux") return;
    // A fake spare orphaned by its shell, then stopped; and a stopped process that is no spare.
    // Each in a session of its own, so that nothing sent to the test runner's process group
    // (or by the kernel to an orphaned group's stopped members) reaches them.
    const start = (args: string) =>
      Number(execFileSync("sh", ["-c", `setsid ${JSON.stringify(process.execPath)} -e "setInterval(() => {}, 1e6)" ${args} >/dev/null 2>&1 & echo $!`], { encoding: "utf8" }).trim());
    const spare = start("/x/runner-main.js --spare");
    const other = start("/x/other.js --spare");
    const state = (q: number) => /\) (\w) (\d+)/.exec(readText(`/proc/${q}/stat`) ?? "");
    try {
      process.kill(spare, "SIGSTOP");
      process.kill(other, "SIGSTOP");
      // a signalled process shows "R" until the scheduler runs it (late on a loaded machine)
      for (let i = 0; i < 250 && (state(spare)?.[1] !== "T" || state(other)?.[1] !== "T"); i++) execFileSync("sleep", ["0.02"]);
      expect(state(spare)?.[1]).toBe("T");
      expect(state(other)?.[1]).toBe("T");
      // orphans go to init here; a machine with a subreaper gives them another parent
      if (state(spare)?.[2] !== "1") return;
      const list = async () => readdirSync("/proc");
      const read = async (p: string) => readText(p);
      expect(await continueOrphanedSpares("--spare", /runner-main\.[jt]s$/, read, list)).toBe(1);
      for (let i = 0; i < 100 && state(spare)?.[1] === "T"; i++) execFileSync("sleep", ["0.02"]);
      expect(state(spare)?.[1]).not.toBe("T");
      expect(state(other)?.[1]).toBe("T");
      // this test's own stopped child (parent alive) is left alone
      const mine = spawn(process.execPath, ["-e", "setInterval(() => {}, 1e6)", "/x/runner-main.js", "--spare"], { stdio: "ignore", detached: true });
      try {
        process.kill(mine.pid!, "SIGSTOP");
        for (let i = 0; i < 100 && state(mine.pid!)?.[1] !== "T"; i++) execFileSync("sleep", ["0.02"]);
        expect(await continueOrphanedSpares("--spare", /runner-main\.[jt]s$/, read, list)).toBe(0);
        expect(state(mine.pid!)?.[1]).toBe("T");
      } finally {
        mine.kill("SIGKILL");
      }
    } finally {
      for (const p of [spare, other]) {
        try {
          process.kill(p, "SIGKILL");
        } catch {
          // gone
        }
      }
    }
  });
});
