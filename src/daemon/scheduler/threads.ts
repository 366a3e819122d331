// CPU threads per runner. llama.cpp's worker threads spin while they wait for each other, so two
// busy runners that each use every core do not share the CPU: they stall each other (on 2 cores a
// model decoded ~1,000× slower with another runner's threads competing). Runners with automatic
// threads (num_thread unset) that compute on the CPU therefore split the cores between those busy
// at the moment; an idle runner keeps the whole budget for when it is next used alone.
import os from "node:os";

export interface ThreadUser {
  /** Requests attached right now. */
  busy: boolean;
  /** Some layers (or all) run on the CPU; a fully offloaded model hardly uses CPU threads. */
  cpuBound: boolean;
  /** num_thread was set explicitly: never changed. */
  fixed: boolean;
}

/** The thread budget of each runner (undefined: leave it as it is). */
export function threadBudgets(users: readonly ThreadUser[], coresGiven?: number): Array<number | undefined> {
  // Asking the OS for the cores is a syscall on every attach and release: only when a CPU runner
  // takes a budget (a remote model's requests never need one).
  if (!users.some((u) => u.cpuBound && !u.fixed)) return users.map(() => undefined);
  const cores = coresGiven ?? os.availableParallelism();
  const sharing = users.filter((u) => u.busy && u.cpuBound && !u.fixed).length;
  const share = Math.max(1, Math.floor(cores / Math.max(1, sharing)));
  return users.map((u) => (u.fixed || !u.cpuBound ? undefined : u.busy ? share : cores));
}
