// From what the backend reports about its devices to the memory planner's input, and from a
// request to the load options of its runner (with the model's flash attention / KV cache types).
import type { DeviceInfo, RunnerOptions } from "../backend.js";
import type { Config } from "../../config.js";
import type { GgufSource } from "../../registry/model-spec.js";
import type { LoadOptions } from "./protocol.js";
import { resolveKvCache, type KvPlan } from "./kv-cache.js";
import { withDraft } from "./draft-memory.js";
import { oneSlotOnly } from "./one-slot.js";
import { modelShape, planMemory, type GpuDevice, type KvCacheType, type MemoryPlan, type ModelShape } from "./memory.js";

/** Ollama's draft_num_predict for a model with a draft (api.DefaultOptions); prompt lookup
 *  proposes as many. */
export const DEFAULT_DRAFT_NUM_PREDICT = 4;

export interface ModelFacts {
  shape: ModelShape;
  kv: KvPlan;
  /** The draft model's shape, when the model has one. */
  draft?: ModelShape;
}

/** Shapes and KV decisions per weights file (a blob never changes). */
export class FactsCache {
  private readonly cache = new Map<string, ModelFacts>();
  private readonly drafts = new Map<string, ModelShape>();

  constructor(private readonly config: Config) {}

  get(src: GgufSource): ModelFacts {
    let f = this.cache.get(src.path);
    if (!f) {
      const shape = modelShape(src.gguf);
      const kv = resolveKvCache(this.config, {
        architecture: shape.architecture,
        headDimK: shape.headDimK,
        headDimV: shape.headDimV,
        isEmbedding: src.facts.isEmbedding,
      });
      f = { shape, kv };
      this.cache.set(src.path, f);
    }
    // One weights file may be served with different drafts (two models over the same blob).
    if (src.draft) {
      let d = this.drafts.get(src.draft.path);
      if (!d) {
        d = modelShape(src.draft.gguf);
        this.drafts.set(src.draft.path, d);
      }
      return { ...f, draft: d };
    }
    return f;
  }
}

/** Load options of a request: its runner options plus the daemon-wide and per-model ones. */
export function loadOptionsFor(config: Config, src: GgufSource, r: RunnerOptions, kv: KvPlan): LoadOptions {
  const train = src.facts.contextLength ?? r.numCtx;
  return {
    numCtx: Math.max(4, Math.min(r.numCtx, train)),
    numBatch: r.numBatch,
    numGpu: r.numGpu,
    numThread: r.numThread,
    useMmap: r.useMmap,
    slots: src.facts.isEmbedding || oneSlotOnly(src.facts.architecture, src.facts.family) ? 1 : Math.max(1, config.numParallel),
    flashAttention: kv.flashAttention,
    kvCacheTypeK: kv.typeK,
    kvCacheTypeV: kv.typeV,
    embedding: src.facts.isEmbedding,
    adapters: src.adapters,
    ...speculation(src, r, config.draftMinConfidence),
  };
}

/** What speculative decoding a request gets: the model's draft (default draft_num_predict 4, as
 *  Ollama), else prompt lookup when asked for; nothing for an embedding model or 0 tokens. */
function speculation(src: GgufSource, r: RunnerOptions, minConfidence: number): Pick<LoadOptions, "draft" | "promptLookup" | "draftNumPredict" | "draftMinConfidence"> {
  if (src.facts.isEmbedding || (!src.draft && r.promptLookup !== true)) return {};
  const n = r.draftNumPredict ?? DEFAULT_DRAFT_NUM_PREDICT;
  if (n <= 0) return {};
  return src.draft ? { draft: src.draft.path, draftNumPredict: n, draftMinConfidence: minConfidence } : { promptLookup: true, draftNumPredict: n };
}

/** Ollama's needsReload on runner options (num_gpu -1 and an unset use_mmap match anything). */
export function needsReload(loaded: LoadOptions, wanted: LoadOptions): boolean {
  return (
    loaded.numCtx !== wanted.numCtx ||
    loaded.numBatch !== wanted.numBatch ||
    (wanted.numGpu >= 0 && loaded.numGpu !== wanted.numGpu) ||
    loaded.numThread !== wanted.numThread ||
    (wanted.useMmap !== undefined && loaded.useMmap !== wanted.useMmap) ||
    loaded.adapters.join("\0") !== wanted.adapters.join("\0") ||
    (loaded.draft ?? "") !== (wanted.draft ?? "") ||
    (loaded.promptLookup === true) !== (wanted.promptLookup === true) ||
    (loaded.draftNumPredict ?? 0) !== (wanted.draftNumPredict ?? 0)
  );
}

export function planFor(config: Config, devices: DeviceInfo[], facts: Pick<ModelFacts, "shape" | "draft">, opts: LoadOptions): MemoryPlan {
  const cpu = devices.find((d) => d.kind === "cpu");
  // num_gpu 0 keeps everything on the CPU; Ollama does not even look at the GPUs then.
  const gpus: GpuDevice[] =
    opts.numGpu === 0
      ? []
      : devices
          .filter((d) => d.kind === "gpu")
          .map((d) => ({ id: d.id, name: d.name, library: d.library ?? "gpu", totalBytes: d.totalBytes, freeBytes: d.freeBytes, ...(d.library === "metal" ? { minimumBytes: 512 * 1024 * 1024 } : {}) }));
  const input = {
    shape: facts.shape,
    numCtx: opts.numCtx,
    slots: opts.slots,
    numBatch: opts.numBatch,
    kvTypeK: opts.kvCacheTypeK as KvCacheType,
    kvTypeV: opts.kvCacheTypeV as KvCacheType,
    flashAttention: opts.flashAttention === true,
    numGpu: opts.numGpu,
    gpus,
    ram: { freeBytes: cpu?.freeBytes ?? 0, swapFreeBytes: cpu?.swapFreeBytes ?? 0 },
    gpuOverheadBytes: config.gpuOverhead,
    spread: config.schedSpread,
  };
  const plan = planMemory(input);
  return facts.draft && opts.draft ? withDraft(plan, input, facts.draft) : plan;
}
