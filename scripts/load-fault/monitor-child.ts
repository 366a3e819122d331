// A process of its own that watches the daemon while the load runs, so the load generator's busy
// event loop does not delay the measurements: `GET /` every 50 ms on its own schedule (a slow
// answer does not delay the next probe, so a stall counts once per tick it covers), the same
// probe against an idle control server in another process (what the machine itself adds), and
// each second the daemon's RSS, its runner processes and the load average.
// Started by monitor.ts; reads "stop" on stdin, then prints one JSON line (MonitorSamples).
import { spawn } from "node:child_process";
import http from "node:http";
import os from "node:os";
import { childPids } from "../../test/helpers/daemon.js";
import { cpuMs, readRssMiB } from "../bench-plan.js";

export interface MonitorSamples {
  /** GET / latencies of the daemon and of the control server, ms; failures as Infinity. */
  daemonMs: number[];
  controlMs: number[];
  probeErrors: string[];
  /** The slowest daemon probes, with the wall-clock time they were sent (to match the daemon's log). */
  slowest: Array<{ at: string; ms: number }>;
  rssMiB: number[];
  runners: number[];
  runnerRssMiB: number[];
  load1: number[];
  /** The daemon's CPU time (all threads), ms, at each sample. */
  cpuMs: number[];
}

const [daemonUrl, pidText] = process.argv.slice(2);
const daemonPid = Number(pidText);
// A new connection per probe, as `curl` makes: a kept-alive socket that sat idle in the pool can
// be closed by the server (its 5 s keep-alive timeout) just as the probe reuses it, a reset that
// is the client's race, not the daemon's fault.
const agent = false;
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

function get(url: string): Promise<number> {
  const t0 = nowMs();
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: 30_000 }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve(nowMs() - t0) : reject(new Error(`GET / answered ${res.statusCode}`))));
    });
    req.on("timeout", () => req.destroy(new Error("GET / unanswered for 30 s")));
    req.on("error", reject);
  });
}

/** An idle HTTP server in its own process; resolves to its URL. */
function startControl(): Promise<{ url: string; stop: () => void }> {
  const code = "require('http').createServer((q,s)=>s.end('ok')).listen(0,'127.0.0.1',function(){console.log(this.address().port)})";
  const p = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    p.stdout.once("data", (d: Buffer) => resolve({ url: `http://127.0.0.1:${d.toString().trim()}/`, stop: () => p.kill() }));
    p.once("error", reject);
  });
}

const s: MonitorSamples = { daemonMs: [], controlMs: [], probeErrors: [], slowest: [], rssMiB: [], runners: [], runnerRssMiB: [], load1: [], cpuMs: [] };
const control = await startControl();
let inFlight = 0;
function noteSlow(at: Date, ms: number): void {
  s.slowest.push({ at: at.toISOString(), ms: Math.round(ms) });
  s.slowest.sort((a, b) => b.ms - a.ms);
  s.slowest.length = Math.min(s.slowest.length, 5);
}
const probe = (url: string, into: number[]) => {
  inFlight++;
  const at = new Date();
  void get(url)
    .then(
      (t) => {
        into.push(t);
        if (into === s.daemonMs) noteSlow(at, t);
      },
      (e: Error) => {
        into.push(Infinity);
        if (s.probeErrors.length < 20) s.probeErrors.push(e.message);
      },
    )
    .finally(() => inFlight--);
};
const fast = setInterval(() => {
  probe(`${daemonUrl}/`, s.daemonMs);
  probe(control.url, s.controlMs);
}, 50);
const slow = setInterval(() => {
  void (async () => {
    const rss = await readRssMiB(daemonPid);
    if (rss !== null) s.rssMiB.push(rss);
    const kids = await childPids(daemonPid);
    s.runners.push(kids.length);
    let sum = 0;
    for (const k of kids) sum += (await readRssMiB(k)) ?? 0;
    s.runnerRssMiB.push(sum);
    s.load1.push(os.loadavg()[0]!);
    s.cpuMs.push(await cpuMs(daemonPid, "all"));
  })();
}, 1000);

process.stdin.setEncoding("utf8");
process.stdin.on("data", (d: string) => {
  if (!d.includes("stop")) return;
  clearInterval(fast);
  clearInterval(slow);
  // the probes in flight finish first (each is bounded by its 30 s timeout)
  const done = setInterval(() => {
    if (inFlight > 0) return;
    clearInterval(done);
    control.stop();
    process.stdout.write(JSON.stringify(s) + "\n", () => process.exit(0));
  }, 20);
});
