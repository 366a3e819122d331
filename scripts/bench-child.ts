// Runs one direct-side job of the parallel case (bench-direct.ts) in a child process, so that the
// engine there and the daemon's runner never hold the model or the cores at the same time.
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { REPO } from "../test/helpers/daemon.js";
import type { DirectJob } from "./bench-direct.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));

function forkDirect(): ChildProcess {
  return fork(path.join(HERE, "bench-direct.ts"), [], {
    cwd: REPO,
    execArgv: ["--import", "tsx"],
    serialization: "json",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
}

/** Forks bench-direct.ts, sends it the job and resolves with its result. */
export function runDirect<T>(job: DirectJob): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = forkDirect();
    let settled = false;
    child.once("message", (m) => {
      settled = true;
      const msg = m as { ok: true; result: T } | { ok: false; message: string };
      if (msg.ok) resolve(msg.result);
      else reject(new Error(`direct side (${job.job}) failed: ${msg.message}`));
    });
    child.once("exit", (code, signal) => {
      if (!settled) reject(new Error(`direct side (${job.job}) exited (${signal ?? code}) without a result`));
    });
    child.send(job);
  });
}
