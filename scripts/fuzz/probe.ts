// Event-loop stall probe: a worker thread asks the daemon for `GET /` every 75 ms, one request at a
// time, and keeps the slowest answer (a request still waiting counts with its age). In a worker,
// so the fuzzer's own work (building a case, reading an answer) never shows up as a stall.
import { Worker } from "node:worker_threads";

const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const url = new URL(workerData.url);
let max = 0, started = 0, failures = 0, stopped = false;
function tick() {
  if (stopped) return;
  started = performance.now();
  const done = (ok) => {
    const dt = performance.now() - started;
    started = 0;
    if (ok) max = Math.max(max, dt); else failures++;
    setTimeout(tick, 75);
  };
  const req = http.get({ host: url.hostname, port: url.port, path: "/", agent: false }, (res) => {
    res.resume();
    res.on("end", () => done(true));
    res.on("error", () => done(false));
  });
  req.on("error", () => done(false));
}
parentPort.on("message", (m) => {
  if (m === "stop") { stopped = true; parentPort.close(); return; }
  const pending = started ? performance.now() - started : 0;
  parentPort.postMessage({ maxMs: Math.round(Math.max(max, pending)), failures });
  max = 0; failures = 0;
});
tick();
`;

export interface ProbeReading {
  /** Slowest `GET /` since the last reading, in ms. */
  maxMs: number;
  /** Probes that got no answer (connection refused or reset). */
  failures: number;
}

export class LoopProbe {
  private readonly worker: Worker;

  constructor(url: string) {
    this.worker = new Worker(WORKER, { eval: true, workerData: { url } });
    this.worker.unref();
  }

  /** The readings since the previous call (the first call starts a fresh window). */
  read(): Promise<ProbeReading> {
    return new Promise((resolve) => {
      this.worker.once("message", (m: ProbeReading) => resolve(m));
      this.worker.postMessage("read");
    });
  }

  async stop(): Promise<void> {
    this.worker.postMessage("stop");
    await this.worker.terminate();
  }
}
