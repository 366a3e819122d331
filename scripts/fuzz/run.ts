// Runs cases against the daemon and checks the oracles after each: every answer (oracles.ts), the
// daemon alive, no event-loop stall over 1 s during the case, RSS back within 64 MiB of its
// start, no files left in the store, fixtures intact. A crashed or stuck daemon of our own is
// restarted with a fresh store, so later cases still run.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { readRssMiB } from "../bench-plan.js";
import type { Architecture } from "../make-test-model.js";
import { planCase, type CaseKind, type CasePlan } from "./cases.js";
import { baseModel } from "./gguf-doc.js";
import { send, type Answer } from "./http.js";
import { checkAnswer, errorMessages, type Violation } from "./oracles.js";
import { LoopProbe } from "./probe.js";
import * as target from "./target.js";
import type { Target } from "./target.js";

export interface FuzzOptions {
  seed: number;
  from: number;
  cases: number;
  /** An already running daemon; otherwise the fuzzer starts its own. */
  url?: string;
  /** Per request. */
  deadlineMs?: number;
  stallMs?: number;
  rssSlackMiB?: number;
  /** How long RSS may take to come back before it counts (V8 gives memory back 10-20 s after
   *  the garbage of a large request was collected). */
  settleMs?: number;
  /** How long a daemon that stopped answering GET / gets to recover before it is replaced. */
  healthWaitMs?: number;
  /** Run only the cases of this kind (the others are skipped, numbers unchanged). */
  only?: CaseKind;
  /** The architecture of the test model crafted GGUFs are made from (default: llama). */
  base?: Architecture;
  /** Case numbers not to run (a known crasher, or a case that would swamp a shared machine). */
  skip?: ReadonlySet<number>;
  /** Print every request and answer (what --case does). */
  verbose?: boolean;
  /** Write every request body sent here (case-K/step-N.body). */
  dumpDir?: string;
  log?: (line: string) => void;
}

export interface Finding extends Violation {
  k: number;
  title: string;
  edits: string[];
}

export interface FuzzReport {
  seed: number;
  from: number;
  ran: number;
  findings: Finding[];
  /** Designed 5xx answers seen (a crafted model's load error, an unreachable registry). */
  designed: Array<{ k: number; step: string; status: number; message: string }>;
  /** Daemons replaced: after a crash, a stall or RSS over the limit (each also a finding), or
   *  RSS more than half the slack over the start (not a finding). */
  restarts: number;
  /** How many answers of each kind, step and status ("gguf create 400"). */
  statuses: Record<string, number>;
  ms: number;
}

const SHOW_BYTES = 2000;

function preview(b: Buffer | undefined): string {
  if (!b || b.length === 0) return "(no body)";
  const text = b.subarray(0, SHOW_BYTES).toString("utf8");
  const binary = /[\u0000-\u0008\u000e-\u001f]/.test(text.slice(0, 200)) && !text.trimStart().startsWith("{");
  if (binary) return `(${b.length} bytes, binary)`;
  return b.length > SHOW_BYTES ? `${text}… (${b.length} bytes in all)` : text;
}

interface Ctx {
  t: Target;
  probe: LoopProbe;
  baseRss: number;
  o: Required<Pick<FuzzOptions, "deadlineMs" | "stallMs" | "rssSlackMiB" | "settleMs" | "healthWaitMs">> & FuzzOptions;
  log: (line: string) => void;
}

async function rss(t: Target): Promise<number | null> {
  const pid = target.daemonPid(t);
  return pid ? readRssMiB(pid) : null;
}

/** A few requests that load what the daemon loads lazily, so its RSS afterwards is its start. */
async function warmUp(t: Target): Promise<void> {
  const post = (p: string, body: object) => fetch(`${t.url}${p}`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.arrayBuffer());
  await post("/api/generate", { model: t.fixtures.base, prompt: "hi", stream: false });
  await post("/api/chat", { model: t.fixtures.base, messages: [{ role: "user", content: "hi" }], stream: false });
  await post("/api/embed", { model: t.fixtures.embed, input: "hi" });
  await post("/api/show", { model: t.fixtures.base, verbose: true });
  await post("/v1/chat/completions", { model: t.fixtures.base, messages: [{ role: "user", content: "hi" }], stream: true });
}

async function begin(o: FuzzOptions, log: (l: string) => void): Promise<{ t: Target; probe: LoopProbe; baseRss: number }> {
  const t = o.url ? await target.attach(o.url) : await target.startOwn();
  await warmUp(t);
  await new Promise((r) => setTimeout(r, 500));
  const baseRss = (await rss(t)) ?? 0;
  if (t.own) log(`daemon pid ${target.daemonPid(t)} at ${t.url}, RSS ${baseRss.toFixed(1)} MiB after warm-up, store ${t.own.daemon.models}`);
  return { t, probe: new LoopProbe(t.url), baseRss };
}

async function dump(ctx: Ctx, plan: CasePlan, i: number, body: Buffer | undefined): Promise<string | undefined> {
  if (!ctx.o.dumpDir || !body) return undefined;
  const dir = path.join(ctx.o.dumpDir, `case-${plan.k}`);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `step-${i}.body`);
  await writeFile(file, body);
  return file;
}

interface CaseOutcome {
  violations: Violation[];
  designed: FuzzReport["designed"];
  statuses: string[];
  /** The daemon must be replaced before the next case. */
  restart: boolean;
}

async function runCase(ctx: Ctx, plan: CasePlan): Promise<CaseOutcome> {
  const { t, o, log } = ctx;
  const violations: Violation[] = [];
  const designed: FuzzReport["designed"] = [];
  const statuses: string[] = [];
  await ctx.probe.read(); // a fresh window for this case
  const rssBefore = await rss(t);
  let ok = true;
  for (const [i, step] of plan.steps.entries()) {
    if (step.onlyIfOk && !ok) continue;
    if (o.verbose) {
      const file = await dump(ctx, plan, i, step.req.body);
      log(`  → ${step.label}: ${step.req.method} ${step.req.path}\n    headers ${JSON.stringify(step.req.headers)}\n    body ${preview(step.req.body)}${file ? `\n    (body written to ${file})` : ""}`);
    }
    const a: Answer = await send(t.url, step.req, o.deadlineMs);
    if (o.verbose) log(`  ← ${a.status ?? "no answer"} in ${a.ms} ms${a.deadline ? ` (deadline: ${a.deadline})` : ""}${a.error ? ` (${a.error})` : ""}\n    ${preview(a.body).replace(/\n/g, "\n    ")}`);
    if (a.status === null || a.status >= 300) ok = false;
    statuses.push(`${plan.kind} ${step.label} ${a.status ?? a.deadline ?? "none"}`);
    const found = checkAnswer(step, a);
    violations.push(...found);
    if (a.status !== null && a.status >= 500 && !found.some((v) => v.oracle === "5xx")) {
      designed.push({ k: plan.k, step: step.label, status: a.status, message: errorMessages(a)[0] ?? a.body.toString("utf8", 0, 200) });
    }
    await target.noteRunners(t);
    if (!(await target.alive(t))) break;
  }
  const after = await afterCase(ctx, plan, rssBefore);
  return { violations: [...violations, ...after.violations], designed, statuses, restart: after.restart };
}

/** The daemon-wide oracles after a case (alive, no stall, RSS back) and the reset for the next. */
async function afterCase(ctx: Ctx, plan: CasePlan, rssBefore: number | null): Promise<{ violations: Violation[]; restart: boolean }> {
  const { t, o } = ctx;
  const violations: Violation[] = [];
  const reading = await ctx.probe.read();
  if (reading.maxMs > o.stallMs) violations.push({ oracle: "stall", detail: `GET / took ${reading.maxMs} ms during the case` });
  const up = await target.alive(t);
  if (up && reading.failures > 0) violations.push({ oracle: "stall", detail: `GET / failed ${reading.failures} times during the case` });
  if (!up) {
    violations.push({ oracle: "crash", detail: `the daemon died: ${target.exitInfo(t)}` });
    return { violations, restart: true };
  }
  if (!(await target.waitHealthy(t, o.healthWaitMs))) {
    violations.push({ oracle: "stall", detail: `the daemon did not answer GET / for ${o.healthWaitMs / 1000} s after the case` });
    return { violations, restart: true };
  }
  try {
    for (const p of await target.resetModels(t)) violations.push({ oracle: "fixture", detail: p });
    if (plan.touchesRunner) await target.unloadAll(t);
    for (const f of await target.storeLeftovers(t, plan.uploads)) violations.push({ oracle: "store", detail: `left in the store: blobs/${f}` });
  } catch (err) {
    violations.push({ oracle: "fixture", detail: `resetting after the case failed: ${(err as Error).message}` });
    return { violations, restart: true };
  }
  const limit = ctx.baseRss + o.rssSlackMiB;
  let now = await rss(t);
  for (const until = Date.now() + o.settleMs; now !== null && now > limit && Date.now() < until; now = await rss(t)) {
    await new Promise((r) => setTimeout(r, 250));
  }
  if (now !== null && now > limit) {
    const before = rssBefore === null ? "" : `; ${rssBefore.toFixed(0)} MiB before the case`;
    violations.push({ oracle: "rss", detail: `daemon RSS ${now.toFixed(0)} MiB ${o.settleMs / 1000} s after the case, ${(now - ctx.baseRss).toFixed(0)} MiB over its start (${ctx.baseRss.toFixed(0)} MiB${before})` });
    return { violations, restart: true };
  }
  // Memory V8 kept from this case would count against the next one: a daemon still more than
  // half the slack over its start is replaced, so each case's RSS verdict is its own.
  return { violations, restart: now !== null && now > ctx.baseRss + o.rssSlackMiB / 2 };
}

export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const log = opts.log ?? ((l: string) => console.log(l));
  const o = { deadlineMs: 30_000, stallMs: 1000, rssSlackMiB: 64, settleMs: 20_000, healthWaitMs: 30_000, ...opts };
  const t0 = Date.now();
  const base = (await baseModel({ shape: "tiny", type: "Q8_0", seed: 1, ...(o.base ? { arch: o.base } : {}) })).doc;
  const started = await begin(o, log);
  const ctx: Ctx = { ...started, o, log };
  const report: FuzzReport = { seed: o.seed, from: o.from, ran: 0, findings: [], designed: [], restarts: 0, statuses: {}, ms: 0 };
  try {
    for (let k = o.from; k < o.from + o.cases; k++) {
      if (o.skip?.has(k)) continue;
      const plan = planCase(o.seed, k, ctx.t.fixtures, base);
      if (o.only && plan.kind !== o.only) continue;
      if (o.verbose) log(`case ${k} (seed ${o.seed}): ${plan.title}\n  ${plan.edits.join("\n  ")}`);
      const out = await runCase(ctx, plan);
      report.ran++;
      report.designed.push(...out.designed);
      for (const st of out.statuses) report.statuses[st] = (report.statuses[st] ?? 0) + 1;
      for (const v of out.violations) {
        report.findings.push({ ...v, k, title: plan.title, edits: plan.edits });
        log(`case ${k} ${plan.title}: ${v.oracle}${v.step ? ` at ${v.step}` : ""}: ${v.detail}\n    edits: ${plan.edits.join(" | ").slice(0, 300)}`);
      }
      if (out.restart) {
        await ctx.probe.stop();
        if (!ctx.t.own) throw new Error(`case ${k} left the daemon at ${ctx.t.url} unusable; restart it and resume with --from ${k + 1}`);
        await target.stop(ctx.t);
        const again = await begin(o, log);
        Object.assign(ctx, again);
        report.restarts++;
      }
      if (!o.verbose && (k - o.from + 1) % 100 === 0) log(`… ${k - o.from + 1}/${o.cases} cases, ${report.findings.length} findings, ${Math.round((Date.now() - t0) / 1000)} s`);
    }
  } finally {
    await ctx.probe.stop();
    await target.stop(ctx.t);
    report.ms = Date.now() - t0;
  }
  return report;
}
