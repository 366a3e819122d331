// Processes a test starts die with the test process: a run that ends early (a crash, a worker
// killed at its timeout, process.exit) would otherwise leave daemons and llama-servers running,
// holding ports, memory and cores on the machine after it.
import type { ChildProcess } from "node:child_process";

const running = new Set<ChildProcess>();
let hooked = false;

/** Kills `proc` (SIGKILL) when this process exits, unless it has ended by then. */
export function reapOnExit(proc: ChildProcess): void {
  if (!hooked) {
    hooked = true;
    process.once("exit", () => {
      for (const p of running) p.kill("SIGKILL");
    });
  }
  running.add(proc);
  proc.once("exit", () => running.delete(proc));
}
