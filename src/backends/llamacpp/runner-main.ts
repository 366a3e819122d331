// Entry point of a runner child process: one loaded model, served to the daemon over IPC.
// A native crash, an OOM or a hung load here ends this process, never the daemon.
// A child may also be started only to probe the GPUs (`probe`), then closed.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  getLlama,
  GgmlType,
  LlamaLogLevel,
  type Llama,
  type LlamaContext,
  type LlamaContextOptions,
  type LlamaContextSequence,
  type LlamaEmbeddingContext,
  type LlamaModel,
  type LlamaRankingContext,
} from "node-llama-cpp";
import type { EmbedResult, GenerateStats, RankResult, RunnerStats } from "../backend.js";
import { EngineError } from "../errors.js";
import { EngineLog } from "./engine-log.js";
import { embeddingContextOptions, embedInputs, inputSpecials } from "./embed.js";
import { isRankingModel, rankDocuments } from "./rank.js";
import { SPARE_ARG, type ChildMessage, type GpuProbe, type HostMessage, type LoadOptions, type RunnerJob, type RunnerLogLevel, type StateStore } from "./protocol.js";
import { boundJob, boundLoadOptions } from "../option-ranges.js";
import { promptTokens, runGeneration, withBos } from "./generate.js";
import { prefixScore, SlotAbortedError, SlotPool } from "./slots.js";
import { StepGate } from "./step-gate.js";
import { guardOutputOrder } from "./output-order.js";
import { StepPause } from "./step-pause.js";
import { batchPlanStrategy } from "./batch-plan.js";
import { restoreSlotStates, saveSlotStates, stateFingerprint } from "./sequence-states.js";
import { warmUpContext } from "./context-warmup.js";
import { PromptCache } from "./prompt-cache.js";
import { PrefixReuse, reusable } from "./prefix-reuse.js";
import { MIN_WINDOW_S, ProcCpuMeter, ThreadBudget } from "./thread-budget.js";
import { DecodeThreads, type BatchShape } from "./decode-threads.js";
import { Speculation } from "./speculative.js";
import { makeDirs } from "../../fs/make-dirs.js";
import { removeDeadOwnerDirs } from "../../fs/dead-owner-dirs.js";
import { tokenizeText } from "./tokenize-text.js";

let llama: Llama | undefined;
/** node-llama-cpp's binary loaded ahead (a spare, or after the GPU probe), and whether it was
 *  asked for with GPU support ("auto") or without (false). */
let prepared: { gpu: "auto" | false; llama: Promise<Llama> } | undefined;
let model: LlamaModel | undefined;
let context: LlamaContext | undefined;
let embedder: LlamaEmbeddingContext | undefined;
let ranker: LlamaRankingContext | undefined;
let slots: SlotPool<LlamaContextSequence> | undefined;
let prefixes: PrefixReuse | undefined;
/** The draft model or prompt lookup, when this model decodes speculatively. */
let speculation: Speculation | undefined;
const stepPause = new StepPause();
const lockstep = new StepGate(() => stepPause.settle());
/** Slots in the order they were taken from the context: the index is llama.cpp's sequence id.
 *  Then the saved-state identity of this runner, and where states go. */
let allSeqs: LlamaContextSequence[] = [];
let fingerprint: string | undefined;
let stateStore: StateStore | undefined;
let scratch: string | undefined;
const SCRATCH_PREFIX = "ollamats-runner-";
/** The state budget when the daemon gave no state directory (tests, tools). */
const DEFAULT_STATE_BUDGET = 512 * 1024 ** 2;
/** Threads the model was loaded with: the most a thread budget can give back. */
let loadedThreads = os.availableParallelism();
/** The daemon's share of the cores for this runner (scheduler/threads.ts), and the cores free
 *  on the machine (thread-budget.ts; absent when num_thread was set explicitly). */
let daemonThreads = Infinity;
let freeThreads: ThreadBudget | undefined;
/** The meter behind freeThreads, and the processes it leaves out (the daemon's spare). */
const cpuMeter = new ProcCpuMeter();
const decodeThreads = new DecodeThreads();

/** Gives the next batch the smaller of the daemon's share and the cores free right now, and a
 *  decode step the part of those that decodes fastest (decode-threads.ts). */
function applyThreads(batch?: BatchShape): void {
  if (!llama) return;
  const free = freeThreads?.current() ?? loadedThreads;
  const cap = Math.max(1, Math.min(loadedThreads, daemonThreads, free));
  const n = batch && freeThreads ? decodeThreads.threadsFor(cap, batch) : cap;
  if (llama.maxThreads !== n) {
    log("debug", "runner threads", { from: llama.maxThreads, to: n, free, daemon: Number.isFinite(daemonThreads) ? daemonThreads : undefined, decode: n < cap ? true : undefined });
    llama.maxThreads = n;
  }
}

/** This runner's private directory for sequence copies and prompt snapshots, inside the
 *  daemon's state directory when there is one; removed when the process ends, and a killed
 *  runner's is removed by the next runner that makes one. */
function scratchDir(): string {
  if (scratch) return scratch;
  const parent = stateStore?.dir ?? os.tmpdir();
  removeDeadOwnerDirs(parent, SCRATCH_PREFIX);
  scratch = mkdtempSync(path.join(parent, `${SCRATCH_PREFIX}${process.pid}-`));
  return scratch;
}
process.on("exit", () => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Half a token of prefix score: breaks ties only, towards keeping busy sequence ids consecutive. */
function adjacencyBonus(seq: LlamaContextSequence): number {
  const id = allSeqs.indexOf(seq);
  const busy = (n: LlamaContextSequence | undefined) => n !== undefined && slots?.isBusy(n) === true;
  return busy(allSeqs[id - 1]) || busy(allSeqs[id + 1]) ? 0.5 : 0;
}
const running = new Map<number, { ac: AbortController; done: Promise<void> }>();
let closing = false;

function send(msg: ChildMessage): void {
  process.send?.(msg);
}

/** A line for the daemon's log (fields left undefined are dropped). */
function log(level: RunnerLogLevel, msg: string, fields: Record<string, string | number | boolean | undefined>): void {
  const defined: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) defined[k] = v;
  send({ type: "log", level, msg, fields: defined });
}

const ms = (ns: number) => Math.round(ns / 1e4) / 100;

/** Embeddings being computed (an embedding model has no slots of its own). */
let embedding = 0;

function stats(): RunnerStats {
  if (!slots) return { slotsBusy: Math.min(embedding, 1), kvCellsUsed: 0 };
  return {
    slotsBusy: allSeqs.length - slots.idle,
    kvCellsUsed: allSeqs.reduce((n, seq) => n + seq.nextTokenIndex, 0),
  };
}

const KV_TYPES: Record<string, "F16" | "Q8_0" | "Q4_0"> = { f16: "F16", q8_0: "Q8_0", q4_0: "Q4_0" };
const KV_NAMES: Partial<Record<number, string>> = { [GgmlType.F16]: "f16", [GgmlType.Q8_0]: "q8_0", [GgmlType.Q4_0]: "q4_0" };

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const engineLog = new EngineLog();

function llamaFor(gpu: "auto" | false): Promise<Llama> {
  return getLlama({ build: "never", gpu, logLevel: LlamaLogLevel.error, logger: engineLog.logger, progressLogs: false });
}

/** The prepared binary if it suits a load with or without GPU layers, else a fresh one. */
async function takeLlama(gpu: "auto" | false): Promise<Llama> {
  const p = prepared;
  prepared = undefined;
  const ready = await p?.llama.catch(() => undefined);
  // "auto" on a machine without a GPU library is CPU-only, which suits a CPU-only load too.
  if (ready && (p?.gpu === gpu || (gpu === false && ready.gpu === false))) return ready;
  await ready?.dispose(); // a GPU context this CPU-only runner must not hold
  return llamaFor(gpu);
}

function prepare(gpu: "auto" | false): void {
  if (prepared || llama) return;
  const l = llamaFor(gpu);
  // A failure is met again, and reported, by the load.
  void l.then(
    () => send({ type: "prepared" }),
    () => send({ type: "prepared" }),
  );
  prepared = { gpu, llama: l };
}

async function probe(): Promise<GpuProbe> {
  prepare("auto");
  const l = await (prepared?.llama ?? llamaFor("auto"));
  const library = l.gpu;
  if (library === false) return { library: false, names: [], totalBytes: 0, freeBytes: 0 };
  const vram = await l.getVramState();
  return { library, names: await l.getGpuDeviceNames(), totalBytes: vram.total, freeBytes: vram.free };
}

async function load(modelPath: string, requested: LoadOptions, gpuLayers: number, draftGpuLayers: number, states: StateStore | undefined): Promise<void> {
  // The daemon has already done this; a runner never trusts its caller with thread counts.
  const opts = boundLoadOptions(requested);
  // Automatic threads follow the cores free for each batch; an explicit num_thread is kept as is.
  freeThreads = opts.numThread > 0 ? undefined : new ThreadBudget(cpuMeter);
  const threads = freeThreads?.capacity ?? opts.numThread;
  loadedThreads = threads;
  // A spare's command line now reads as any other runner's (`ps`, /proc/<pid>/cmdline).
  if (process.argv.includes(SPARE_ARG)) process.title = process.argv.filter((a) => a !== SPARE_ARG).join(" ");
  // Without GPU layers the GPU backend is not even initialised (no VRAM spent on a context).
  llama = await takeLlama(gpuLayers === 0 ? false : "auto");
  // maxThreads matters: node-llama-cpp defaults to 4 threads, which on 2 cores is ~50x slower.
  llama.maxThreads = threads;
  const flashAttention = opts.flashAttention ?? false;
  let lastProgress = -1;
  model = await llama.loadModel({
    modelPath,
    gpuLayers: gpuLayers < 0 ? "auto" : gpuLayers,
    useMmap: opts.useMmap,
    defaultContextFlashAttention: flashAttention,
    onLoadProgress: (p) => {
      // Enough to reset the daemon's stall timer without flooding the channel.
      if (p - lastProgress >= 0.01 || p === 1) {
        lastProgress = p;
        send({ type: "progress", progress: p });
      }
    },
  });
  const contextSize = Math.max(4, Math.min(opts.numCtx, model.trainContextSize));
  const warnings: string[] = [];
  if (opts.embedding && isRankingModel(model)) {
    ranker = await model.createRankingContext(embeddingContextOptions(contextSize, threads));
  } else if (opts.embedding) {
    embedder = await model.createEmbeddingContext(embeddingContextOptions(contextSize, threads));
  } else {
    const base: LlamaContextOptions = {
      contextSize,
      sequences: opts.slots,
      batchSize: Math.min(opts.numBatch, contextSize),
      threads,
      flashAttention,
      batching: { itemPrioritizationStrategy: batchPlanStrategy(() => context, applyThreads) },
      ...(opts.adapters.length > 0 ? { lora: { adapters: opts.adapters.map((filePath) => ({ filePath })) } } : {}),
    };
    const k = Object.hasOwn(KV_TYPES, opts.kvCacheTypeK) ? KV_TYPES[opts.kvCacheTypeK]! : "F16";
    const v = Object.hasOwn(KV_TYPES, opts.kvCacheTypeV) ? KV_TYPES[opts.kvCacheTypeV]! : "F16";
    try {
      context = await model.createContext({ ...base, experimentalKvCacheKeyType: k, experimentalKvCacheValueType: v });
    } catch (err) {
      // The daemon checks head sizes before it asks for a quantized cache; should llama.cpp
      // still refuse one, load with f16 rather than fail.
      if (k === "F16" && v === "F16") throw err;
      warnings.push(`KV cache ${opts.kvCacheTypeK}/${opts.kvCacheTypeV} refused (${message(err)}); using f16`);
      context = await model.createContext({ ...base, experimentalKvCacheKeyType: "F16", experimentalKvCacheValueType: "F16" });
    }
    if (!guardOutputOrder(context)) {
      warnings.push("concurrent prompts are not guarded against sampling each other's logits (node-llama-cpp's internals differ from 3.21.1's); set OLLAMA_NUM_PARALLEL=1 to be safe");
    }
    speculation = await Speculation.load(llama, opts, { contextSize, batchSize: base.batchSize ?? contextSize, threads, gpuLayers: draftGpuLayers });
    const seqs: LlamaContextSequence[] = [];
    for (let i = 0; i < opts.slots; i++) seqs.push(context.getSequence(speculation ? { tokenPredictor: speculation.predictor() } : {}));
    if (seqs[0]) await warmUpContext(model, seqs[0]);
    slots = new SlotPool(seqs);
    allSeqs = seqs;
    fingerprint = await stateFingerprint(modelPath, opts, contextSize);
    stateStore = states;
    // Half of the state budget for snapshots while loaded; the other half is for the unload.
    const promptCache = new PromptCache<LlamaContextSequence>(scratchDir, Math.floor((states?.budgetBytes ?? DEFAULT_STATE_BUDGET) / 2), {
      tokensOf: (seq) => seq.contextTokens,
      save: async (seq, file) => (await seq.saveStateToFile(file)).fileSize,
      load: (seq, file) => seq.loadStateFromFile(file, { acceptRisk: true }),
    });
    const pool = slots;
    prefixes = new PrefixReuse(
      seqs,
      pool,
      lockstep,
      promptCache,
      scratchDir,
      (what, err) => process.stderr.write(`runner: ${what}: ${message(err)}\n`),
      (seq) => !speculation || !pool.isBusy(seq),
    );
    // The prefixes this model's previous runner had evaluated, if it saved them on unload.
    if (states) await restoreSlotStates(seqs, states.dir, fingerprint);
  }
  // Between batches the budget is checked before each one; while idle, every measuring window,
  // so the first batch of the next request (a whole short prompt) starts from what is free now,
  // not from what was free when a job that has just ended was running (embeddings use it too).
  // (While generating, each batch brings it up to date itself, decode steps with their own count.)
  if (freeThreads) setInterval(() => running.size === 0 && applyThreads(), MIN_WINDOW_S * 1000).unref();
  applyThreads();
  const usage = await llama.getLlamaMemoryUsage();
  // A fully offloaded model is all GPU, as Ollama reports it (the token embeddings llama.cpp
  // keeps in host memory are not counted as a CPU share).
  const full = usage.gpuVram > 0 && model.gpuLayers >= model.fileInsights.totalLayers;
  send({
    type: "loaded",
    info: {
      contextLength: contextSize,
      gpuLayers: model.gpuLayers,
      sizeBytes: full ? usage.gpuVram : Math.max(usage.cpuRam + usage.gpuVram, model.size + (speculation?.draftBytes ?? 0)),
      vramBytes: usage.gpuVram,
      threads,
      ...(embedder ? { inputSpecials: inputSpecials(model, embedder) } : {}),
      ...(context
        ? {
            flashAttention: context.flashAttention === true,
            kvCacheTypeK: KV_NAMES[context.kvCacheKeyType] ?? String(context.kvCacheKeyType),
            kvCacheTypeV: KV_NAMES[context.kvCacheValueType] ?? String(context.kvCacheValueType),
          }
        : {}),
      warnings,
    },
  });
}

async function generate(id: number, job: RunnerJob, ac: AbortController): Promise<void> {
  if (!model || !slots || !prefixes) throw new Error("model is not loaded for generation");
  const reuse = prefixes;
  const m = model;
  const tokens = promptTokens(m, job);
  const queuedAt = performance.now();
  let seq: LlamaContextSequence;
  try {
    // Among slots with equal prefix scores, one next to a busy slot: llama.cpp batches only
    // sequences with consecutive ids together (batch-plan.ts).
    seq = await slots.acquire((s) => prefixScore(reusable(s, tokens), s.nextTokenIndex) + adjacencyBonus(s), ac.signal);
  } catch (err) {
    if (err instanceof SlotAbortedError) return; // the host already ended this stream
    throw err;
  }
  /** Prompt tokens reused of those the slot held, once the request is answered. */
  let finished: { reused: number; held: number } | undefined;
  try {
    if (ac.signal.aborted) return;
    const slotAt = performance.now();
    const adopted = await reuse.adopt(seq, tokens);
    seq = adopted.seq; // an idle slot a restore ahead gave this prefix, if there was one
    const { from, release: resume } = adopted;
    const adoptedAt = performance.now();
    let stats: GenerateStats;
    let cachedTokens: number;
    const held = seq.nextTokenIndex;
    try {
      cachedTokens = reusable(seq, tokens);
      stats = await runGeneration(m, seq, job, tokens, ac.signal, (text, logprobs) => send({ type: "text", id, text, ...(logprobs ? { logprobs } : {}) }), {
        gate: lockstep,
        id: allSeqs.indexOf(seq),
        onFirstToken: resume,
      });
    } finally {
      resume();
    }
    // Cut short by an unload (shutdown past its grace period): say so rather than end normally.
    if (closing) send({ type: "error", id, message: "the model was unloaded while generating (server shutting down)" });
    else {
      send({ type: "done", id, ...stats, cachedTokens, ...(cachedTokens > 0 ? { cachedFrom: from } : {}) });
      finished = { reused: cachedTokens, held };
      // Per-phase timings of this request in the runner, for OLLAMA_DEBUG (once per request).
      log("debug", "runner generation", {
        request_id: job.requestId,
        slot: allSeqs.indexOf(seq),
        slot_wait_ms: Math.round((slotAt - queuedAt) * 100) / 100,
        prefix_ms: Math.round((adoptedAt - slotAt) * 100) / 100,
        prompt_tokens: tokens.length,
        cached_tokens: cachedTokens,
        cached_from: cachedTokens > 0 ? from : undefined,
        prompt_eval_ms: ms(stats.promptEvalDurationNs),
        eval_tokens: stats.evalCount,
        eval_ms: ms(stats.evalDurationNs),
        draft_tokens: stats.draftTokens,
        draft_accepted: stats.draftAccepted,
        done_reason: stats.doneReason,
      });
    }
  } finally {
    slots.release(seq);
  }
  if (finished !== undefined) reuse.afterGeneration(seq, tokens, finished);
}

async function embed(inputs: string[]): Promise<EmbedResult> {
  if (ranker) throw new Error("this model is a reranker: it scores documents for a query (/api/rerank) and does not embed");
  if (!model || !embedder) throw new Error("this model does not support embeddings");
  embedding++;
  try {
    return await embedInputs(model, embedder, inputs);
  } finally {
    embedding--;
  }
}

async function rank(query: string, documents: string[], truncate: boolean): Promise<RankResult> {
  if (!ranker) throw new Error("this model does not support reranking");
  return rankDocuments(ranker, query, documents, truncate);
}

/** Stops every generation, waits for them to leave their sequences, then frees everything.
 *  (Disposing a sequence under a running generation crashes node-llama-cpp 3.21.1.) */
async function dispose(keepPromptCache: boolean): Promise<void> {
  closing = true;
  for (const r of running.values()) r.ac.abort();
  await Promise.all([...running.values()].map((r) => r.done.catch(() => undefined)));
  await prefixes?.idle();
  if (keepPromptCache && stateStore && fingerprint && allSeqs.length > 0) {
    try {
      await makeDirs(stateStore.dir, 0o700);
      await saveSlotStates(allSeqs, stateStore.dir, fingerprint, stateStore.budgetBytes);
    } catch (err) {
      process.stderr.write(`runner: could not keep the slots' prompt caches: ${message(err)}\n`);
    }
  }
  await context?.dispose();
  await speculation?.dispose();
  await embedder?.dispose();
  await ranker?.dispose();
  await model?.dispose();
  await llama?.dispose();
}

function startGeneration(msg: Extract<HostMessage, { type: "generate" }>): void {
  const ac = new AbortController();
  const done = generate(msg.id, msg.job, ac)
    .catch((err: unknown) => send({ type: "error", id: msg.id, message: message(err), ...(err instanceof EngineError ? { code: err.code } : {}) }))
    .finally(() => running.delete(msg.id));
  running.set(msg.id, { ac, done });
}

async function handle(msg: HostMessage): Promise<void> {
  switch (msg.type) {
    case "probe":
      send({ type: "probed", gpu: await probe() });
      return;
    case "prepare":
      prepare(msg.gpu ? "auto" : false);
      return;
    case "load": {
      const mark = engineLog.mark();
      try {
        await load(msg.modelPath, msg.opts, msg.gpuLayers, msg.draftGpuLayers ?? 0, msg.states);
      } catch (err) {
        send({ type: "load-error", message: message(await engineLog.explain(err, mark)) });
      }
      return;
    }
    case "generate":
      startGeneration({ ...msg, job: boundJob(msg.job) });
      return;
    case "abort":
      running.get(msg.id)?.ac.abort();
      return;
    case "embed":
      send({ type: "result", id: msg.id, value: await embed(msg.inputs) });
      return;
    case "rank":
      send({ type: "result", id: msg.id, value: await rank(msg.query, msg.documents, msg.truncate) });
      return;
    case "tokenize":
      send({ type: "result", id: msg.id, value: model ? (msg.prompt ? withBos(model, tokenizeText(model, msg.text)) : tokenizeText(model, msg.text)) : [] });
      return;
    case "detokenize":
      send({ type: "result", id: msg.id, value: model ? model.detokenize(msg.tokens as never, true) : "" });
      return;
    case "stats":
      send({ type: "result", id: msg.id, value: stats() });
      return;
    case "yielding":
      cpuMeter.setYielding(msg.pids.filter((p) => Number.isInteger(p) && p > 0).slice(0, 16));
      return;
    case "threads":
      // node-llama-cpp hands each batch at most this many threads (contexts were made with
      // threads as a number: ideal = that number, minimum 1, so a smaller budget never blocks).
      if (Number.isFinite(msg.threads)) {
        daemonThreads = Math.max(1, Math.trunc(msg.threads));
        applyThreads();
      }
      return;
    case "close":
      await dispose(msg.keepPromptCache === true);
      process.exit(0);
  }
}

process.on("message", (raw) => {
  const msg = raw as HostMessage;
  handle(msg).catch((err: unknown) => {
    if ("id" in msg) send({ type: "error", id: msg.id, message: message(err), ...(err instanceof EngineError ? { code: err.code } : {}) });
    else process.stderr.write(`runner: ${message(err)}\n`);
  });
});
// The daemon went away: nothing can use this model any more.
process.on("disconnect", () => process.exit(0));
