// Runs monitor-child.ts beside the daemon and summarises what it saw.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { MonitorSamples } from "./monitor-child.js";
import { percentile } from "./report.js";

export interface MonitorSummary {
  samples: MonitorSamples;
  probes: number;
  p50: number;
  p99: number;
  max: number;
  controlP50: number;
  controlP99: number;
  controlMax: number;
  rssStart: number;
  rssMax: number;
  rssEnd: number;
  runnersMax: number;
  runnerRssMax: number;
  loadAvg: number;
  /** Cores' worth of CPU the daemon itself (not its runners) used while watched. */
  daemonCores: number;
}

export interface Monitor {
  stop(): Promise<MonitorSummary>;
}

const CHILD = fileURLToPath(new URL("./monitor-child.ts", import.meta.url));

export function startMonitor(daemonUrl: string, daemonPid: number): Monitor {
  const p = spawn(process.execPath, ["--import", "tsx", CHILD, daemonUrl, String(daemonPid)], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  p.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => p.once("exit", () => r()));
  return {
    stop: async () => {
      p.stdin.end("stop\n");
      await exited;
      const samples = JSON.parse(out) as MonitorSamples;
      return summarise(samples);
    },
  };
}

function summarise(s: MonitorSamples): MonitorSummary {
  // JSON turned Infinity (a failed probe) into null
  const finite = (xs: number[]) => (xs as Array<number | null>).map((x) => x ?? Infinity);
  const d = finite(s.daemonMs);
  const c = finite(s.controlMs);
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
  return {
    samples: s,
    probes: d.length,
    p50: percentile(d, 50),
    p99: percentile(d, 99),
    max: Math.max(...d),
    controlP50: percentile(c, 50),
    controlP99: percentile(c, 99),
    controlMax: Math.max(...c),
    rssStart: s.rssMiB[0] ?? NaN,
    rssMax: Math.max(...s.rssMiB),
    rssEnd: s.rssMiB[s.rssMiB.length - 1] ?? NaN,
    runnersMax: Math.max(0, ...s.runners),
    runnerRssMax: Math.max(0, ...s.runnerRssMiB),
    loadAvg: mean(s.load1),
    daemonCores: s.cpuMs.length > 1 ? (s.cpuMs.at(-1)! - s.cpuMs[0]!) / ((s.cpuMs.length - 1) * 1000) : NaN,
  };
}
