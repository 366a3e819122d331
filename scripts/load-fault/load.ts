// Part 1, load: `clients` concurrent clients for `seconds` against one daemon on 127.0.0.1, a mix
// of generate and chat (streamed and not, num_predict 8), embed, tags, show, pull of a model the
// store has and fresh pulls (pulled, then deleted so the next pull is fresh again), while
// monitor-child.ts probes `GET /` every 50 ms and samples RSS and runners each second.
// Oracles: no error but queue-full 503s (counted apart), GET / p99 within the target, daemon RSS
// growth bounded, at most one runner per model in use, no ERROR line in the daemon's log, and the
// store verifies afterwards.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { makeTestModel, SHAPES } from "../make-test-model.js";
import { startRegistry } from "../../test/helpers/registry.js";
import { QUEUE_FULL } from "../../src/daemon/scheduler/queue.js";
import { errorLogLines, launch, saveLog, shortLines, type Daemon } from "./daemon.js";
import { freshPull, OPS, runOp, type LoadModels, type OpName, type Outcome } from "./load-ops.js";
import { startMonitor, type MonitorSummary } from "./monitor.js";
import { createModel, deleteModel, pushModel } from "./registry-seed.js";
import { Checks, mib, ms, percentile, table } from "./report.js";
import { describeStore, storeOk, verifyStore } from "./store-check.js";

export interface LoadOptions {
  seconds: number;
  clients: number;
  seed: number;
  /** OLLAMA_MAX_QUEUE of the daemon: small, so the cold start's burst meets the designed 503. */
  maxQueue: number;
  p99TargetMs: number;
  rssGrowthLimitMiB: number;
  /** options.num_thread of every generate and chat; undefined: the daemon's default. */
  numThread: number | undefined;
  log: (s: string) => void;
}

/** Relative frequency of each op. */
const MIX: Array<[OpName, number]> = [
  ["generate", 12],
  ["generate-stream", 13],
  ["chat", 12],
  ["chat-stream", 13],
  ["embed", 15],
  ["tags", 10],
  ["show", 10],
  ["pull-existing", 10],
  ["pull-fresh", 5],
];

interface OpStats {
  ok: number;
  busy: number;
  errors: number;
  okMs: number[];
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick(rand: () => number): OpName {
  const total = MIX.reduce((s, [, w]) => s + w, 0);
  let x = rand() * total;
  for (const [op, w] of MIX) if ((x -= w) < 0) return op;
  return MIX[0]![0];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class LoadRun {
  readonly stats = new Map<OpName, OpStats>(MIX.map(([op]) => [op, { ok: 0, busy: 0, errors: 0, okMs: [] }]));
  readonly errors = new Map<string, number>();
  private readonly freeFresh: Set<string>;

  constructor(
    private readonly base: string,
    private readonly models: LoadModels,
  ) {
    this.freeFresh = new Set(models.fresh);
  }

  async client(id: number, seed: number, deadline: number): Promise<void> {
    const rand = mulberry32(seed * 1000 + id);
    while (Date.now() < deadline) {
      let op = pick(rand);
      const fresh = op === "pull-fresh" ? [...this.freeFresh][Math.floor(rand() * this.freeFresh.size)] : undefined;
      if (op === "pull-fresh" && fresh === undefined) op = "pull-existing"; // every fresh model is being pulled
      if (fresh) this.freeFresh.delete(fresh);
      const t0 = performance.now();
      const out: Outcome = await runOp(() => (fresh ? freshPull(this.base, fresh) : OPS[op as Exclude<OpName, "pull-fresh">](this.base, this.models, rand)));
      if (fresh) this.freeFresh.add(fresh);
      this.record(op, out, performance.now() - t0);
      if (out.kind === "busy") await sleep(200 + rand() * 300); // a polite client backs off
    }
  }

  private record(op: OpName, out: Outcome, took: number): void {
    const s = this.stats.get(op)!;
    if (out.kind === "ok") {
      s.ok++;
      s.okMs.push(took);
    } else if (out.kind === "busy") s.busy++;
    else {
      s.errors++;
      const key = `${op}: ${out.detail}`;
      this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
    }
  }

  table(): string {
    const rows = [["op", "ok", "503 busy", "errors", "p50", "p99"]];
    for (const [op, s] of this.stats) rows.push([op, String(s.ok), String(s.busy), String(s.errors), ms(percentile(s.okMs, 50)), ms(percentile(s.okMs, 99))]);
    return table(rows);
  }

  total(k: "ok" | "busy" | "errors"): number {
    return [...this.stats.values()].reduce((n, s) => n + s[k], 0);
  }
}

async function setupModels(daemon: Daemon, registryHost: string, o: LoadOptions): Promise<LoadModels> {
  const name = (n: string) => `${registryHost}/load/${n}:latest`;
  const options = { num_predict: 8, temperature: 0.8, ...(o.numThread !== undefined ? { num_thread: o.numThread } : {}) };
  const models: LoadModels = { chat: name("chat"), embed: name("embed"), embedDims: SHAPES.tiny.embd, fresh: [], options };
  const files: Array<[string, string]> = [
    [models.chat, await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 })],
    [models.embed, await makeTestModel({ shape: "tiny", type: "F32", seed: 1, embedding: true })],
  ];
  for (const seed of [101, 102, 103]) files.push([name(`fresh-${seed}`), await makeTestModel({ shape: "tiny", type: "Q4_0", seed })]);
  files.push([name("fresh-small"), await makeTestModel({ shape: "small", type: "F16", seed: 1 })]);
  for (const [n, file] of files) {
    await createModel(daemon, n, file);
    await pushModel(daemon, n);
  }
  for (const [n] of files.slice(2)) {
    await deleteModel(daemon, n);
    models.fresh.push(n);
  }
  o.log(`  models: ${files.length} created and pushed to ${registryHost}; ${models.fresh.length} deleted locally for fresh pulls`);
  return models;
}

function monitorChecks(c: Checks, m: MonitorSummary, o: LoadOptions, inferenceModels: number): void {
  c.add(
    "GET / latency p99 (probe every 50 ms)",
    m.p99 <= o.p99TargetMs,
    `p50 ${ms(m.p50)}, p99 ${ms(m.p99)}, max ${ms(m.max)} (sent ${m.samples.slowest[0]?.at ?? "-"}) over ${m.probes} probes (target p99 <= ${o.p99TargetMs} ms); idle control server in the same conditions: p50 ${ms(m.controlP50)}, p99 ${ms(m.controlP99)}, max ${ms(m.controlMax)}; load average ${m.loadAvg.toFixed(1)} on ${os.cpus().length} cores, the daemon itself using ${m.daemonCores.toFixed(2)} of a core`,
  );
  c.add("GET / always answered", m.samples.probeErrors.length === 0, m.samples.probeErrors.length ? shortLines(m.samples.probeErrors) : "every probe answered 200");
  c.add(
    "daemon RSS bounded",
    m.rssMax - m.rssStart <= o.rssGrowthLimitMiB,
    `start ${mib(m.rssStart)}, max ${mib(m.rssMax)}, end ${mib(m.rssEnd)} (growth limit ${o.rssGrowthLimitMiB} MiB); runners together at most ${mib(m.runnerRssMax)}`,
  );
  c.add("runner count bounded", m.runnersMax <= inferenceModels, `at most ${m.runnersMax} runner processes (one per model in use: ${inferenceModels})`);
}

export async function runLoad(o: LoadOptions): Promise<Checks> {
  const c = new Checks("load");
  const work = await mkdtemp(path.join(os.tmpdir(), "ollamats-load-"));
  const reg = await startRegistry();
  let daemon: Daemon | undefined;
  try {
    daemon = await launch(path.join(work, "models"), work, { OLLAMA_MAX_QUEUE: String(o.maxQueue) });
    const models = await setupModels(daemon, reg.host, o);
    const run = new LoadRun(daemon.url, models);
    const monitor = startMonitor(daemon.url, daemon.pid);
    await sleep(2_500); // baseline samples before the first request
    o.log(`  ${o.clients} clients for ${o.seconds} s …`);
    const t0 = Date.now();
    const deadline = t0 + o.seconds * 1000;
    await Promise.all(Array.from({ length: o.clients }, (_, i) => run.client(i, o.seed, deadline)));
    const took = (Date.now() - t0) / 1000;
    const m = await monitor.stop();
    o.log(run.table());
    o.log(`  daemon RSS every 10 s (MiB): ${m.samples.rssMiB.filter((_, i) => i % 10 === 0).map((x) => x.toFixed(0)).join(" ")}`);
    const n = run.total("ok") + run.total("busy") + run.total("errors");
    o.log(`  ${n} requests in ${took.toFixed(0)} s (the last ones finish after the ${o.seconds} s: ${(n / took).toFixed(1)}/s); num_thread ${o.numThread ?? "default"}, OLLAMA_NUM_PARALLEL ${process.env.OLLAMA_NUM_PARALLEL || "default"}`);

    const errors = [...run.errors].sort((a, b) => b[1] - a[1]).map(([e, n]) => `${n}x ${e}`);
    c.add("no errors but designed 503s", run.total("errors") === 0, `${run.total("ok")} ok, ${run.total("busy")} queue-full 503s (OLLAMA_MAX_QUEUE=${o.maxQueue}), ${run.total("errors")} errors${errors.length ? `: ${shortLines(errors, 5)}` : ""}`);
    monitorChecks(c, m, o, 2);
    c.add("daemon alive after the load", daemon.alive() && (await fetch(daemon.url)).ok, daemon.alive() ? "answers GET /" : "the daemon exited");
    // the designed 503 is logged as an error too
    const bad = errorLogLines(daemon.logs(), [new RegExp(`msg="${QUEUE_FULL}"`)]);
    const logFile = await saveLog(daemon, "load");
    c.add("no ERROR or stack trace in the daemon log", bad.length === 0, `${bad.length ? shortLines(bad) : "none"} (log: ${logFile})`);
    await daemon.stop();
    const store = await verifyStore(daemon.models);
    c.add("store verifies after the load", storeOk(store), describeStore(store));
  } finally {
    await daemon?.kill9();
    await reg.stop();
    await rm(work, { recursive: true, force: true });
  }
  return c;
}
