// The remote backend's case of `npm run bench`. llama.cpp's own llama-server is the upstream
// (scripts/build-llama-server.sh), so what is measured is what ollamats adds in front of a real
// engine:
//   1. one replica, a remote model vs calling llama-server directly, alternating with a fresh
//      prompt each time: first-token overhead (target ≤ 3 ms) over one-token answers, once the
//      front is warm (and over its first 40 requests, reported beside), and streamed decode
//      rate (target ≥ 0.98) over 256-token answers (64 tokens at ~2,000 tok/s were ~30 ms of
//      stream, too short for a rate), and the front's own CPU per streamed token (from /proc:
//      what the proxy costs, whatever else the machine runs); then 32 concurrent streams through
//      the remote model (no error);
//   2. two replicas (each pinned to a core of its own), 8 multi-turn conversations (4 turns, run
//      concurrently, started 120 ms apart, 100–300 ms of think time between turns) through a
//      front with prefix affinity and through one with round robin, after one set to warm both
//      replicas, in A B B A order: llama-server's prompt-cache hit rate
//      (1 − prompt tokens evaluated / prompt tokens sent, from its /metrics) and mean first token.
//
//   tsx scripts/bench-remote.ts     (BENCH_REMOTE_SHAPE=tiny|small|1b, default small)
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import { makeTestModel } from "./make-test-model.js";
import { parseCpuList } from "../src/backends/llamacpp/cpu-limits.js";
import { cpuUs } from "./profile-remote.js";
import { startDaemon, type TestDaemon } from "../test/helpers/daemon.js";
import { llamaMetric, startLlamaServer, type LlamaServer } from "../test/helpers/llama-server.js";
import type { ModelShape } from "./make-test-model.js";

export interface RemoteBench {
  shape: string;
  rounds: number;
  directFirstMs: number;
  remoteFirstMs: number;
  /** Median of the one-token pairs' differences, once the front is warm. */
  firstTokenOverheadMs: number;
  /** The same over the first pairs after the front started (V8 has not optimised it yet). */
  coldFirstTokenOverheadMs: number;
  firstPairs: number;
  directDecodeTokPerS: number;
  remoteDecodeTokPerS: number;
  decodeRatio: number;
  /** Tokens per decode round. */
  decodeTokens: number;
  /** The front daemon's CPU (user + system) over the remote rounds, per token streamed. */
  frontCpuUsPerToken: number;
  concurrent: number;
  concurrentErrors: number;
  /** Each the mean of two sets of conversations (A B B A order). */
  affinity: Conversations;
  roundRobin: Conversations;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const nowMs = () => performance.now();

interface Timed {
  firstMs: number;
  /** generated tokens after the first, per second between the first and the last piece; the
   *  token count is the engine's own (usage / eval_count), so pieces that carry several tokens
   *  (a front that coalesces) are not undercounted */
  decodeTokPerS: number;
  promptTokens: number;
  text: string;
  /** Tokens generated, as the engine counts them. */
  tokens: number;
}

interface Piece {
  text?: string;
  promptTokens?: number;
  tokens?: number;
}

/** Reads a streamed body line by line; `piece` says what a line carries. */
async function timeStream(res: Response, t0: number, piece: (line: string) => Piece): Promise<Timed> {
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = "";
  let first = 0;
  let last = 0;
  let pieces = 0;
  let tokens = 0;
  let promptTokens = 0;
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    rest += value;
    let i: number;
    while ((i = rest.indexOf("\n")) !== -1) {
      const line = rest.slice(0, i).trim();
      rest = rest.slice(i + 1);
      if (!line) continue;
      if (line.includes('"error"')) throw new Error(line);
      const p = piece(line);
      if (p.promptTokens) promptTokens = p.promptTokens;
      if (p.tokens) tokens = p.tokens;
      if (!p.text) continue;
      text += p.text;
      const t = nowMs();
      if (pieces === 0) first = t;
      last = t;
      pieces++;
    }
  }
  const n = tokens || pieces;
  return { firstMs: first - t0, decodeTokPerS: n > 1 && last > first ? (n - 1) / ((last - first) / 1000) : NaN, promptTokens, text, tokens: n };
}

function direct(server: LlamaServer, messages: unknown[], maxTokens: number): Promise<Timed> {
  const t0 = nowMs();
  return fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } }),
  }).then((r) =>
    timeStream(r, t0, (line) => {
      if (!line.startsWith("data:") || line.includes("[DONE]")) return {};
      const j = JSON.parse(line.slice(5)) as { choices?: Array<{ delta?: { content?: string } }>; usage?: { prompt_tokens?: number; completion_tokens?: number } };
      return { text: j.choices?.[0]?.delta?.content ?? "", promptTokens: j.usage?.prompt_tokens, tokens: j.usage?.completion_tokens };
    }),
  );
}

function viaRemote(d: TestDaemon, model: string, messages: unknown[], maxTokens: number): Promise<Timed> {
  const t0 = nowMs();
  return fetch(`${d.url}/api/chat`, {
    method: "POST",
    body: JSON.stringify({ model, messages, options: { num_predict: maxTokens, temperature: 0 }, stream: true }),
  }).then((r) =>
    timeStream(r, t0, (line) => {
      const j = JSON.parse(line) as { message?: { content?: string }; done?: boolean; prompt_eval_count?: number; eval_count?: number };
      return { text: j.message?.content ?? "", ...(j.done ? { promptTokens: j.prompt_eval_count, tokens: j.eval_count } : {}) };
    }),
  );
}

async function createRemote(d: TestDaemon, name: string, hosts: string[]): Promise<void> {
  const r = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ model: name, from: "m", remote_host: hosts.join(","), stream: false }) });
  if (r.status !== 200) throw new Error(`create ${name}: ${await r.text()}`);
}

/** The cores this process may run on, as the kernel lists them and as numbers. */
function allowedCpus(): { list: string; cpus: number[] } {
  const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? "";
  return { list, cpus: (list && parseCpuList(list)) || [] };
}

/** Pins a process and every thread of it to the cores listed (util-linux's taskset). */
const taskset = (pid: number, list: string) => execFileSync("taskset", ["-a", "-p", "-c", list, String(pid)], { stdio: "ignore" });

/** Pins the engine (every thread) to the first allowed core and the others to the rest, as if
 *  the engine ran on its own machine; returns what puts this process back, or undefined where
 *  there is one core or no taskset. */
function pinCores(engine: number | undefined, others: Array<number | undefined>): (() => void) | undefined {
  const { list, cpus } = allowedCpus();
  if (cpus.length < 2 || engine === undefined) return undefined;
  try {
    taskset(engine, String(cpus[0]));
    for (const pid of others) if (pid !== undefined) taskset(pid, cpus.slice(1).join(","));
  } catch {
    return undefined;
  }
  return () => taskset(process.pid, list);
}

/** Pins each engine (every thread) to a core of its own, in the order allowed; returns what lets
 *  them run on every allowed core again, or undefined where there are fewer cores than engines
 *  or no taskset. */
function pinEach(pids: Array<number | undefined>): (() => void) | undefined {
  const { list, cpus } = allowedCpus();
  if (cpus.length < pids.length || pids.some((p) => p === undefined)) return undefined;
  try {
    pids.forEach((pid, i) => taskset(pid as number, String(cpus[i])));
  } catch {
    return undefined;
  }
  return () => {
    for (const pid of pids) {
      try {
        taskset(pid as number, list);
      } catch {
        // it has ended
      }
    }
  };
}

/** Both sides of round i, one after the other; the side that went second goes first next round. */
async function bothSides<T>(i: number, directSide: () => Promise<T>, remoteSide: () => Promise<T>): Promise<{ direct: T; remote: T }> {
  if (i % 2 === 0) {
    const d = await directSide();
    return { direct: d, remote: await remoteSide() };
  }
  const r = await remoteSide();
  return { direct: await directSide(), remote: r };
}

const words = (seed: number, n: number) => Array.from({ length: n }, (_, i) => `w${(seed * 7919 + i * 104729) % 9973}`).join(" ");

/** What one set of conversations measured. */
interface Conversations {
  hitRate: number;
  meanFirstMs: number;
}

/** 8 conversations × 4 turns, concurrently, streamed: each turn's first token as the client sees
 *  it (queueing, routing and prompt evaluation together), and the replicas' prompt-cache hits.
 *  Users do not type in lockstep: each conversation starts 120 ms after the one before and its
 *  user thinks 100–300 ms (fixed per conversation and turn, the same for every side) before the
 *  next turn. Started all at once with no pause, the conversations of one replica stayed in step
 *  turn after turn and each turn waited for the batch of all four, whatever the cache held. */
async function conversations(d: TestDaemon, model: string, servers: LlamaServer[], tag: string): Promise<Conversations> {
  const before = await Promise.all(servers.map((s) => llamaMetric(s.url, "prompt_tokens_total")));
  const firsts: number[] = [];
  let sent = 0;
  await Promise.all(
    Array.from({ length: 8 }, async (_, c) => {
      const messages: Array<{ role: string; content: string }> = [{ role: "system", content: `${tag} conversation ${c}. ${words(c, 300)}` }];
      await sleep(c * 120);
      for (let turn = 0; turn < 4; turn++) {
        if (turn > 0) await sleep(100 + ((c * 37 + turn * 53) % 201));
        messages.push({ role: "user", content: `${words(c * 10 + turn, 40)}?` });
        const t = await viaRemote(d, model, messages, 16);
        firsts.push(t.firstMs);
        sent += t.promptTokens;
        messages.push({ role: "assistant", content: t.text });
      }
    }),
  );
  const after = await Promise.all(servers.map((s) => llamaMetric(s.url, "prompt_tokens_total")));
  const evaluated = after.reduce((a, x, i) => a + x - (before[i] ?? 0), 0);
  return { hitRate: 1 - evaluated / Math.max(1, sent), meanFirstMs: mean(firsts) };
}

export async function benchRemote(opts: { log: (s: string) => void; rounds?: number; shape?: ModelShape; firstPairs?: number; warmup?: number }): Promise<RemoteBench> {
  const { log } = opts;
  const shape = opts.shape ?? ((process.env.BENCH_REMOTE_SHAPE as ModelShape | undefined) || "small");
  const rounds = opts.rounds ?? 24;
  const model = await makeTestModel({ shape, type: "Q4_0", seed: 1 });
  // One core for the engine, the others for the front and the client: a remote engine runs on its
  // own machine, and sharing its cores with the front would measure CPU contention (the front's
  // per-token work taken from the engine), not what the front adds to a request. The engine has
  // one thread, and the single-replica rows pin it to a core of its own (pinCores).
  const threads = 1;
  const servers: LlamaServer[] = [];
  const daemons: TestDaemon[] = [];
  try {
    servers.push(await startLlamaServer(model, { alias: "m", slots: 4, ctx: 4096, threads }));
    const front = await startDaemon({ OLLAMA_REMOTES: "127.0.0.1" });
    daemons.push(front);
    await createRemote(front, "one", [`${servers[0]!.url}/v1`]);
    const unpin = pinCores(servers[0]!.proc.pid, [front.proc.pid, process.pid]);
    log(unpin ? "  the engine pinned to a core of its own; the front and this client to the others" : "  not pinned (one core, or no taskset): the engine shares its core with the front and the client");
    await viaRemote(front, "one", [{ role: "user", content: "warm up" }], 4);
    await direct(servers[0]!, [{ role: "user", content: "warm up" }], 4);

    // First token: one-token answers in alternating pairs, so the figure is the front's overhead
    // and not the engine's prompt-time jitter (±20 ms per prompt here, beside a few ms measured).
    // A daemon serves for days: the figure is taken once its request path is optimised (V8 tiers
    // code up after a few hundred calls). The first pairs after its start are reported beside it.
    const pairs = async (n: number, tag: string) => {
      const out: Array<{ direct: number; remote: number }> = [];
      for (let i = 0; i < n; i++) {
        const msgs = (side: string) => [{ role: "user", content: `${tag} ${side} ${i}: ${words(i + (side === "d" ? 5000 : 7000), 6)}` }];
        const t = await bothSides(i, () => direct(servers[0]!, msgs("d"), 1), () => viaRemote(front, "one", msgs("r"), 1));
        out.push({ direct: t.direct.firstMs, remote: t.remote.firstMs });
      }
      return out;
    };
    const overhead = (ps: Array<{ direct: number; remote: number }>) => median(ps.map((p) => p.remote - p.direct));
    const firstPairs = opts.firstPairs ?? 200;
    const warmup = opts.warmup ?? 300;
    const cold = await pairs(Math.min(40, firstPairs), "cold");
    await pairs(warmup, "warm-up");
    const warm = await pairs(firstPairs, "pair");
    const directFirstMs = median(warm.map((p) => p.direct));
    const remoteFirstMs = median(warm.map((p) => p.remote));
    log(`  first token ms (one-token answers, ${warm.length} pairs after ${warmup} to warm up): direct ${directFirstMs.toFixed(2)}, remote ${remoteFirstMs.toFixed(2)}, overhead ${overhead(warm).toFixed(2)}; the first ${cold.length} pairs after the front started: ${overhead(cold).toFixed(2)}`);

    const d: Timed[] = [];
    const r: Timed[] = [];
    const tokens = 256;
    const pid = front.proc.pid as number;
    let frontCpu = 0;
    const remote = async (msgs: unknown[]) => {
      const c0 = cpuUs(pid);
      const t = await viaRemote(front, "one", msgs, tokens);
      frontCpu += cpuUs(pid) - c0;
      return t;
    };
    for (let i = 0; i < rounds; i++) {
      // A fresh prompt each round, and the order alternates, so neither side gets the other's cache.
      // short prompts: the engine's prompt time, and its jitter, stay small beside the overhead measured
      const msgs = (side: string) => [{ role: "user", content: `${side} round ${i}: ${words(i + (side === "d" ? 1000 : 2000), 24)}` }];
      const t = await bothSides(i, () => direct(servers[0]!, msgs("d"), tokens), () => remote(msgs("r")));
      d.push(t.direct);
      r.push(t.remote);
    }
    const directDecode = median(d.map((x) => x.decodeTokPerS));
    const remoteDecode = median(r.map((x) => x.decodeTokPerS));
    const frontCpuUsPerToken = frontCpu / Math.max(1, r.reduce((n, x) => n + x.tokens, 0));
    log(`  decode tok/s (${tokens}-token answers): direct ${directDecode.toFixed(1)}, remote ${remoteDecode.toFixed(1)}; the front's CPU ${frontCpuUsPerToken.toFixed(0)} µs per token`);

    const concurrent = 32;
    const results = await Promise.allSettled(Array.from({ length: concurrent }, (_, i) => viaRemote(front, "one", [{ role: "user", content: `stream ${i} ${words(i, 20)}` }], 16)));
    const concurrentErrors = results.filter((x) => x.status === "rejected").length;
    log(`  ${concurrent} concurrent streams through the remote model: ${concurrentErrors} errors`);
    // the replicas below are started by this process and would inherit its pinning
    unpin?.();

    // the pair's replicas are alike (one thread each, each pinned to a core of its own where there
    // are two), so routing is what differs
    await servers[0]!.stop();
    servers.length = 0;
    for (let i = 0; i < 2; i++) servers.push(await startLlamaServer(model, { alias: "m", slots: 4, ctx: 4096, threads: 1 }));
    const unpinPair = pinEach(servers.map((s) => s.proc.pid));
    log(unpinPair ? "  each replica pinned to a core of its own" : "  replicas not pinned (one core, or no taskset)");
    const hosts = servers.map((s) => `${s.url}/v1`);
    const aff = await startDaemon({ OLLAMA_REMOTES: "127.0.0.1", OLLAMATS_REMOTE_ROUTING: "affinity" });
    daemons.push(aff);
    await createRemote(aff, "pair", hosts);
    const rr = await startDaemon({ OLLAMA_REMOTES: "127.0.0.1", OLLAMATS_REMOTE_ROUTING: "round-robin" });
    daemons.push(rr);
    await createRemote(rr, "pair", hosts);
    // Both replicas warm before either side is measured (the first side measured on cold
    // replicas paid their first-touch costs), then the sides in A B B A order, each with
    // conversations of its own (a distinct start, so no side reuses another's cache).
    await conversations(aff, "pair", servers, "warm-up");
    const a1 = await conversations(aff, "pair", servers, "affinity 1");
    const r1 = await conversations(rr, "pair", servers, "round-robin 1");
    const r2 = await conversations(rr, "pair", servers, "round-robin 2");
    const a2 = await conversations(aff, "pair", servers, "affinity 2");
    const both = (x: Conversations, y: Conversations): Conversations => ({ hitRate: (x.hitRate + y.hitRate) / 2, meanFirstMs: (x.meanFirstMs + y.meanFirstMs) / 2 });
    const each = (x: Conversations) => `${(x.hitRate * 100).toFixed(1)} % / ${x.meanFirstMs.toFixed(0)} ms`;
    log(`  in order: affinity ${each(a1)}, round robin ${each(r1)}, round robin ${each(r2)}, affinity ${each(a2)}`);
    const affinity = both(a1, a2);
    const roundRobin = both(r1, r2);
    unpinPair?.();
    log(`  8 conversations × 4 turns on 2 replicas: affinity hit rate ${(affinity.hitRate * 100).toFixed(1)} %, mean first token ${affinity.meanFirstMs.toFixed(1)} ms; round robin ${(roundRobin.hitRate * 100).toFixed(1)} %, ${roundRobin.meanFirstMs.toFixed(1)} ms`);
    return {
      shape,
      rounds,
      directFirstMs,
      remoteFirstMs,
      firstTokenOverheadMs: overhead(warm),
      coldFirstTokenOverheadMs: overhead(cold),
      firstPairs: warm.length,
      directDecodeTokPerS: directDecode,
      remoteDecodeTokPerS: remoteDecode,
      decodeRatio: remoteDecode / directDecode,
      decodeTokens: tokens,
      frontCpuUsPerToken,
      concurrent,
      concurrentErrors,
      affinity,
      roundRobin,
    };
  } finally {
    for (const dm of daemons) await dm.stop();
    for (const s of servers) await s.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const b = await benchRemote({ log: (s) => console.log(s) });
  console.log(JSON.stringify(b, null, 2));
}
