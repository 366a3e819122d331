// Runs one direct-side job of `npm run bench` (bench-direct.ts) in a child process, so that the
// engine there and the daemon's runner never hold the model or the cores at the same time.
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { REPO } from "../test/helpers/daemon.js";
import type { DirectJob } from "./bench-direct.js";
import type { BenchPlan } from "./bench-plan.js";

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

export interface FirstTokenServer {
  pid: number;
  /** evaluate() → first token on the direct engine, ms, and the prompt's tokens. */
  time(prompt: string): Promise<{ ms: number; promptTokens: number }>;
  stop(): Promise<void>;
}

/** A direct engine kept loaded in a child for first-token pairs (bench-ttft-pairs.ts). */
export async function startFirstTokenServer(plan: BenchPlan): Promise<FirstTokenServer> {
  const child = forkDirect();
  type Reply = { ready?: true; ms?: number; promptTokens?: number; error?: string };
  let waiting: { resolve: (r: Reply) => void; reject: (e: Error) => void } | null = null;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.on("message", (m) => {
    const w = waiting;
    waiting = null;
    const r = m as Reply;
    if (r.error) w?.reject(new Error(`first-token server: ${r.error}`));
    else w?.resolve(r);
  });
  child.once("exit", (code, signal) => waiting?.reject(new Error(`first-token server exited (${signal ?? code})`)));
  const next = () => new Promise<Reply>((resolve, reject) => (waiting = { resolve, reject }));
  const ready = next();
  child.send({ job: "first-token-server", plan });
  await ready;
  return {
    pid: child.pid!,
    time: async (prompt) => {
      const reply = next();
      child.send({ prompt });
      const r = await reply;
      return { ms: r.ms!, promptTokens: r.promptTokens! };
    },
    stop: async () => {
      child.send({ stop: true });
      await exited;
    },
  };
}
