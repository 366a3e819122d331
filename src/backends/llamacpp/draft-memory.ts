// The draft model's share of a memory plan (speculative decoding): its weights, the KV cache of
// one draft sequence per slot (the same context size as the model's, f16, no flash attention, as
// the runner creates it) and its compute graph. It goes whole onto the GPU that holds the whole
// model when that GPU has room left for it; otherwise it runs on the CPU. Never split: a
// drafted token that crossed devices would cost more than the draft saves, and a draft is small
// next to its model, so on the CPU it still drafts quickly.
import { graphBytes, kvBytesPerLayer, type MemoryPlan, type ModelShape, type PlanInput } from "./memory.js";

export interface DraftMemory {
  /** llama.cpp n_gpu_layers for the draft: every layer, or none. */
  gpuLayers: number;
  weightsBytes: number;
  kvBytes: number;
  graphBytes: number;
  /** What the draft adds to the GPU that holds it (0 on the CPU) and to system RAM. */
  vramBytes: number;
  ramBytes: number;
}

/** `plan` (the model's) with the draft's memory added: on its GPU or in RAM. */
export function withDraft(plan: MemoryPlan, input: PlanInput, draft: ModelShape): MemoryPlan {
  const tokens = input.numCtx * input.slots;
  const kv = kvBytesPerLayer(draft, tokens, "f16", "f16").reduce((a, b) => a + b, 0);
  const graph = graphBytes(draft, input.numCtx, input.slots, input.numBatch, false).full;
  const blocks = draft.layerBytes.reduce((a, b) => a + b, 0);
  const weights = blocks + draft.hostBytes + draft.outputHostBytes;
  // On a GPU: the blocks, the output layer (a copy of tied embeddings), its KV and graph there;
  // the token embeddings stay in host memory, as for any model.
  const onGpu = blocks + draft.outputBytes + kv + graph;
  const device = plan.fullOffload && plan.devices.length === 1 ? plan.devices[0] : undefined;
  const gpu = device ? input.gpus.find((g) => g.id === device.id) : undefined;
  const room = gpu && device ? gpu.freeBytes - input.gpuOverheadBytes - device.bytes : 0;
  const base = { weightsBytes: weights, kvBytes: kv, graphBytes: graph };
  if (device && room >= onGpu) {
    const d: DraftMemory = { ...base, gpuLayers: draft.blockCount + 1, vramBytes: onGpu, ramBytes: draft.hostBytes };
    return {
      ...plan,
      devices: plan.devices.map((x) => (x === device ? { ...x, bytes: x.bytes + onGpu } : x)),
      vramBytes: plan.vramBytes + onGpu,
      ramBytes: plan.ramBytes + d.ramBytes,
      totalBytes: plan.totalBytes + onGpu + d.ramBytes,
      fitsRam: plan.ramBytes + d.ramBytes <= plan.ramAvailableBytes,
      draft: d,
    };
  }
  const ram = weights + kv + graph;
  const d: DraftMemory = { ...base, gpuLayers: 0, vramBytes: 0, ramBytes: ram };
  return { ...plan, ramBytes: plan.ramBytes + ram, totalBytes: plan.totalBytes + ram, fitsRam: plan.ramBytes + ram <= plan.ramAvailableBytes, draft: d };
}
