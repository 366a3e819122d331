// What `npm run bench` measures, shared by the daemon side (bench.ts) and the in-process side
// (bench-direct.ts), so that both run exactly the same generations in the same order.
import os from "node:os";

/** Monotonic milliseconds, the clock of every bench measurement. */
export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export interface Sampling {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
}

/** One round of one side: load, warm up, then the measured generations, then unload. */
export interface BenchPlan {
  modelPath: string;
  /** Before measuring, wait up to this long for other processes to leave the CPUs alone. */
  quietWaitMs: number;
  threads: number;
  numCtx: number;
  numBatch: number;
  sampling: Sampling;
  warmup: { prompt: string; tokens: number };
  decode: { prompt: string; tokens: number; runs: number };
  /** One run per prompt, in order; every prompt starts with a different word. */
  ttft: { prompts: string[]; tokens: number };
}

/** One streamed generation of `decode.tokens` tokens. */
export interface DecodeRun {
  promptTokens: number;
  tokens: number;
  doneReason: string;
  /** tokens / (end − first token), the definition of Ollama's eval_count / eval_duration. */
  statsTokPerS: number;
  /** (tokens − 1) / (last chunk − first chunk) as the consumer sees it. */
  wallTokPerS: number;
  /** Messages the consumer received carrying text (daemon: NDJSON lines; direct: tokens). */
  chunks: number;
  text: string;
  /** CPU time per generated token, ms, by where it was spent (see cpuMs): on the daemon side
   *  `daemon` (all its threads), `runnerMain` (the runner's JS thread) and `client` (this bench);
   *  on the direct side `main` (the JS thread that consumes the tokens). */
  cpuMsPerToken: Record<string, number>;
  /** Cores' worth of CPU other processes used during this run. */
  foreignCores: number;
}

export interface TtftRun {
  promptTokens: number;
  /** daemon: request written → first line with non-empty response; direct: evaluate() → first token. */
  ms: number;
  /** daemon: ms minus the runner's prompt_eval_duration, i.e. HTTP, routing, scheduler and IPC. */
  pathMs?: number;
  /** Cores' worth of CPU other processes used during this run. */
  foreignCores: number;
}

export interface SideResult {
  decode: DecodeRun[];
  ttft: TtftRun[];
  loadMs: number;
  /** RSS of the process that holds the model (runner child or direct process), loaded and warm. */
  modelRssMiB: number | null;
  /** CPU used by processes outside the bench during the measured generations, in cores. */
  foreignCores: number;
  /** How long the side waited for a quiet machine before measuring, ms. */
  quietWaitedMs: number;
}

const WORDS = (
  "the water people sound under earth story mother answer country school plant father light " +
  "animal house picture point world build study learn cover food keep never city tree cross " +
  "farm start might thought head stand should found grow still again change large spell follow " +
  "kind need try near self eye last let hard saw far sea draw left late run while press close " +
  "night real life few north open seem together next white children begin got walk example ease " +
  "paper group always music those both mark often letter until mile river car feet care second " +
  "book carry took science eat room friend began idea fish mountain stop once base hear horse cut"
).split(/\s+/);

/** ~`words` space-separated common words starting at a run-specific offset. */
export function promptFor(run: number, words = 31): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[(run * 13 + i * 7) % WORDS.length]!);
  return out.join(" ");
}

/** A raw prompt of exactly `tokens` tokens once the runner adds BOS: a leading space, then
 *  `tokens` − 1 words, each a single "▁word" token of the test vocabulary. `seed` picks the first
 *  word (distinct for seeds 0..111, so prompts with different seeds share no prefix but BOS). */
export function promptOfTokens(seed: number, tokens: number): string {
  return promptOfWords(seed, tokens - 1);
}

/** A leading space, then `words` words of the sequence promptOfTokens uses for `seed`: with
 *  another tokenizer a word may be several tokens (direct-child.ts "fit" counts them). */
export function promptOfWords(seed: number, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[(seed * 13 + i * 7 + Math.floor(i / 16) * 5) % WORDS.length]!);
  return " " + out.join(" ");
}

/** Context, threads and sampling one generation runs with, on either side. */
export interface EngineShape {
  threads: number;
  numCtx: number;
  numBatch: number;
  sampling: Sampling;
}

/** The same settings as Ollama request options (no repeat penalty, as the direct side runs). */
export function ollamaOptions(p: EngineShape, numPredict: number): Record<string, unknown> {
  const s = p.sampling;
  return {
    num_ctx: p.numCtx,
    num_batch: p.numBatch,
    num_thread: p.threads,
    num_predict: numPredict,
    temperature: s.temperature,
    top_k: s.topK,
    top_p: s.topP,
    min_p: s.minP,
    seed: s.seed,
    repeat_penalty: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
  };
}

/** The sampling every case uses. */
export const BENCH_SAMPLING: Sampling = { temperature: 0.8, topK: 40, topP: 0.9, minP: 0, seed: 42 };

/** What every case's plan starts with: the model, the quiet wait, one thread per core, batch
 *  512, BENCH_SAMPLING, and the case's context size (per sequence). */
export function caseShape(modelPath: string, quietWaitMs: number | undefined, numCtx: number): EngineShape & { modelPath: string; quietWaitMs: number } {
  return { modelPath, quietWaitMs: quietWaitMs ?? 20_000, threads: os.availableParallelism(), numCtx, numBatch: 512, sampling: BENCH_SAMPLING };
}

/** How long the extra cases wait for a quiet machine before each measurement: half of
 *  BENCH_QUIET_WAIT_S, at most 10 s. */
export function measureQuietMs(quietWaitMs: number): number {
  return Math.min(10_000, quietWaitMs / 2);
}

/** Runs during which other processes used less than this many cores count as undisturbed. */
export const QUIET_CORES = 0.2;

/** The runs to take medians over: the undisturbed ones when both sides have some, else all. */
export function pickQuiet<T extends { foreignCores: number }>(a: T[], b: T[]): { daemon: T[]; direct: T[]; quiet: boolean } {
  const qa = a.filter((x) => x.foreignCores < QUIET_CORES);
  const qb = b.filter((x) => x.foreignCores < QUIET_CORES);
  return qa.length > 0 && qb.length > 0 ? { daemon: qa, direct: qb, quiet: true } : { daemon: a, direct: b, quiet: false };
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export async function readRssMiB(pid: number | "self"): Promise<number | null> {
  const { readFile } = await import("node:fs/promises");
  const text = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(text);
  return m ? Number(m[1]) / 1024 : null;
}

/** Busy CPU time of the whole machine and of the given processes (threads and reaped children
 *  included), in clock ticks (USER_HZ, 100/s on Linux). */
export interface CpuSnapshot {
  t: number;
  busy: number;
  own: number;
}

async function procTicks(pid: number | "self"): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // fields 14-17: utime stime cutime cstime (f[0] is field 3)
  return [11, 12, 13, 14].reduce((sum, i) => sum + (Number(f[i]) || 0), 0);
}

export async function cpuSnapshot(pids: Array<number | "self">): Promise<CpuSnapshot> {
  const { readFile } = await import("node:fs/promises");
  const line = (await readFile("/proc/stat", "utf8").catch(() => "")).split("\n")[0] ?? "";
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  const busy = [0, 1, 2, 5, 6, 7].reduce((sum, i) => sum + (v[i] || 0), 0);
  let own = 0;
  for (const pid of pids) own += await procTicks(pid);
  return { t: Date.now(), busy, own };
}

/** Cores' worth of CPU that other processes used between two snapshots. */
export function foreignCores(a: CpuSnapshot, b: CpuSnapshot): number {
  const seconds = (b.t - a.t) / 1000;
  if (seconds <= 0) return 0;
  return Math.max(0, (b.busy - a.busy - (b.own - a.own)) / 100 / seconds);
}

/** CPU time a process has run, in ms, from the scheduler's per-thread counters (ns resolution):
 *  only its main (JS) thread, or all its threads. */
export async function cpuMs(pid: number, which: "main" | "all"): Promise<number> {
  const { readFile, readdir } = await import("node:fs/promises");
  const tids = which === "main" ? [String(pid)] : await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  let ns = 0;
  for (const tid of tids) {
    const text = await readFile(`/proc/${pid}/task/${tid}/schedstat`, "utf8").catch(() => "0");
    ns += Number(text.split(" ")[0]) || 0;
  }
  return ns / 1e6;
}

/** Waits until other processes use less than `threshold` cores over one second (or `maxMs` has
 *  passed); returns how long it waited. The processes in `pids` are ours and not counted. */
export async function waitForQuiet(pids: Array<number | "self">, maxMs: number, threshold = 0.15): Promise<{ waitedMs: number; foreign: number }> {
  const start = Date.now();
  for (;;) {
    const a = await cpuSnapshot(pids);
    await new Promise((r) => setTimeout(r, 1000));
    const b = await cpuSnapshot(pids);
    const foreign = foreignCores(a, b);
    if (foreign < threshold || Date.now() - start >= maxMs) return { waitedMs: Date.now() - start, foreign };
  }
}
