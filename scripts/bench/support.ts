// What the bench's cases share: a daemon with models, fresh prompts, other processes' CPU use,
// busy processes, and medians.
import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import http from "node:http";
import { childPids, createModelFromFile, sparePids, startDaemon, type TestDaemon } from "../../test/helpers/daemon.js";
import { cpuSnapshot, foreignCores, promptOfTokens, type CpuSnapshot } from "../bench-plan.js";
import { generate, nowMs, type Generation } from "./client.js";

export { nowMs };

export function median(xs: number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Seeds of fresh prompts: from the clock, so no run starts with what an earlier one cached;
 *  consecutive seeds start with different words (bench-plan.ts promptOfTokens). */
let nextSeed = Math.floor(Date.now() / 1000) % 112;

/** A raw prompt of exactly `tokens` tokens (BOS included) that shares nothing but BOS with the
 *  prompts before it. */
export function freshPrompt(tokens: number): string {
  return promptOfTokens(freshSeed(), tokens);
}

/** The seed of the next fresh prompt (for a prompt fitted to another tokenizer: Direct.fit). */
export function freshSeed(): number {
  nextSeed = (nextSeed + 1) % 112;
  return nextSeed;
}

/** A daemon with models created in it, and a keep-alive agent for its requests. */
export class BenchDaemon {
  readonly agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  private constructor(readonly d: TestDaemon) {}

  static async start(env: Record<string, string>, models: Record<string, string>): Promise<BenchDaemon> {
    const b = new BenchDaemon(await startDaemon(env));
    try {
      await b.create(models);
    } catch (err) {
      await b.stop();
      throw err;
    }
    return b;
  }

  /** Creates models from GGUF files (uploaded as blobs). */
  async create(models: Record<string, string>): Promise<void> {
    for (const [name, file] of Object.entries(models)) {
      const r = await createModelFromFile(this.d.url, name, file);
      if (!r.ok) throw new Error(`create ${name}: ${r.status} ${await r.text()}`);
      await r.text();
    }
  }

  generate(body: Record<string, unknown>): Promise<Generation> {
    return generate(this.agent, this.d.url, body);
  }

  /** Our processes: the daemon and its children (runners, spare). */
  async pids(): Promise<number[]> {
    const pid = this.d.proc.pid!;
    return [pid, ...(await childPids(pid)), ...(await sparePids(pid))];
  }

  /** Waits until the daemon's spare runner exists and has finished starting (its CPU time stops
   *  growing), so that a load measures what a user gets from a daemon that has been up a moment. */
  async spareReady(timeoutMs = 60_000): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    let last = -1;
    while (Date.now() < end) {
      const [spare] = await sparePids(this.d.proc.pid!);
      const ticks = spare ? await cpuTicks(spare) : -1;
      if (spare && ticks >= 0 && ticks - last <= 1 && last >= 0) return true;
      last = ticks;
      await sleep(300);
    }
    return false;
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    await this.d.stop();
  }
}

async function cpuTicks(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return text ? (Number(f[11]) || 0) + (Number(f[12]) || 0) : -1;
}

/** How many cores' worth of CPU processes other than ours used between begin() and end(). */
export class ForeignLoad {
  private a: CpuSnapshot | undefined;
  constructor(private readonly ours: () => Promise<number[]>) {}
  async begin(): Promise<void> {
    this.a = await cpuSnapshot(["self", ...(await this.ours())]);
  }
  async end(): Promise<number> {
    const b = await cpuSnapshot(["self", ...(await this.ours())]);
    return this.a ? foreignCores(this.a, b) : NaN;
  }
}

/** `n` processes that each keep one core busy until stopped (the "busy machine"). */
export class BusyProcesses {
  private readonly procs: ChildProcess[];
  constructor(n: number) {
    this.procs = Array.from({ length: n }, () => spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" }));
  }
  get pids(): number[] {
    return this.procs.map((p) => p.pid ?? 0);
  }
  async stop(): Promise<void> {
    await Promise.all(
      this.procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once("exit", () => resolve());
            p.kill("SIGKILL");
          }),
      ),
    );
  }
}

/** Decode speed as the consumer sees it: (chunks − 1) / (last − first), tokens/s. */
export function decodeRate(times: number[]): number {
  if (times.length < 2) return NaN;
  return (times.length - 1) / ((times.at(-1)! - times[0]!) / 1000);
}

export const fmt = (x: number, digits = 2): string => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");
