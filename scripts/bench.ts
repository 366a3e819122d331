// `npm run bench`: what the daemon costs on top of the inference engine (DESIGN.md §9).
//
// One run, one model (the Llama-3.2-1B-shaped Q4_0 test model), the same threads, context shape
// and sampling on both sides:
//   (a) decode tokens/s streamed through POST /api/generate versus the same generation called
//       directly on node-llama-cpp (LlamaContextSequence.evaluate) in a separate process;
//   (b) time to first token: client request → first non-empty NDJSON line, versus evaluate() →
//       first token, on ~32-token prompts that differ from the first word on (no prefix reuse);
//       the overhead is the median difference over pairs of runs on the same prompt;
//   (c) the daemon's RSS with no model: after start, and after a model was unloaded (keep_alive 0).
// Rounds alternate the sides; each side loads, warms up, measures and unloads, so the two never
// compete for the cores (the daemon stays up, idle and without a runner, while the direct side runs).
// Both sides generate the same tokens (same prompt, seed, sampling and prefix-reuse rule), which
// the report checks. Prints a table and the ratios against their targets; writes
// .cache/bench-latest.json.
// BENCH_ROUNDS (default 3) and BENCH_TOKENS (default 128) shorten a run for a smoke check.
// The first-token overhead is then measured apart (bench-ttft-pairs.ts): BENCH_TTFT_PAIRS
// (default 24) back-to-back pairs on short prompts, both engines loaded.
// After these, more cases, each in its own file (docs/performance.md): aggregate decode
// tok/s at 1, 2 and 4 concurrent streams (bench-parallel.ts), time to first token with a reused
// ~1,000-token prefix (bench-prefix.ts), pull throughput against plain undici (bench-pull.ts) and
// the CLI's start-up (bench-cli.ts; BENCH_CLI=0 skips it, BENCH_CLI_ROUNDS sizes it).
// BENCH_PARALLEL_ROUNDS, BENCH_PREFIX_ROUNDS (default 2 each) and BENCH_PULL_ROUNDS (default 3)
// size them; BENCH_EXTRA=0 skips them. Last, remote models in front of llama.cpp's llama-server
// (bench-remote.ts: first-token overhead and decode vs the upstream called directly, 32
// concurrent streams, prefix affinity vs round robin on two replicas); BENCH_REMOTE=0 skips it.
// Then the metrics case (bench-metrics.ts: decode speed with and without a scraper of /metrics
// every second); BENCH_METRICS=0 skips it.
// Before those, the profile case (bench-profile.ts: prompt
// tok/s, time to first token and decode at three context depths, daemon vs direct) and the flash
// attention / KV cache matrix (bench-kv.ts); BENCH_PROFILE=0 / BENCH_KV=0 skip them. The run ends
// with one table of every figure against its target (bench-summary.ts).
// On a shared machine each side first waits up to BENCH_QUIET_WAIT_S (default 20) seconds for
// other processes to go quiet, and the CPU they used anyway is reported: engine threads that spin
// on every core make any other load show up as a large, random slowdown.
import { mkdir, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { childPids, createModelFromFile, REPO, startDaemon, type TestDaemon } from "../test/helpers/daemon.js";
import { makeTestModel } from "./make-test-model.js";
import { runDirect } from "./bench-child.js";
import { benchKv, type KvBench } from "./bench-kv.js";
import { benchParallel, type ParallelBench } from "./bench-parallel.js";
import { benchPrefix, type PrefixBench } from "./bench-prefix.js";
import { benchProfile, type ProfileBench } from "./bench-profile.js";
import { benchCli, type CliBench } from "./bench-cli.js";
import { benchPull, type PullBench } from "./bench-pull.js";
import { benchMetrics, metricsReport, type MetricsBench } from "./bench-metrics.js";
import { benchRemote, type RemoteBench } from "./bench-remote.js";
import { printSuite, suiteRows } from "./bench-summary.js";
import { nowMs, BENCH_SAMPLING, cpuMs, cpuSnapshot, foreignCores, median, ollamaOptions, pickQuiet, promptFor, QUIET_CORES, readRssMiB, waitForQuiet, type BenchPlan, type DecodeRun, type SideResult, type TtftRun } from "./bench-plan.js";
import { readNdjsonLines } from "./bench-stream.js";
import { PAIR_PROMPT_TOKENS, ttftPairs, type TtftPairs } from "./bench-ttft-pairs.js";

const MODEL_NAME = "bench-1b:q4_0";
/** Issue 7's acceptance figures (reported, never enforced). */
const TARGETS = { decodeRatio: 0.98, ttftOverheadMs: 5, idleRssMiB: 100 };


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Daemon side

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

interface Line {
  t: number;
  obj: Record<string, unknown>;
}

interface Streamed {
  tSent: number;
  lines: Line[];
}

let lastResponseEnd = 0;

/** POSTs JSON with node:http (least client overhead) and timestamps every NDJSON line on arrival.
 *  A request on a reused keep-alive socket that the server closed before answering is retried once
 *  on a new connection (the usual keep-alive race); the retry's timing is the one reported. */
async function postNdjson(base: string, route: string, body: unknown): Promise<Streamed> {
  try {
    return await postNdjsonOnce(base, route, body);
  } catch (err) {
    if (!(err as { retry?: boolean }).retry) throw err;
    console.log(`  (${(err as Error).message}; retried on a new connection)`);
    return postNdjsonOnce(base, route, body);
  }
}

function postNdjsonOnce(base: string, route: string, body: unknown): Promise<Streamed> {
  const url = new URL(route, base);
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const lines: Line[] = [];
    let tSent = 0;
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { "Content-Type": "application/json", "Content-Length": data.length },
      },
      (res) => {
        const onLine = (line: string, t: number) => lines.push({ t, obj: JSON.parse(line) as Record<string, unknown> });
        readNdjsonLines(res, onLine, (t) => {
          lastResponseEnd = t;
          if (res.statusCode !== 200) reject(new Error(`${route}: HTTP ${res.statusCode} ${JSON.stringify(lines.map((l) => l.obj))}`));
          else resolve({ tSent, lines });
        });
        res.on("error", (err) => reject(new Error(`${route}: response broken after ${f1(nowMs() - tSent)} ms, ${lines.length} lines: ${err.message}`)));
      },
    );
    req.on("error", (err) => {
      const e = new Error(
        `${route}: ${err.message} after ${f1(nowMs() - tSent)} ms (${req.reusedSocket ? "reused" : "new"} connection, ` +
          `idle ${f1(tSent - lastResponseEnd)} ms before the request)`,
      ) as Error & { retry?: boolean };
      e.retry = req.reusedSocket && lines.length === 0;
      reject(e);
    });
    tSent = nowMs();
    req.end(data);
  });
}

async function daemonGenerate(d: TestDaemon, plan: BenchPlan, prompt: string, numPredict: number): Promise<Streamed> {
  const r = await postNdjson(d.url, "/api/generate", {
    model: MODEL_NAME,
    prompt,
    raw: true, // the prompt is the text the engine sees, exactly as on the direct side
    stream: true,
    keep_alive: "10m",
    options: ollamaOptions(plan, numPredict),
  });
  const err = r.lines.find((l) => typeof l.obj.error === "string");
  if (err) throw new Error(`/api/generate: ${String(err.obj.error)}`);
  if (!r.lines.at(-1)?.obj.done) throw new Error("/api/generate: stream ended without a final chunk");
  return r;
}

/** Request written → first non-empty line, and that minus the runner's own prompt_eval_duration. */
function firstTokenOf(r: Streamed): { ms: number; pathMs: number; promptTokens: number } {
  const first = r.lines.find((l) => typeof l.obj.response === "string" && l.obj.response !== "");
  const final = r.lines.at(-1)!;
  const ms = (first?.t ?? final.t) - r.tSent;
  return { ms, pathMs: ms - Number(final.obj.prompt_eval_duration) / 1e6, promptTokens: Number(final.obj.prompt_eval_count) };
}

/** The first-token pairs with the daemon's model loaded (and unloaded again afterwards). */
async function firstTokenPairs(d: TestDaemon, plan: BenchPlan, count: number): Promise<TtftPairs> {
  await daemonGenerate(d, plan, "", 0);
  await daemonGenerate(d, plan, plan.warmup.prompt, plan.warmup.tokens);
  const runnerPid = (await childPids(d.proc.pid!))[0];
  const own = [d.proc.pid!, ...(runnerPid ? [runnerPid] : [])];
  await waitForQuiet(["self", ...own], plan.quietWaitMs);
  try {
    return await ttftPairs(plan, count, async (prompt) => firstTokenOf(await daemonGenerate(d, plan, prompt, 1)), own);
  } finally {
    await postNdjson(d.url, "/api/generate", { model: MODEL_NAME, prompt: "", keep_alive: 0, options: ollamaOptions(plan, 0) });
  }
}

function decodeRunOf(r: Streamed, cpuMsPerToken: Record<string, number>, foreign: number): DecodeRun {
  const final = r.lines.at(-1)!;
  const textLines = r.lines.filter((l) => typeof l.obj.response === "string" && l.obj.response !== "");
  const n = Number(final.obj.eval_count);
  const evalNs = Number(final.obj.eval_duration);
  const first = textLines[0]?.t ?? final.t;
  return {
    promptTokens: Number(final.obj.prompt_eval_count),
    tokens: n,
    doneReason: String(final.obj.done_reason),
    statsTokPerS: n / (evalNs / 1e9),
    wallTokPerS: (n - 1) / ((final.t - first) / 1000),
    chunks: textLines.length,
    text: textLines.map((l) => l.obj.response as string).join(""),
    cpuMsPerToken,
    foreignCores: foreign,
  };
}

interface DaemonRound extends SideResult {
  rssAfterUnloadMiB: number | null;
  runnerExitedMs: number | null;
}

/** One round on the daemon: load, warm up, measure, unload (keep_alive 0) and wait for the runner to exit. */
async function runDaemonRound(d: TestDaemon, plan: BenchPlan): Promise<DaemonRound> {
  const pid = d.proc.pid!;
  const tLoad = nowMs();
  await daemonGenerate(d, plan, "", 0); // empty prompt: load only
  const loadMs = nowMs() - tLoad;
  const runnerPid = (await childPids(pid))[0];

  await daemonGenerate(d, plan, plan.warmup.prompt, plan.warmup.tokens);

  const own: Array<number | "self"> = ["self", pid, ...(runnerPid ? [runnerPid] : [])];
  const quietWaitedMs = await waitForQuiet(own, plan.quietWaitMs);
  const cpu0 = await cpuSnapshot(own);
  const decode: DecodeRun[] = [];
  for (let i = 0; i < plan.decode.runs; i++) {
    const cpu = async () => ({
      daemon: await cpuMs(pid, "all"),
      runnerMain: runnerPid ? await cpuMs(runnerPid, "main") : NaN,
      client: ((u) => (u.user + u.system) / 1000)(process.cpuUsage()),
    });
    const s0 = await cpuSnapshot(own);
    const c0 = await cpu();
    const r = await daemonGenerate(d, plan, plan.decode.prompt, plan.decode.tokens);
    const c1 = await cpu();
    const s1 = await cpuSnapshot(own);
    const n = Number(r.lines.at(-1)!.obj.eval_count) || 1;
    decode.push(
      decodeRunOf(r, {
        daemon: (c1.daemon - c0.daemon) / n,
        runnerMain: (c1.runnerMain - c0.runnerMain) / n,
        client: (c1.client - c0.client) / n,
      }, foreignCores(s0, s1)),
    );
  }

  const ttft: TtftRun[] = [];
  for (const prompt of plan.ttft.prompts) {
    const s0 = await cpuSnapshot(own);
    const r = await daemonGenerate(d, plan, prompt, plan.ttft.tokens);
    const s1 = await cpuSnapshot(own);
    ttft.push({ ...firstTokenOf(r), foreignCores: foreignCores(s0, s1) });
  }
  const cpu1 = await cpuSnapshot(own);
  const modelRssMiB = runnerPid ? await readRssMiB(runnerPid) : null;

  const tUnload = nowMs();
  await postNdjson(d.url, "/api/generate", { model: MODEL_NAME, prompt: "", keep_alive: 0, options: ollamaOptions(plan, 0) });
  let runnerExitedMs: number | null = null;
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    if ((await childPids(pid)).length === 0) {
      runnerExitedMs = nowMs() - tUnload;
      break;
    }
    await sleep(50);
  }
  await sleep(500);
  const rssAfterUnloadMiB = await readRssMiB(pid);
  return {
    decode,
    ttft,
    loadMs,
    modelRssMiB,
    foreignCores: foreignCores(cpu0, cpu1),
    quietWaitedMs,
    rssAfterUnloadMiB,
    runnerExitedMs,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

const f1 = (x: number | null | undefined) => (x == null || !Number.isFinite(x) ? "-" : x.toFixed(1));
const f2 = (x: number | null | undefined) => (x == null || !Number.isFinite(x) ? "-" : x.toFixed(2));

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("   ")).join("\n");
}

interface Summary {
  decodeRatio: number;
  decodeStatsRatio: number;
  daemonDecodeTokPerS: number;
  directDecodeTokPerS: number;
  daemonTtftMs: number;
  directTtftMs: number;
  /** Median of (daemon − direct) over back-to-back pairs on the same short prompt (bench-ttft-pairs.ts). */
  ttftOverheadMs: number;
  /** Median of (daemon − direct) over the rounds' runs on the same ~32-token prompt (tens of seconds apart). */
  ttftOverheadRoundPairsMs: number;
  ttftPairs: TtftPairs;
  /** Difference of the two medians. */
  ttftOverheadUnpairedMs: number;
  daemonRssStartMiB: number | null;
  daemonRssAfterUnloadMiB: number | null;
  daemonIdleRssMiB: number;
  sameText: boolean;
  foreignCoresMax: number;
  /** Whether the medians could be taken over undisturbed runs only. */
  undisturbed: { decode: boolean; firstToken: boolean };
  firstTokenPathMs: number;
  addedCpuMsPerToken?: number;
  estimatedDecodeRatioFromCpu?: number;
}

function merge(rounds: SideResult[]): SideResult {
  return {
    decode: rounds.flatMap((r) => r.decode),
    ttft: rounds.flatMap((r) => r.ttft),
    loadMs: median(rounds.map((r) => r.loadMs)),
    modelRssMiB: rounds.at(-1)?.modelRssMiB ?? null,
    foreignCores: Math.max(...rounds.map((r) => r.foreignCores)),
    quietWaitedMs: rounds.reduce((a, r) => a + r.quietWaitedMs, 0),
  };
}

async function main(): Promise<void> {
  const tStart = nowMs();
  const threads = os.availableParallelism();
  const modelPath = await makeTestModel({ shape: "1b", type: "Q4_0", seed: 1 });
  // BENCH_ROUNDS / BENCH_TOKENS shorten a run for a smoke check; the defaults are the benchmark.
  const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS) || 3);
  const TOKENS = Math.max(8, Number(process.env.BENCH_TOKENS) || 128);
  const TTFT_PER_ROUND = 5;
  const PAIRS = Math.max(2, Number(process.env.BENCH_TTFT_PAIRS) || 24);
  const DECODE_PER_ROUND = 2;
  const QUIET_WAIT_MS = Math.max(0, Number(process.env.BENCH_QUIET_WAIT_S ?? 20) * 1000);
  // Round r runs the same plan on both sides; the ttft prompts are new in every round.
  const plans: BenchPlan[] = Array.from({ length: ROUNDS }, (_, r) => ({
    modelPath,
    quietWaitMs: QUIET_WAIT_MS,
    threads,
    numCtx: 4096,
    numBatch: 512,
    sampling: BENCH_SAMPLING,
    warmup: { prompt: promptFor(40), tokens: 16 },
    decode: { prompt: promptFor(30), tokens: TOKENS, runs: DECODE_PER_ROUND },
    ttft: { prompts: Array.from({ length: TTFT_PER_ROUND }, (_, i) => promptFor(r * TTFT_PER_ROUND + i)), tokens: 4 },
  }));
  const p0 = plans[0]!;
  console.log(
    `model ${path.relative(REPO, modelPath)}, ${threads} threads, ctx ${p0.numCtx}, batch ${p0.numBatch}, seed ${p0.sampling.seed}, ` +
      `temperature ${p0.sampling.temperature}, top_k ${p0.sampling.topK}, top_p ${p0.sampling.topP}, min_p ${p0.sampling.minP}, no repeat penalty`,
  );
  console.log(
    `${ROUNDS} rounds, alternating which side goes first; each side loads, warms up (${p0.warmup.tokens} tokens), decodes ` +
      `${p0.decode.tokens} tokens ${DECODE_PER_ROUND} times and times ${TTFT_PER_ROUND} first tokens, then unloads`,
  );

  const daemonEnv = { OLLAMA_NUM_PARALLEL: "1", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m" };
  let d: TestDaemon | undefined;
  /** A daemon with the model created in it; a new one if the last one died (something outside killed it). */
  const daemonUp = async (): Promise<TestDaemon> => {
    if (d && d.proc.exitCode === null && d.proc.signalCode === null) return d;
    if (d) {
      console.log(`  daemon ${d.proc.pid} died (${d.proc.signalCode ?? d.proc.exitCode}); starting another`);
      await d.stop().catch(() => undefined);
    }
    const fresh = await startDaemon(daemonEnv);
    d = fresh;
    await sleep(1000); // let start-up settle before reading RSS
    const rss = await readRssMiB(fresh.proc.pid!);
    const created = await createModelFromFile(fresh.url, MODEL_NAME, modelPath);
    if (!created.ok) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    await created.text();
    if (rssStartMiB === null) {
      rssStartMiB = rss;
      rssAfterCreateMiB = await readRssMiB(fresh.proc.pid!);
    }
    return fresh;
  };
  const daemonRounds: DaemonRound[] = [];
  const directRounds: SideResult[] = [];
  let pairs: TtftPairs | undefined;
  let rssStartMiB: number | null = null;
  let rssAfterCreateMiB: number | null = null;
  let rssEndMiB: number | null = null;
  const restarts: string[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const plan = plans[r]!;
      const daemonFirst = r % 2 === 0;
      for (const side of daemonFirst ? ["daemon", "direct"] : ["direct", "daemon"]) {
        const t = nowMs();
        if (side === "daemon") {
          for (let attempt = 1; ; attempt++) {
            const dd = await daemonUp();
            try {
              daemonRounds.push(await runDaemonRound(dd, plan));
              break;
            } catch (err) {
              // Retry the round only when the daemon itself went away under us.
              await sleep(200);
              const gone = dd.proc.exitCode !== null || dd.proc.signalCode !== null || /received SIG/.test(dd.logs());
              if (!gone || attempt >= 2) throw err;
              const why = `round ${r + 1}: daemon stopped by a signal from outside the bench (${(err as Error).message})`;
              restarts.push(why);
              console.log(`  ${why}; retrying the round`);
              await dd.stop().catch(() => undefined);
            }
          }
        } else directRounds.push(await runDirect<SideResult>({ job: "side", plan }));
        const res = side === "daemon" ? daemonRounds.at(-1)! : directRounds.at(-1)!;
        console.log(
          `  round ${r + 1} ${side.padEnd(6)} ${res.decode.map((x) => f1(x.wallTokPerS)).join("/")} tok/s, first token ` +
            `${res.ttft.map((x) => f1(x.ms)).join("/")} ms, other processes ${f2(res.foreignCores)} cores` +
            `${res.quietWaitedMs >= 2000 ? `, waited ${(res.quietWaitedMs / 1000).toFixed(0)} s for quiet` : ""} (${((nowMs() - t) / 1000).toFixed(1)} s)`,
        );
      }
    }
    // The daemon has sat without a model while the last direct side ran: its settled idle size.
    if (d) rssEndMiB = await readRssMiB(d.proc.pid!);
    pairs = await firstTokenPairs(await daemonUp(), plans[0]!, PAIRS);
    console.log(
      `  first-token pairs: ${pairs.pairs.length} prompts of ${PAIR_PROMPT_TOKENS} tokens, daemon ${f1(pairs.daemonMs)} ms, direct ${f1(pairs.directMs)} ms (medians), ` +
        `other processes ${f2(pairs.foreignCores)} cores`,
    );
  } catch (err) {
    if (d) {
      const state = d.proc.exitCode !== null || d.proc.signalCode !== null ? `exited (${d.proc.signalCode ?? d.proc.exitCode})` : "running";
      process.stderr.write(`--- daemon ${d.proc.pid} ${state}; log (tail) ---\n${d.logs().slice(-4000)}\n`);
    }
    throw err;
  } finally {
    agent.destroy();
    await d?.stop();
  }

  const daemon = merge(daemonRounds);
  const direct = merge(directRounds);
  // Medians over the undisturbed runs when both sides have some; otherwise over all of them.
  const dec = pickQuiet(daemon.decode, direct.decode);
  const tt = pickQuiet(daemon.ttft, direct.ttft);
  const dWall = median(dec.daemon.map((x) => x.wallTokPerS));
  const xWall = median(dec.direct.map((x) => x.wallTokPerS));
  const dStats = median(dec.daemon.map((x) => x.statsTokPerS));
  const xStats = median(dec.direct.map((x) => x.statsTokPerS));
  const dTtft = median(tt.daemon.map((x) => x.ms));
  const xTtft = median(tt.direct.map((x) => x.ms));
  // First-token overhead from pairs of runs on the same prompt (prompt lengths differ by a few
  // tokens, each worth ~10 ms of prompt evaluation), undisturbed on both sides when there are such.
  const allPairs = daemon.ttft.map((x, i) => ({ daemon: x, direct: direct.ttft[i]! })).filter((p) => p.direct !== undefined);
  const quietPairs = allPairs.filter((p) => p.daemon.foreignCores < QUIET_CORES && p.direct.foreignCores < QUIET_CORES);
  const roundPairs = quietPairs.length > 0 ? quietPairs : allPairs;
  const roundPairsOverheadMs = median(roundPairs.map((p) => p.daemon.ms - p.direct.ms));
  if (!pairs) throw new Error("the first-token pairs did not run");
  const ttftOverheadMs = pairs.overheadMs;
  const of = (p: { daemon: unknown[]; direct: unknown[]; quiet: boolean }) =>
    p.quiet ? `median of ${p.daemon.length}+${p.direct.length} undisturbed runs` : `median of all ${p.daemon.length}+${p.direct.length} runs`;
  // Idle RSS: right after start, and at the end of the run (no model since the last unload).
  const rssAfterUnloadMiB = rssEndMiB ?? Math.max(...daemonRounds.map((x) => x.rssAfterUnloadMiB ?? Infinity));
  const summary: Summary = {
    decodeRatio: dWall / xWall,
    decodeStatsRatio: dStats / xStats,
    daemonDecodeTokPerS: dWall,
    directDecodeTokPerS: xWall,
    daemonTtftMs: dTtft,
    directTtftMs: xTtft,
    ttftOverheadMs,
    ttftOverheadRoundPairsMs: roundPairsOverheadMs,
    ttftOverheadUnpairedMs: dTtft - xTtft,
    ttftPairs: pairs,
    daemonRssStartMiB: rssStartMiB,
    daemonRssAfterUnloadMiB: Number.isFinite(rssAfterUnloadMiB) ? rssAfterUnloadMiB : null,
    daemonIdleRssMiB: Math.max(rssStartMiB ?? Infinity, rssAfterUnloadMiB),
    sameText: daemon.decode.every((x, i) => x.text === direct.decode[i]?.text),
    foreignCoresMax: Math.max(daemon.foreignCores, direct.foreignCores),
    undisturbed: { decode: dec.quiet, firstToken: tt.quiet },
    firstTokenPathMs: NaN,
  };
  const cpuMed = (xs: DecodeRun[], k: string) => median(xs.map((x) => x.cpuMsPerToken[k] ?? NaN));
  const cpu = {
    daemon: cpuMed(dec.daemon, "daemon"),
    runnerMain: cpuMed(dec.daemon, "runnerMain"),
    client: cpuMed(dec.daemon, "client"),
    directMain: cpuMed(dec.direct, "main"),
  };
  // CPU the daemon path adds per token: the daemon process plus what the runner's JS thread does
  // beyond the direct consumer. With every core busy with engine threads, each ms of it delays
  // the token by about a ms, which gives an estimate that does not depend on other load.
  const addedCpuMs = cpu.daemon + cpu.client + Math.max(0, cpu.runnerMain - cpu.directMain);
  const bestDirectMs = 1000 / Math.max(...direct.decode.map((x) => x.wallTokPerS)); // least disturbed run
  const estimatedRatio = bestDirectMs / (bestDirectMs + addedCpuMs);
  summary.addedCpuMsPerToken = addedCpuMs;
  summary.estimatedDecodeRatioFromCpu = estimatedRatio;
  const produced = (s: SideResult) => s.decode.map((x) => `${x.tokens}${x.doneReason === "stop" ? " (eos)" : ""}`).join(" ");
  const pathMs = tt.daemon.map((x) => x.pathMs ?? NaN);
  summary.firstTokenPathMs = median(pathMs);

  const list = (xs: number[], f: (x: number) => string = f1) => xs.map(f).join(" ");
  const runs = <T extends { foreignCores: number }>(xs: T[], v: (x: T) => number) =>
    xs.map((x) => `${f1(v(x))}${x.foreignCores < QUIET_CORES ? "" : "*"}`).join(" ");
  console.log("");
  console.log(
    table([
      ["", "daemon (HTTP)", "direct", "daemon/direct"],
      [`decode tok/s, client wall (${of(dec)})`, f2(dWall), f2(xWall), f2(summary.decodeRatio)],
      ["decode tok/s, eval_count/eval_duration", f2(dStats), f2(xStats), f2(summary.decodeStatsRatio)],
      ["CPU ms/token, daemon process", f2(cpu.daemon), "", ""],
      ["CPU ms/token, JS thread beside the engine", f2(cpu.runnerMain), f2(cpu.directMain), ""],
      ["CPU ms/token, HTTP client (this bench)", f2(cpu.client), "", ""],
      [`first token ms (${of(tt)})`, f1(dTtft), f1(xTtft), f2(dTtft / xTtft)],
      ["load ms (median)", f1(daemon.loadMs), f1(direct.loadMs), ""],
      ["RSS with the model loaded, MiB", `${f1(daemon.modelRssMiB)} (runner)`, f1(direct.modelRssMiB), ""],
      ["other processes' CPU while measuring (worst round), cores", f2(daemon.foreignCores), f2(direct.foreignCores), ""],
    ]),
  );
  console.log("");
  console.log(`(* = disturbed: other processes used ${QUIET_CORES} cores or more during that run)`);
  console.log(`decode runs, tok/s (client wall):  daemon ${runs(daemon.decode, (x) => x.wallTokPerS)}   direct ${runs(direct.decode, (x) => x.wallTokPerS)}`);
  console.log(`tokens produced / text chunks:     daemon ${produced(daemon)} / ${daemon.decode.map((x) => x.chunks).join(" ")}   direct ${produced(direct)}`);
  console.log(`first token runs, ms:              daemon ${runs(daemon.ttft, (x) => x.ms)}`);
  console.log(`                                   direct ${runs(direct.ttft, (x) => x.ms)}`);
  console.log(`prompt tokens of those runs:       ${daemon.ttft.map((x) => x.promptTokens).join(" ")} (direct ${direct.ttft.map((x) => x.promptTokens).join(" ")})`);
  console.log(`same generated text on both sides: ${summary.sameText ? "yes" : "NO"}`);
  console.log(
    `daemon RSS, MiB:                   start ${f1(rssStartMiB)}, after creating the model ${f1(rssAfterCreateMiB)}, ` +
      `0.5 s after each unload ${list(daemonRounds.map((x) => x.rssAfterUnloadMiB ?? NaN))}, at the end ${f1(rssEndMiB)}`,
  );
  console.log("");
  console.log(
    `first-token overhead: median over ${pairs.pairs.length} back-to-back pairs on ${PAIR_PROMPT_TOKENS}-token prompts ${f1(ttftOverheadMs)} ms ` +
      `(${list(pairs.pairs.map((p) => p.daemonMs - p.directMs))}); the daemon's path in those pairs ${f1(pairs.pathMs)} ms` +
      `${pairs.undisturbed ? "" : ` (DISTURBED: other processes ${f2(pairs.foreignCores)} cores)`}`,
  );
  console.log(
    `  in the rounds (~32-token prompts, the two runs of a pair tens of seconds apart): median over ${roundPairs.length} pairs ` +
      `${f1(roundPairsOverheadMs)} ms (${list(roundPairs.map((p) => p.daemon.ms - p.direct.ms))}); difference of the medians ${f1(dTtft - xTtft)} ms`,
  );
  console.log(
    `first token through the daemon minus the runner's own prompt_eval_duration (HTTP, routing, scheduler, IPC both ways), ms: ` +
      `${list(pathMs)}, median ${f1(median(pathMs))}${tt.quiet ? " (undisturbed runs)" : ""}`,
  );
  console.log(
    `CPU the daemon path adds per token: ${f2(addedCpuMs)} ms (daemon process ${f2(cpu.daemon)} + HTTP client ${f2(cpu.client)} + ` +
      `runner JS thread beyond the direct one ${f2(Math.max(0, cpu.runnerMain - cpu.directMain))}); at ${f1(bestDirectMs)} ms/token (best direct run) that predicts a decode ratio of ${f2(estimatedRatio)}`,
  );
  const exits = daemonRounds.map((x) => x.runnerExitedMs);
  console.log(`runner process gone after keep_alive 0, ms: ${exits.map((x) => (x == null ? "never" : f1(x))).join(" ")}`);
  if (!dec.quiet || !tt.quiet) {
    console.log(
      `WARNING: no undisturbed ${!dec.quiet ? "decode" : "first-token"} runs on one side (other processes used up to ` +
        `${f2(summary.foreignCoresMax)} cores); with ${threads} spinning engine threads on ${threads} cores the ratios are unreliable. ` +
        `Run again on an idle machine.`,
    );
  }
  console.log("");
  const verdict = (ok: boolean) => (ok ? "PASS" : "MISS");
  const lines = [
    [`decode ratio (daemon/direct): ${f2(summary.decodeRatio)}`, `target >= ${TARGETS.decodeRatio}`, verdict(summary.decodeRatio >= TARGETS.decodeRatio)],
    [`first-token overhead: ${f1(summary.ttftOverheadMs)} ms`, `target <= ${TARGETS.ttftOverheadMs} ms`, verdict(summary.ttftOverheadMs <= TARGETS.ttftOverheadMs)],
    [
      `daemon RSS idle: ${Number.isFinite(summary.daemonIdleRssMiB) ? Math.round(summary.daemonIdleRssMiB) : "-"} MB`,
      `target <= ${TARGETS.idleRssMiB} MB`,
      verdict(summary.daemonIdleRssMiB <= TARGETS.idleRssMiB),
    ],
  ];
  const w = Math.max(...lines.map((l) => l[0]!.length));
  for (const l of lines) console.log(`${l[0]!.padEnd(w)}   ${l[1]!.padEnd(18)} ${l[2]}`);

  // ---- the other cases: profile, FA/KV matrix, parallel streams, prefix reuse, pull throughput ----
  const extras = await runExtras(modelPath, QUIET_WAIT_MS);

  const suite = suiteRows({
    main: summary,
    targets: TARGETS,
    profile: extras.profile,
    kv: extras.kv,
    parallel: extras.parallel,
    prefix: extras.prefix,
    pull: extras.pull,
    pullTarget: PULL_TARGET,
  });
  const busy = Math.max(summary.foreignCoresMax, ...[extras.profile, extras.kv, extras.parallel].map((x) => x?.foreignCoresMax ?? 0));
  console.log(
    `\nsummary (${busy >= QUIET_CORES ? `other processes used up to ${f2(busy)} cores during some runs: figures from disturbed runs are unreliable, see the cases above` : "no run disturbed by other processes"}):`,
  );
  printSuite(suite, (line) => console.log(line));

  const totalSeconds = (nowMs() - tStart) / 1000;
  console.log(`\n(${totalSeconds.toFixed(1)} s)`);

  const out = path.join(REPO, ".cache", "bench-latest.json");
  await mkdir(path.dirname(out), { recursive: true });
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: threads,
    model: path.relative(REPO, modelPath),
    plans: plans.map((p) => ({ ...p, modelPath: path.relative(REPO, p.modelPath) })),
    summary,
    targets: TARGETS,
    pass: {
      decodeRatio: summary.decodeRatio >= TARGETS.decodeRatio,
      ttftOverhead: summary.ttftOverheadMs <= TARGETS.ttftOverheadMs,
      idleRss: summary.daemonIdleRssMiB <= TARGETS.idleRssMiB,
    },
    daemon: { rssStartMiB, rssAfterCreateMiB, rssEndMiB, restarts, rounds: daemonRounds },
    direct: { rounds: directRounds },
    parallel: extras.parallel,
    prefix: extras.prefix,
    pull: extras.pull,
    remote: extras.remote,
    metrics: extras.metrics,
    cli: extras.cli,
    profile: extras.profile,
    kv: extras.kv,
    suite,
    extraErrors: extras.errors,
    extraSeconds: extras.seconds,
    extraPass: {
      ttft256VsLlamaServer: extras.profile ? extras.profile.llamaServer.daemonOverLlamaServerDerived <= extras.profile.llamaServer.target : null,
      profileDecode: extras.profile ? Object.values(extras.profile.decodeTokPerS).every((x) => x.ratio >= TARGETS.decodeRatio) : null,
      profileSameText: extras.profile ? extras.profile.sameText : null,
      parallel4: extras.parallel ? extras.parallel.ratio4 >= extras.parallel.target4 : null,
      prefixIssue3: extras.prefix ? extras.prefix.ratio <= extras.prefix.targets.issue3 : null,
      prefixIssue7: extras.prefix ? extras.prefix.ratio <= extras.prefix.targets.issue7 : null,
      prefixOtherSlotIssue7: extras.prefix ? extras.prefix.otherSlotRatio <= extras.prefix.targets.issue7 : null,
      prefixAfterSwitchIssue7: extras.prefix ? extras.prefix.afterSwitchPromptRatio <= extras.prefix.targets.issue7 : null,
      pull: extras.pull ? extras.pull.ratio >= PULL_TARGET : null,
      metricsScrape: extras.metrics ? extras.metrics.ratio >= extras.metrics.target : null,
      remoteFirstToken: extras.remote ? extras.remote.firstTokenOverheadMs <= REMOTE_TARGETS.firstTokenMs : null,
      remoteDecode: extras.remote ? extras.remote.decodeRatio >= REMOTE_TARGETS.decodeRatio : null,
      remoteConcurrent: extras.remote ? extras.remote.concurrentErrors === 0 : null,
      remoteAffinity: extras.remote ? extras.remote.affinity.hitRate > extras.remote.roundRobin.hitRate && extras.remote.affinity.meanFirstMs < extras.remote.roundRobin.meanFirstMs : null,
      cliVersion: extras.cli ? extras.cli.pass.version : null,
      cliList: extras.cli ? extras.cli.pass.list : null,
      cliRun: extras.cli ? extras.cli.pass.run : null,
    },
    totalSeconds,
  };
  await writeFile(out, JSON.stringify(report, null, 2) + "\n");
  console.log(`wrote ${path.relative(REPO, out)}`);
}

const PULL_TARGET = 0.8;
/** Issue 14: a remote model vs its upstream called directly. */
const REMOTE_TARGETS = { firstTokenMs: 3, decodeRatio: 0.98 };

interface Extras {
  profile: ProfileBench | null;
  kv: KvBench | null;
  parallel: ParallelBench | null;
  prefix: PrefixBench | null;
  pull: PullBench | null;
  metrics: MetricsBench | null;
  remote: RemoteBench | null;
  cli: CliBench | null;
  /** A case that failed is reported here and does not stop the others. */
  errors: Record<string, string>;
  seconds: Record<string, number>;
}

/** Runs the other cases one after another (each with its own daemons, stopped before the next
 *  starts): the profile and FA/KV cases unless BENCH_PROFILE=0 / BENCH_KV=0, then the three extra
 *  cases unless BENCH_EXTRA=0 (BENCH_PARALLEL=0, BENCH_PULL=0 skip one); prints the extra cases'
 *  rows and verdicts, and returns every figure for the summary table and the JSON report. */
async function runExtras(modelPath: string, quietWaitMs: number): Promise<Extras> {
  const ex: Extras = { profile: null, kv: null, parallel: null, prefix: null, pull: null, remote: null, cli: null, metrics: null, errors: {}, seconds: {} };
  const skip = (knob: string) => process.env[knob] === "0";
  const log = (s: string) => console.log(s);
  const attempt = async <T>(name: string, f: () => Promise<T>): Promise<T | null> => {
    const t = nowMs();
    console.log(`\n${name}:`);
    try {
      return await f();
    } catch (err) {
      ex.errors[name] = err instanceof Error ? err.message : String(err);
      console.log(`  FAILED: ${ex.errors[name]}`);
      return null;
    } finally {
      ex.seconds[name] = (nowMs() - t) / 1000;
    }
  };
  if (!skip("BENCH_PROFILE")) ex.profile = await attempt("profile: prompt, first token and decode by context depth", () => benchProfile({ modelPath, log, quietWaitMs }));
  if (!skip("BENCH_KV")) ex.kv = await attempt("kv: flash attention and KV cache types", () => benchKv({ modelPath, log, quietWaitMs }));
  if (skip("BENCH_EXTRA")) return ex;
  if (!skip("BENCH_PARALLEL")) ex.parallel = await attempt("parallel streams (OLLAMA_NUM_PARALLEL=4)", () => benchParallel({ modelPath, log, quietWaitMs }));
  ex.prefix = await attempt("shared ~1,000-token prefix sent twice", () => benchPrefix({ modelPath, log, quietWaitMs }));
  if (!skip("BENCH_PULL")) ex.pull = await attempt("pull throughput", () => benchPull({ rounds: Math.max(1, Number(process.env.BENCH_PULL_ROUNDS) || 3), log }));
  if (!skip("BENCH_REMOTE")) ex.remote = await attempt("remote models (llama-server upstream)", () => benchRemote({ log }));
  if (!skip("BENCH_METRICS")) ex.metrics = await attempt("decode while /metrics is scraped every second", () => benchMetrics({ modelPath, log, quietWaitMs }));
  if (!skip("BENCH_CLI")) ex.cli = await attempt("CLI start-up (bench-cli.ts)", () => benchCli({ log }));

  const rows: string[][] = [["", "value", "", "other processes (cores, worst)"]];
  const p = ex.parallel;
  if (p) {
    for (const [i, l] of p.levels.entries()) {
      rows.push([`aggregate decode tok/s, ${l.streams} stream(s) × ${p.tokens} tokens`, f2(l.aggregateTokPerS), `runs ${l.rounds.map((x) => f1(x.aggregateTokPerS)).join(" ")}`, f2(Math.max(...l.rounds.map((x) => x.foreignCores)))]);
      const x = p.direct?.levels[i];
      if (x) rows.push([`  direct on node-llama-cpp (daemon/direct ${f2(p.daemonOverDirect[i])})`, f2(x.aggregateTokPerS), `runs ${x.rounds.map((y) => f1(y.aggregateTokPerS)).join(" ")}`, ""]);
    }
  }
  const q = ex.prefix;
  if (q) {
    rows.push([`first token ms, prefix new (${q.rounds[0]?.promptTokens[0] ?? "?"} prompt tokens)`, f1(q.firstMs), `runs ${q.rounds.map((x) => f1(x.firstMs)).join(" ")}`, f2(q.foreignCoresMax)]);
    rows.push(["first token ms, same prefix again", f1(q.secondMs), `runs ${q.rounds.map((x) => f1(x.secondMs)).join(" ")}`, ""]);
    rows.push(["first token ms, same prefix while another stream decodes", "", `runs ${q.rounds.map((x) => f1(x.whileBusyMs)).join(" ")}`, ""]);
    rows.push(["first token ms, same prefix in another slot (snapshot)", "", `runs ${q.rounds.map((x) => f1(x.otherSlotMs)).join(" ")}`, ""]);
    rows.push(["first token ms, after a model switch (load ms)", "", `runs ${q.rounds.map((x) => `${f1(x.afterSwitchMs)} (${f1(x.afterSwitchLoadMs)})`).join(" ")}`, ""]);
  }
  const u = ex.pull;
  if (u) {
    rows.push([`pull MB/s (${(u.bytes / 1e6).toFixed(0)} MB, median of ${u.rounds})`, f1(u.pullMBps), "", ""]);
    rows.push(["plain undici MB/s", f1(u.undiciMBps), "", ""]);
  }
  console.log("");
  if (rows.length > 1) console.log(table(rows));
  console.log("");
  const verdict = (ok: boolean) => (ok ? "PASS" : "MISS");
  const lines: string[][] = [];
  if (p) {
    lines.push([`parallel 2 streams / 1 stream: ${f2(p.ratio2)}`, "(reported)", ""]);
    lines.push([`parallel 4 streams / 1 stream: ${f2(p.ratio4)}`, `target >= ${p.target4} (issue 7)`, verdict(p.ratio4 >= p.target4)]);
  }
  if (q) {
    lines.push([`prefix reuse, 2nd/1st first token: ${q.ratio.toFixed(3)}`, `target <= ${q.targets.issue3} (issue 3)`, verdict(q.ratio <= q.targets.issue3)]);
    lines.push(["", `target <= ${q.targets.issue7} (issue 7)`, verdict(q.ratio <= q.targets.issue7)]);
  }
  if (u) lines.push([`pull / plain undici: ${f2(u.ratio)}`, `target >= ${PULL_TARGET}`, verdict(u.ratio >= PULL_TARGET)]);
  const rm = ex.remote;
  if (rm) {
    lines.push([`remote model first token - direct: ${f2(rm.firstTokenOverheadMs)} ms`, `target <= ${REMOTE_TARGETS.firstTokenMs} ms (issue 14)`, verdict(rm.firstTokenOverheadMs <= REMOTE_TARGETS.firstTokenMs)]);
    lines.push([`remote model decode / direct: ${f2(rm.decodeRatio)}`, `target >= ${REMOTE_TARGETS.decodeRatio} (issue 14)`, verdict(rm.decodeRatio >= REMOTE_TARGETS.decodeRatio)]);
    lines.push([`${rm.concurrent} concurrent remote streams: ${rm.concurrentErrors} errors`, "target 0 (issue 14)", verdict(rm.concurrentErrors === 0)]);
    lines.push([
      `affinity vs round robin: hit ${(rm.affinity.hitRate * 100).toFixed(0)} % vs ${(rm.roundRobin.hitRate * 100).toFixed(0)} %, first token ${f1(rm.affinity.meanFirstMs)} vs ${f1(rm.roundRobin.meanFirstMs)} ms`,
      "affinity better on both (issue 14)",
      verdict(rm.affinity.hitRate > rm.roundRobin.hitRate && rm.affinity.meanFirstMs < rm.roundRobin.meanFirstMs),
    ]);
  }
  if (ex.metrics) for (const line of metricsReport(ex.metrics)) console.log(line);
  for (const [name, msg] of Object.entries(ex.errors)) lines.push([`${name}: not measured`, msg.slice(0, 120), "FAIL"]);
  const w = Math.max(0, ...lines.map((l) => l[0]!.length));
  const w1 = Math.max(0, ...lines.map((l) => l[1]!.length));
  for (const l of lines) console.log(`${l[0]!.padEnd(w)}   ${l[1]!.padEnd(w1)} ${l[2]}`);
  const busy = Math.max(p?.foreignCoresMax ?? 0, q?.foreignCoresMax ?? 0, ex.metrics?.foreignCoresMax ?? 0, ex.profile?.foreignCoresMax ?? 0, ex.kv?.foreignCoresMax ?? 0);
  if (busy >= QUIET_CORES) console.log(`WARNING: other processes used up to ${f2(busy)} cores during the extra cases; their figures are disturbed.`);
  console.log(`the other cases took ${Object.entries(ex.seconds).map(([k, v]) => `${k.split(" ")[0]} ${v.toFixed(0)} s`).join(", ")}`);
  return ex;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  if (err instanceof Error && err.cause) console.error("cause:", err.cause);
  process.exit(1);
});
