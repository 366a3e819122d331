// Shared by the extra `npm run bench` cases (bench-parallel.ts, bench-prefix.ts, bench-profile.ts,
// bench-kv.ts): one streamed POST /api/generate over node:http, every NDJSON line timestamped on
// arrival, plus the CPU-load bookkeeping (how many cores' worth of CPU processes outside the bench used meanwhile).
import http from "node:http";
import { childPids } from "../test/helpers/daemon.js";
import { cpuSnapshot, foreignCores, type CpuSnapshot } from "./bench-plan.js";

import { nowMs } from "./bench-plan.js";
export { nowMs };

export interface Generation {
  tSent: number;
  /** First line with a non-empty `response` (the final line's time when there is none). */
  tFirst: number;
  /** The final (`done`) line's arrival. */
  tDone: number;
  tEnd: number;
  final: Record<string, unknown>;
  text: string;
}

/**
 * Calls onLine(line, arrival time) for every non-empty NDJSON line of a response (a chunk's lines
 * share the chunk's arrival time), and onEnd(time) after the last one.
 */
export function readNdjsonLines(res: http.IncomingMessage, onLine: (line: string, t: number) => void, onEnd: (t: number) => void): void {
  let buf = "";
  const emit = (line: string, t: number) => {
    if (line.trim()) onLine(line, t);
  };
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    const t = nowMs();
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      emit(buf.slice(0, nl), t);
      buf = buf.slice(nl + 1);
    }
  });
  res.on("end", () => {
    const t = nowMs();
    emit(buf, t);
    onEnd(t);
  });
}

/** Streams one /api/generate and throws on an HTTP error, an `error` line or a missing final chunk. */
export function generate(agent: http.Agent, base: string, body: Record<string, unknown>): Promise<Generation> {
  const url = new URL("/api/generate", base);
  const data = Buffer.from(JSON.stringify({ stream: true, ...body }));
  return new Promise((resolve, reject) => {
    let tSent = 0;
    let tFirst = NaN;
    let tDone = NaN;
    let text = "";
    let final: Record<string, unknown> | undefined;
    let error: string | undefined;
    const onLine = (line: string, t: number) => {
      const obj = JSON.parse(line) as Record<string, unknown>;
      if (typeof obj.error === "string") error = obj.error;
      if (typeof obj.response === "string" && obj.response !== "") {
        if (Number.isNaN(tFirst)) tFirst = t;
        text += obj.response;
      }
      if (obj.done) {
        final = obj;
        tDone = t;
      }
    };
    const req = http.request(
      { agent, host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { "Content-Type": "application/json", "Content-Length": data.length } },
      (res) => {
        readNdjsonLines(res, onLine, (tEnd) => {
          if (res.statusCode !== 200 || error) reject(new Error(`/api/generate: HTTP ${res.statusCode} ${error ?? ""}`));
          else if (!final) reject(new Error("/api/generate: stream ended without a final chunk"));
          else resolve({ tSent, tFirst: Number.isNaN(tFirst) ? tEnd : tFirst, tDone, tEnd, final, text });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    tSent = nowMs();
    req.end(data);
  });
}

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
