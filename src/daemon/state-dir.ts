// The daemon's private directory for its runners' prompt caches (sequence-states.ts): created
// with mkdtemp (mode 0700, unpredictable name) under the system temp directory, removed when
// the daemon stops. Directories left by daemons that died without cleaning up (kill -9, power
// loss) are removed at the next start: their names carry the pid that made them.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { StateStore } from "../backends/backend.js";
import { removeDeadOwnerDirs } from "../fs/dead-owner-dirs.js";

const PREFIX = "ollamats-kv-";

/** State bytes per runner, 10% of RAM, at most 2 GiB: the slots it keeps across an unload;
 *  while it is loaded, half of it for its prompt snapshots (prompt-cache.ts). */
export function stateBudgetBytes(totalMem = os.totalmem()): number {
  return Math.min(2 * 1024 ** 3, Math.floor(totalMem / 10));
}

/** Removes our own users' state directories whose daemon is gone; never fails. */
export function removeStaleStateDirs(tmp = os.tmpdir()): void {
  removeDeadOwnerDirs(tmp, PREFIX);
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
