// The daemon's private directory for its runners' prompt caches (sequence-states.ts): created
// with mkdtemp (mode 0700, unpredictable name) under the system temp directory, removed when
// the daemon stops. Directories left by daemons that died without cleaning up (kill -9, power
// loss) are removed at the next start: their names carry the pid that made them.
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { StateStore } from "../backends/llamacpp/protocol.js";

const PREFIX = "ollamats-kv-";
const NAME = /^ollamats-kv-(\d+)-[A-Za-z0-9]{6}$/;

/** Total state bytes one runner may keep across an unload: 10% of RAM, at most 2 GiB. */
export function stateBudgetBytes(totalMem = os.totalmem()): number {
  return Math.min(2 * 1024 ** 3, Math.floor(totalMem / 10));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes our own users' state directories whose daemon is gone; never fails. */
export function removeStaleStateDirs(tmp = os.tmpdir()): void {
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const m = NAME.exec(name);
    if (!m || alive(Number(m[1]))) continue;
    const dir = path.join(tmp, name);
    try {
      const st = statSync(dir);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // another daemon cleaned it, or it is not ours to remove
    }
  }
}

export interface DaemonStateDir {
  store: StateStore;
  remove(): void;
}

export function createStateDir(tmp = os.tmpdir()): DaemonStateDir {
  removeStaleStateDirs(tmp);
  const dir = mkdtempSync(path.join(tmp, `${PREFIX}${process.pid}-`));
  return {
    store: { dir, budgetBytes: stateBudgetBytes() },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
