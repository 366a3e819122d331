// Shared by the extra `npm run bench` cases (bench-parallel.ts, bench-prefix.ts, bench-profile.ts,
// bench-kv.ts): one streamed POST /api/generate over node:http, every NDJSON line timestamped on
// arrival, plus the CPU-load bookkeeping (how many cores' worth of CPU processes outside the bench used meanwhile).
import { childPids } from "../test/helpers/daemon.js";
import { cpuSnapshot, foreignCores, type CpuSnapshot } from "./bench-plan.js";

// The NDJSON client is the bench tool's (scripts/bench/client.ts).
export { generate, nowMs, readNdjsonLines, type Generation } from "./bench/client.js";

/** Samples CPU use of the bench, the daemon and its runners, to tell how much other processes used. */
export class LoadMeter {
  private start: CpuSnapshot | undefined;
  constructor(private readonly daemonPid: number) {}
  private async pids(): Promise<Array<number | "self">> {
    return ["self", this.daemonPid, ...(await childPids(this.daemonPid))];
  }
  async begin(): Promise<void> {
    this.start = await cpuSnapshot(await this.pids());
  }
  /** Cores' worth of CPU other processes used since begin(). */
  async end(): Promise<number> {
    const b = await cpuSnapshot(await this.pids());
    return this.start ? foreignCores(this.start, b) : NaN;
  }
  async ownPids(): Promise<Array<number | "self">> {
    return this.pids();
  }
}
