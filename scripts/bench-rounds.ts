// The round loop of the parallel case (bench-parallel.ts), daemon vs direct:
// one daemon with the test model, then each round runs the daemon side and the direct side (in a
// child process, bench-child.ts) one after the other, the daemon first in even rounds, so that
// neither side always runs first and the two never compete for the cores.
import http from "node:http";
import { runDirect } from "./bench-child.js";
import { startWithModel, type BenchDaemon } from "./bench-daemon.js";
import type { DirectJob } from "./bench-direct.js";
import { nowMs } from "./bench-stream.js";

export interface AlternateOptions<T> {
  /** Names the daemon log when a round fails. */
  tag: string;
  env: Record<string, string>;
  model: string;
  modelPath: string;
  rounds: number;
  /** Round r on the daemon: load, measure, unload (the agent is the case's keep-alive client). */
  daemon: (agent: http.Agent, b: BenchDaemon, r: number) => Promise<T>;
  /** Round r's direct job; null skips the direct side. */
  direct: ((r: number) => DirectJob) | null;
  /** Called after each side of each round with its result and how long it took, ms. */
  show: (side: "daemon" | "direct", r: number, result: T, ms: number) => void;
  maxSockets?: number;
}

export async function alternateSides<T>(o: AlternateOptions<T>): Promise<{ daemon: T[]; direct: T[] }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.maxSockets ?? 1 });
  const out = { daemon: [] as T[], direct: [] as T[] };
  let b: BenchDaemon | undefined;
  try {
    b = await startWithModel(o.env, o.model, o.modelPath);
    for (let r = 0; r < o.rounds; r++) {
      for (const side of r % 2 === 0 ? (["daemon", "direct"] as const) : (["direct", "daemon"] as const)) {
        const t = nowMs();
        let res: T;
        if (side === "daemon") res = await o.daemon(agent, b, r);
        else if (o.direct) res = await runDirect<T>(o.direct(r));
        else continue;
        out[side].push(res);
        o.show(side, r, res, nowMs() - t);
      }
    }
  } catch (err) {
    if (b) process.stderr.write(`--- ${o.tag} daemon log (tail) ---\n${b.d.logs().slice(-3000)}\n`);
    throw err;
  } finally {
    agent.destroy();
    await b?.d.stop();
  }
  return out;
}
