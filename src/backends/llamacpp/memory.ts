// The memory planner: a pure function from a model's shape, the runner options and the devices'
// free memory to a placement (how many layers go to the GPU(s), what stays in system RAM, the
// bytes on each device). It follows Ollama's classic estimator (llm/memory.go EstimateGPULayers,
// fs/ggml GraphSize) with two deliberate differences, both toward what llama.cpp allocates:
//   - KV bytes use the real ggml block sizes (q8_0 = 34/32 bytes per element, q4_0 = 18/32),
//     separately for the K and the V cache type;
//   - with flash attention the compute-graph estimate drops the n_ctx x n_batch x n_head f32
//     attention-score matrix, which flash attention never materialises;
//   - the token-embedding matrix (kept in host memory by llama.cpp) counts toward system RAM.
import type { GgufInfo, GgufValue } from "../../registry/gguf.js";
import { ggufArrayLength } from "../../registry/gguf-slim.js";
import { humanBytes2 } from "../human-bytes.js";
import type { DraftMemory } from "./draft-memory.js";

export type KvCacheType = "f16" | "q8_0" | "q4_0";

/** Bytes per cached element (ggml type sizes: q8_0 blocks are 34 bytes per 32, q4_0 18 per 32). */
export const KV_BYTES_PER_ELEMENT: Readonly<Record<KvCacheType, number>> = { f16: 2, q8_0: 34 / 32, q4_0: 18 / 32 };
/** Elements per ggml block: a quantized cache needs the head size to be a multiple of this. */
export const KV_BLOCK_SIZE: Readonly<Record<KvCacheType, number>> = { f16: 1, q8_0: 32, q4_0: 32 };

const MiB = 1024 * 1024;
/** What a CUDA/ROCm context and its scratch take before any tensor (Ollama's GpuInfo.MinimumMemory). */
export const GPU_MINIMUM_BYTES = 457 * MiB;

/** The facts of a model the planner needs; `modelShape` reads them from a GGUF header. */
export interface ModelShape {
  architecture: string;
  blockCount: number;
  /** Weight bytes of each repeating block `blk.N` (index = N). */
  layerBytes: number[];
  /** The output layer on a GPU: output_norm + output matrix (a copy of the token embeddings when
   *  the output is tied to them, i.e. the file has no `output.weight`). */
  outputBytes: number;
  /** The output layer in host memory: a tied output reuses the token embeddings already counted
   *  in hostBytes, so only the norm is extra. */
  outputHostBytes: number;
  /** Tensors llama.cpp keeps in host memory whatever the offload: token embeddings and the rest. */
  hostBytes: number;
  embeddingLength: number;
  /** Maximum attention head count over the layers. */
  headCount: number;
  /** KV heads of each layer (0 = the layer keeps no attention cache). */
  headCountKv: number[];
  headDimK: number;
  headDimV: number;
  vocabSize: number;
}

export interface GpuDevice {
  id: string;
  name?: string;
  library: string;
  totalBytes: number;
  /** Free memory as the planner may use it (already net of what our loaded runners hold). */
  freeBytes: number;
  /** Overrides GPU_MINIMUM_BYTES (Metal: 512 MiB). */
  minimumBytes?: number;
}

export interface PlanInput {
  shape: ModelShape;
  numCtx: number; // per slot
  slots: number;
  numBatch: number;
  kvTypeK: KvCacheType;
  kvTypeV: KvCacheType;
  flashAttention: boolean;
  /** Layers the request wants on the GPU; -1 = as many as fit. */
  numGpu: number;
  gpus: GpuDevice[];
  ram: { freeBytes: number; swapFreeBytes?: number };
  /** OLLAMA_GPU_OVERHEAD, reserved on every GPU. */
  gpuOverheadBytes: number;
  /** OLLAMA_SCHED_SPREAD: use every GPU instead of the fewest that hold the model. */
  spread?: boolean;
}

export interface DevicePlacement {
  id: string;
  layers: number;
  bytes: number;
}

export interface MemoryPlan {
  /** llama.cpp n_gpu_layers: blocks from the last one down, plus 1 for the output layer. */
  gpuLayers: number;
  /** Layers the request asked for (blockCount + 1 when automatic, 0 without a GPU). */
  wantedGpuLayers: number;
  /** Every block and the output layer are on the GPU(s). */
  fullOffload: boolean;
  /** GPUs that received layers, with their share. */
  devices: DevicePlacement[];
  library: string | null;
  vramBytes: number;
  /** System RAM the runner needs (weights, KV and compute not on a GPU). */
  ramBytes: number;
  totalBytes: number;
  weightsBytes: number;
  kvBytes: number;
  /** The compute-graph estimate charged (per GPU when offloaded, once in RAM otherwise). */
  graphBytes: number;
  /** The GPU part is what was asked for (every layer when automatic). Always true without GPUs. */
  fitsGpu: boolean;
  /** The RAM part fits in free RAM + free swap. */
  fitsRam: boolean;
  ramAvailableBytes: number;
  /** The draft model's part, already counted in the totals above (draft-memory.ts). */
  draft?: DraftMemory;
}

// ------------------------------------------------------------------------------------------
// Reading the shape from a GGUF header

function num(v: GgufValue | undefined): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  return undefined;
}

function perLayer(v: GgufValue | undefined, layers: number, fallback: number): number[] {
  if (Array.isArray(v)) return Array.from({ length: layers }, (_, i) => num(v[i]) ?? fallback);
  const n = num(v) ?? fallback;
  return Array.from({ length: layers }, () => n);
}

export function modelShape(info: GgufInfo): ModelShape {
  const md = info.metadata;
  const arch = typeof md["general.architecture"] === "string" ? md["general.architecture"] : "unknown";
  const key = (k: string) => md[`${arch}.${k}`];
  let blockCount = num(key("block_count")) ?? 0;
  const layerBytes: number[] = [];
  let outputNorm = 0;
  let output: number | undefined;
  let tokenEmbd = 0;
  let other = 0;
  for (const t of info.tensors) {
    const m = /^blk\.(\d+)\./.exec(t.name);
    if (m) {
      const i = Number(m[1]);
      layerBytes[i] = (layerBytes[i] ?? 0) + t.bytes;
      blockCount = Math.max(blockCount, i + 1);
    } else if (t.name.startsWith("output_norm.")) outputNorm += t.bytes;
    else if (t.name === "output.weight") output = (output ?? 0) + t.bytes;
    else if (t.name.startsWith("token_embd.")) tokenEmbd += t.bytes;
    else other += t.bytes;
  }
  for (let i = 0; i < blockCount; i++) layerBytes[i] ??= 0;
  const embd = num(key("embedding_length")) ?? 0;
  const heads = perLayer(key("attention.head_count"), blockCount, 0);
  const headCount = heads.reduce((a, b) => Math.max(a, b), 0);
  const headCountKv = perLayer(key("attention.head_count_kv"), blockCount, headCount);
  const headDimK = num(key("attention.key_length")) ?? (headCount > 0 ? Math.floor(embd / headCount) : 0);
  const headDimV = num(key("attention.value_length")) ?? headDimK;
  const vocabSize = num(key("vocab_size")) ?? ggufArrayLength(info, "tokenizer.ggml.tokens") ?? 0;
  return {
    architecture: arch,
    blockCount,
    layerBytes,
    outputBytes: outputNorm + (output ?? tokenEmbd),
    outputHostBytes: outputNorm + (output ?? 0),
    hostBytes: tokenEmbd + other,
    embeddingLength: embd,
    headCount,
    headCountKv,
    headDimK,
    headDimV,
    vocabSize,
  };
}

// ------------------------------------------------------------------------------------------
// KV cache and compute graph

/** KV cache bytes of each layer for `tokens` cached tokens (all slots together). */
export function kvBytesPerLayer(shape: ModelShape, tokens: number, typeK: KvCacheType, typeV: KvCacheType): number[] {
  const perHead = shape.headDimK * KV_BYTES_PER_ELEMENT[typeK] + shape.headDimV * KV_BYTES_PER_ELEMENT[typeV];
  return shape.headCountKv.map((h) => Math.ceil(tokens * h * perHead));
}

/**
 * Compute-graph estimate (Ollama's llama formulas, which it also uses as the generic case):
 * full offload = max(4b(1 + 4e + c(1 + h)), 4b(e + V));
 * partial = 4be + max(4b(1 + e + max(c, e)) + e^2 * 9/16 + 4c(bh + d*hkv), 4b(e + V) + eV * 105/128);
 * b = min(num_ctx, num_batch), c = num_ctx x slots, e embedding, h heads, hkv KV heads, d head
 * size, V vocabulary. With flash attention the c*h and 4cbh terms (the f32 score matrix) are
 * left out.
 */
export function graphBytes(
  shape: ModelShape,
  numCtx: number,
  slots: number,
  numBatch: number,
  flashAttention: boolean,
): { full: number; partial: number } {
  const b = Math.min(numCtx, numBatch);
  const c = numCtx * slots;
  const e = shape.embeddingLength;
  const h = shape.headCount;
  const hkv = Math.max(0, ...shape.headCountKv);
  const d = shape.headDimK;
  const V = shape.vocabSize;
  const scores = flashAttention ? 0 : 1;
  const full = Math.max(4 * b * (1 + 4 * e + c * (1 + scores * h)), 4 * b * (e + V));
  const partial =
    4 * b * e +
    Math.max(
      4 * b * (1 + e + Math.max(c, e)) + Math.floor((e * e * 9) / 16) + 4 * c * (scores * b * h + d * hkv),
      4 * b * (e + V) + Math.floor((e * V * 105) / 128),
    );
  return { full, partial };
}

// ------------------------------------------------------------------------------------------
// Placement

interface Assignment {
  layers: number; // including the output layer when placed
  perGpu: number[]; // layers per GPU (input order)
  bytes: number[]; // bytes per GPU (input order), graph included
  blocksOnGpu: boolean[]; // per block index
  outputOnGpu: boolean;
}

/** Ollama's layer walk: blocks from the last down, round-robin over the GPUs that still have room. */
function assign(
  gpus: GpuDevice[],
  layerSizes: number[], // weights + KV per block
  outputBytes: number,
  graph: { full: number; partial: number },
  wanted: number,
  overhead: number,
): Assignment {
  const n = layerSizes.length;
  const perGpu = gpus.map(() => 0);
  const alloc = gpus.map(() => 0);
  const blocksOnGpu = layerSizes.map(() => false);
  // A multi-GPU split always uses the partial graph (Ollama).
  const graphMax = gpus.length > 1 ? graph.partial : Math.max(graph.full, graph.partial);
  const buffer = layerSizes[0] ?? 0; // one layer's worth held back, as Ollama does
  // A GPU is usable if it holds the overhead, minimum, graph, the buffer and at least one layer.
  let usable: number[] = [];
  gpus.forEach((g, i) => {
    const minimum = g.minimumBytes ?? GPU_MINIMUM_BYTES;
    if (g.freeBytes < overhead + graphMax + minimum + 2 * buffer) return;
    usable.push(i);
    alloc[i] = minimum + buffer;
  });
  let layers = 0;
  for (let blk = n - 1; blk >= 0; blk--) {
    if (layers >= wanted) break;
    const size = layerSizes[blk] ?? 0;
    while (usable.length > 0) {
      const slot = blk % usable.length;
      const g = usable[slot] as number;
      const gpu = gpus[g] as GpuDevice;
      if (gpu.freeBytes > overhead + (alloc[g] as number) + graphMax + size) {
        alloc[g] = (alloc[g] as number) + size;
        perGpu[g] = (perGpu[g] as number) + 1;
        blocksOnGpu[blk] = true;
        layers++;
        break;
      }
      usable = usable.filter((_, k) => k !== slot);
    }
    if (usable.length === 0) break;
  }
  let outputOnGpu = false;
  if (layers >= n && layers < wanted) {
    for (let j = usable.length; j > 0; j--) {
      const g = usable[layers % j] as number;
      const gpu = gpus[g] as GpuDevice;
      if (gpu.freeBytes > overhead + (alloc[g] as number) + graphMax + outputBytes) {
        alloc[g] = (alloc[g] as number) + outputBytes;
        perGpu[g] = (perGpu[g] as number) + 1;
        outputOnGpu = true;
        layers++;
        break;
      }
    }
  }
  const full = layers >= n + 1;
  const g = full && gpus.length === 1 ? graph.full : graph.partial;
  const bytes = alloc.map((a, i) => ((perGpu[i] as number) > 0 ? a + g : 0));
  return { layers, perGpu, bytes, blocksOnGpu, outputOnGpu };
}

const CPU_ONLY: Assignment = { layers: 0, perGpu: [], bytes: [], blocksOnGpu: [], outputOnGpu: false };

/** Decides the placement. Pure: same input, same plan. */
export function planMemory(input: PlanInput): MemoryPlan {
  const { shape } = input;
  const n = shape.blockCount;
  const tokens = input.numCtx * input.slots;
  const kv = kvBytesPerLayer(shape, tokens, input.kvTypeK, input.kvTypeV);
  const kvTotal = kv.reduce((a, b) => a + b, 0);
  const graph = graphBytes(shape, input.numCtx, input.slots, input.numBatch, input.flashAttention);
  const layerSizes = shape.layerBytes.map((w, i) => w + (kv[i] ?? 0));
  const weightsBlocks = shape.layerBytes.reduce((a, b) => a + b, 0);
  const weightsTotal = weightsBlocks + shape.hostBytes + shape.outputHostBytes;

  // One library at a time: the one with the most free memory (Ollama picks the one that offloads most).
  const byLibrary = new Map<string, GpuDevice[]>();
  for (const g of input.gpus) byLibrary.set(g.library, [...(byLibrary.get(g.library) ?? []), g]);
  let gpus: GpuDevice[] = [];
  let bestFree = -1;
  for (const list of byLibrary.values()) {
    const free = list.reduce((a, g) => a + g.freeBytes, 0);
    if (free > bestFree) {
      bestFree = free;
      gpus = list;
    }
  }
  gpus = [...gpus].sort((a, b) => b.freeBytes - a.freeBytes);
  const wanted = gpus.length === 0 ? 0 : input.numGpu < 0 ? n + 1 : Math.min(input.numGpu, n + 1);

  let used: GpuDevice[] = [];
  let a = CPU_ONLY;
  if (wanted > 0) {
    // The fewest GPUs that take every wanted layer; otherwise all of them (a partial split).
    const counts = input.spread ? [gpus.length] : gpus.map((_, i) => i + 1);
    for (const k of counts) {
      used = gpus.slice(0, k);
      a = assign(used, layerSizes, shape.outputBytes, graph, wanted, input.gpuOverheadBytes);
      if (a.layers >= wanted) break;
    }
    if (a.layers === 0) {
      used = [];
      a = CPU_ONLY;
    }
  }

  const devices: DevicePlacement[] = [];
  used.forEach((g, i) => {
    const layers = a.perGpu[i] ?? 0;
    if (layers > 0) devices.push({ id: g.id, layers, bytes: a.bytes[i] ?? 0 });
  });
  const vramBytes = devices.reduce((s, d) => s + d.bytes, 0);

  // System RAM: host tensors, the blocks (weights + KV) and output left on the CPU, and the
  // compute graph when nothing is offloaded.
  let ramBytes = shape.hostBytes;
  for (let i = 0; i < n; i++) if (!a.blocksOnGpu[i]) ramBytes += layerSizes[i] ?? 0;
  if (!a.outputOnGpu) ramBytes += shape.outputHostBytes;
  if (a.layers === 0) ramBytes += graph.full;

  const ramAvailableBytes = input.ram.freeBytes + (input.ram.swapFreeBytes ?? 0);
  return {
    gpuLayers: a.layers,
    wantedGpuLayers: wanted,
    fullOffload: a.layers >= n + 1,
    devices,
    library: devices.length > 0 ? (used[0]?.library ?? null) : null,
    vramBytes,
    ramBytes,
    totalBytes: vramBytes + ramBytes,
    weightsBytes: weightsTotal,
    kvBytes: kvTotal,
    graphBytes: a.layers === 0 ? graph.full : a.layers >= n + 1 && used.length === 1 ? graph.full : graph.partial,
    fitsGpu: a.layers >= wanted,
    fitsRam: ramBytes <= ramAvailableBytes,
    ramAvailableBytes,
  };
}

export { humanBytes2 };

/** The error Ollama gives when the CPU part of a model cannot fit in RAM + swap. */
export function ramShortMessage(plan: MemoryPlan): string {
  return `model requires more system memory (${humanBytes2(plan.ramBytes)}) than is available (${humanBytes2(plan.ramAvailableBytes)})`;
}
