// Entry point of a runner child process: one loaded model, served to the daemon over IPC.
// A native crash, an OOM or a hung load here ends this process, never the daemon.
import os from "node:os";
import {
  getLlama,
  LlamaLogLevel,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  type LlamaEmbeddingContext,
  type LlamaModel,
} from "node-llama-cpp";
import type { LoadOptions } from "../backend.js";
import type { ChildMessage, HostMessage } from "./protocol.js";
import { runGeneration } from "./generate.js";
import { SlotPool } from "./slots.js";

let llama: Llama | undefined;
let model: LlamaModel | undefined;
let context: LlamaContext | undefined;
let embedder: LlamaEmbeddingContext | undefined;
let slots: SlotPool<LlamaContextSequence> | undefined;
const running = new Map<number, AbortController>();

function send(msg: ChildMessage): void {
  process.send?.(msg);
}

const KV_TYPES: Record<string, "F16" | "Q8_0" | "Q4_0"> = { f16: "F16", q8_0: "Q8_0", q4_0: "Q4_0" };

async function load(modelPath: string, opts: LoadOptions, gpuLayers: number): Promise<void> {
  const threads = opts.numThread > 0 ? opts.numThread : os.availableParallelism();
  // maxThreads matters: node-llama-cpp defaults to 4 threads, which on 2 cores is ~50x slower.
  llama = await getLlama({
    build: "never",
    gpu: gpuLayers === 0 ? false : "auto",
    maxThreads: threads,
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
  });
  model = await llama.loadModel({
    modelPath,
    gpuLayers: gpuLayers < 0 ? "auto" : gpuLayers,
    useMmap: opts.useMmap,
    defaultContextFlashAttention: opts.flashAttention ?? false,
  });
  const contextSize = Math.max(4, Math.min(opts.numCtx, model.trainContextSize));
  if (opts.embedding) {
    embedder = await model.createEmbeddingContext({ contextSize, threads });
  } else {
    context = await model.createContext({
      contextSize,
      sequences: opts.slots,
      batchSize: Math.min(opts.numBatch, contextSize),
      threads,
      flashAttention: opts.flashAttention ?? false,
      experimentalKvCacheKeyType: KV_TYPES[opts.kvCacheTypeK] ?? "F16",
      experimentalKvCacheValueType: KV_TYPES[opts.kvCacheTypeV] ?? "F16",
    });
    const seqs: LlamaContextSequence[] = [];
    for (let i = 0; i < opts.slots; i++) seqs.push(context.getSequence());
    slots = new SlotPool(seqs);
  }
  const usage = await llama.getLlamaMemoryUsage();
  send({
    type: "loaded",
    info: {
      contextLength: contextSize,
      gpuLayers: model.gpuLayers,
      sizeBytes: Math.max(usage.cpuRam + usage.gpuVram, model.size),
      vramBytes: usage.gpuVram,
      threads,
    },
  });
}

async function generate(msg: Extract<HostMessage, { type: "generate" }>): Promise<void> {
  if (!model || !slots) throw new Error("model is not loaded for generation");
  const ac = new AbortController();
  running.set(msg.id, ac);
  const m = model;
  const seq = await slots.acquire((s) => s.compareContextTokens(m.tokenize(msg.job.prompt, true)).firstDifferentIndex);
  try {
    const stats = await runGeneration(m, seq, msg.job, ac.signal, (text) => send({ type: "text", id: msg.id, text }));
    send({ type: "done", id: msg.id, ...stats });
  } finally {
    running.delete(msg.id);
    slots.release(seq);
  }
}

async function embed(inputs: string[]): Promise<{ embeddings: number[][]; promptEvalCount: number }> {
  if (!model || !embedder) throw new Error("this model does not support embeddings");
  const embeddings: number[][] = [];
  let promptEvalCount = 0;
  for (const text of inputs) {
    promptEvalCount += model.tokenize(text).length;
    const e = await embedder.getEmbeddingFor(text);
    embeddings.push([...e.vector]);
  }
  return { embeddings, promptEvalCount };
}

async function dispose(): Promise<void> {
  for (const ac of running.values()) ac.abort();
  await context?.dispose();
  await embedder?.dispose();
  await model?.dispose();
  await llama?.dispose();
}

async function handle(msg: HostMessage): Promise<void> {
  switch (msg.type) {
    case "load":
      try {
        await load(msg.modelPath, msg.opts, msg.gpuLayers);
      } catch (err) {
        send({ type: "load-error", message: err instanceof Error ? err.message : String(err) });
      }
      return;
    case "generate":
      return generate(msg);
    case "abort":
      running.get(msg.id)?.abort();
      return;
    case "embed":
      send({ type: "result", id: msg.id, value: await embed(msg.inputs) });
      return;
    case "tokenize":
      send({ type: "result", id: msg.id, value: model ? [...model.tokenize(msg.text, true)] : [] });
      return;
    case "detokenize":
      send({ type: "result", id: msg.id, value: model ? model.detokenize(msg.tokens as never, false) : "" });
      return;
    case "close":
      await dispose();
      process.exit(0);
  }
}

process.on("message", (raw) => {
  const msg = raw as HostMessage;
  handle(msg).catch((err: unknown) => {
    const message = err instanceof Error ? err.message : String(err);
    if ("id" in msg) send({ type: "error", id: msg.id, message });
    else process.stderr.write(`runner: ${message}\n`);
  });
});
// The daemon went away: nothing can use this model any more.
process.on("disconnect", () => process.exit(0));
