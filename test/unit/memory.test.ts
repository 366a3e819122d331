// The memory planner on simulated devices. Expected numbers were worked out by hand from the
// formulas in memory.ts (Ollama's estimator): weights per block, KV per block
// (ctx x slots x kv_heads x head_dim x (bytesK + bytesV)), the graph estimate, 457 MiB minimum
// per GPU, one block held back as a buffer, and blocks placed from the last one down.
import { describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { readGgufInfo } from "../../src/registry/gguf.js";
import {
  graphBytes,
  humanBytes2,
  kvBytesPerLayer,
  modelShape,
  planMemory,
  ramShortMessage,
  type GpuDevice,
  type ModelShape,
  type PlanInput,
} from "../../src/backends/llamacpp/memory.js";

const GiB = 1024 ** 3;
const Q4_0 = 18 / 32; // bytes per weight

/** A llama-architecture shape: q/o are e x e, k/v e x kvDim, gate/up/down e x ffn; two f32 norms. */
function llama(layers: number, e: number, heads: number, headsKv: number, ffn: number, vocab: number): ModelShape {
  const d = e / heads;
  const kvDim = d * headsKv;
  const block = Math.round((2 * e * e + 2 * e * kvDim + 3 * e * ffn) * Q4_0) + 2 * e * 4;
  const embd = Math.round(e * vocab * Q4_0);
  return {
    architecture: "llama",
    blockCount: layers,
    layerBytes: Array(layers).fill(block),
    outputBytes: embd + e * 4,
    outputHostBytes: embd + e * 4,
    hostBytes: embd,
    embeddingLength: e,
    headCount: heads,
    headCountKv: Array(layers).fill(headsKv),
    headDimK: d,
    headDimV: d,
    vocabSize: vocab,
  };
}

// Llama-3.1-8B, Llama-3.1-70B, Llama-3.2-1B and Qwen2.5-14B layer shapes, Q4_0.
const B8 = llama(32, 4096, 32, 8, 14336, 128256); // block 122,716,160 B; output 295,518,208 B
const B70 = llama(80, 8192, 64, 8, 28672, 128256); // block 481,361,920 B; output 591,036,416 B
const B1 = llama(16, 2048, 32, 8, 8192, 128256); // block 34,226,176 B
const B14 = llama(48, 5120, 40, 8, 13824, 152064); // block 154,869,760 B

const gpu = (gib: number, id = "0"): GpuDevice => ({ id, library: "cuda", totalBytes: gib * GiB, freeBytes: gib * GiB });

function plan(shape: ModelShape, over: Partial<PlanInput>) {
  return planMemory({
    shape,
    numCtx: 4096,
    slots: 1,
    numBatch: 512,
    kvTypeK: "f16",
    kvTypeV: "f16",
    flashAttention: false,
    numGpu: -1,
    gpus: [],
    ram: { freeBytes: 64 * GiB },
    gpuOverheadBytes: 0,
    ...over,
  });
}

describe("shape facts", () => {
  it("the 8B shape's block and output sizes", () => {
    expect(B8.layerBytes[0]).toBe(122_716_160); // 218,103,808 weights x 18/32 + 2 x 4096 x 4
    expect(B8.outputBytes).toBe(295_518_208);
  });

  it("KV bytes per layer follow the K and V types (real ggml block sizes)", () => {
    // 4096 tokens x 8 KV heads x 128 x (2 + 2) bytes = 16 MiB
    expect(kvBytesPerLayer(B8, 4096, "f16", "f16")[0]).toBe(16 * 1024 * 1024);
    // q8_0 keys (34/32) and q4_0 values (18/32): 4096 x 8 x 128 x (1.0625 + 0.5625) = 6.5 MiB
    expect(kvBytesPerLayer(B8, 4096, "q8_0", "q4_0")[0]).toBe(6_815_744);
  });

  it("graph estimate: Ollama's llama formula; flash attention drops the score matrix", () => {
    // full = max(4*512*(1 + 16384 + 4096*33), 4*512*(4096 + 128256)) = 310,380,544
    // partial = 4*512*4096 + max(2048*8193 + 4096^2*9/16 + 16384*(16384 + 1024), 2048*132352 + 4096*128256*105/128)
    expect(graphBytes(B8, 4096, 1, 512, false)).toEqual({ full: 310_380_544, partial: 710_385_664 });
    // with flash attention, at 32K: full = max(2048*(1 + 16384 + 32768), 271,056,896)
    expect(graphBytes(B8, 32768, 1, 512, true).full).toBe(271_056_896);
  });
});

describe("one GPU", () => {
  it("8 GB, 8B at 4K context: every block and the output go to the GPU", () => {
    const p = plan(B8, { gpus: [gpu(8)] });
    expect(p.gpuLayers).toBe(33);
    expect(p.fullOffload).toBe(true);
    expect(p.fitsGpu).toBe(true);
    // 457 MiB + buffer block (139,493,376) + 32 blocks + output + full graph
    expect(p.vramBytes).toBe(5_688_379_392);
    expect(p.ramBytes).toBe(295_501_824); // the token embeddings stay in RAM
    expect(p.devices).toEqual([{ id: "0", layers: 33, bytes: 5_688_379_392 }]);
  });

  it("8 GB, 8B at 32K context: fits only without its 4 GiB KV cache, so 21 of 33 layers go", () => {
    // block + KV = 122,716,160 + 134,217,728 = 256,933,888; room for blocks =
    // 8 GiB - partial graph 2,375,026,688 - (457 MiB + one buffer block) = 5,478,774,784 -> 21 blocks
    const p = plan(B8, { numCtx: 32768, gpus: [gpu(8)] });
    expect(p.kvBytes).toBe(4 * GiB);
    expect(p.gpuLayers).toBe(21);
    expect(p.fullOffload).toBe(false);
    expect(p.fitsGpu).toBe(false);
    expect(p.vramBytes).toBe(8_506_771_456);
    // 11 blocks with their KV, the output layer and the embeddings stay in RAM
    expect(p.ramBytes).toBe(295_501_824 + 11 * 256_933_888 + 295_518_208);
    expect(p.totalBytes).toBe(p.vramBytes + p.ramBytes);
  });

  it("8 GB, 8B at 32K context with flash attention and a q8_0 cache fits again", () => {
    const p = plan(B8, { numCtx: 32768, gpus: [gpu(8)], flashAttention: true, kvTypeK: "q8_0", kvTypeV: "q8_0" });
    expect(p.kvBytes).toBe(32 * 71_303_168);
    expect(p.gpuLayers).toBe(33);
    expect(p.vramBytes).toBe(7_448_412_160);
  });

  it("16 GB, 14B at 8K: one slot fits; four slots (32K of KV) leave 3 layers on the CPU", () => {
    const one = plan(B14, { numCtx: 8192, gpus: [gpu(16)] });
    expect(one.gpuLayers).toBe(49);
    expect(one.vramBytes).toBe(10_879_760_384);
    const four = plan(B14, { numCtx: 8192, slots: 4, gpus: [gpu(16)] });
    expect(four.kvBytes).toBe(6 * GiB);
    expect(four.gpuLayers).toBe(46);
    expect(four.vramBytes).toBe(16_987_711_488);
  });

  it("24 GB, 70B: a partial split, 47 of 81 layers", () => {
    const p = plan(B70, { gpus: [gpu(24)] });
    expect(p.gpuLayers).toBe(47);
    expect(p.vramBytes).toBe(25_547_980_800);
    expect(p.ramBytes).toBe(17_620_631_552);
  });

  it("80 GB, 70B at 4K fits whole", () => {
    const p = plan(B70, { gpus: [gpu(80)] });
    expect(p.gpuLayers).toBe(81);
    expect(p.vramBytes).toBe(42_031_876_096);
  });

  it("num_gpu is honoured: 10 layers on a GPU that could take them all", () => {
    const p = plan(B8, { gpus: [gpu(24)], numGpu: 10 });
    expect(p.gpuLayers).toBe(10);
    expect(p.wantedGpuLayers).toBe(10);
    expect(p.fitsGpu).toBe(true);
    expect(p.vramBytes).toBe(2_724_012_032); // 457 MiB + buffer + 10 blocks + partial graph
    expect(p.ramBytes).toBe(3_659_874_304);
  });

  it("num_gpu 0 and too small a GPU both mean the CPU", () => {
    expect(plan(B8, { gpus: [gpu(24)], numGpu: 0 }).gpuLayers).toBe(0);
    const tiny = plan(B8, { gpus: [gpu(1)] });
    expect(tiny.gpuLayers).toBe(0);
    expect(tiny.devices).toEqual([]);
    expect(tiny.ramBytes).toBe(5_365_188_608);
  });

  it("OLLAMA_GPU_OVERHEAD is reserved on each GPU", () => {
    // 8B at 32K on 8 GB: 21 layers without overhead; 1 GiB less room -> 5,478,774,784 - 1 GiB = 4,405,032,960 -> 17 blocks
    expect(plan(B8, { numCtx: 32768, gpus: [gpu(8)], gpuOverheadBytes: GiB }).gpuLayers).toBe(17);
  });
});

describe("two GPUs", () => {
  it("2 x 24 GB, 70B: needs both, layers alternate (41 + 40)", () => {
    const p = plan(B70, { gpus: [gpu(24, "0"), gpu(24, "1")] });
    expect(p.gpuLayers).toBe(81);
    expect(p.devices).toEqual([
      { id: "0", layers: 41, bytes: 22_652_043_264 },
      { id: "1", layers: 40, bytes: 22_061_006_848 },
    ]);
  });

  it("2 x 80 GB, 1B with 4 slots: the fewest GPUs that hold it (one); SCHED_SPREAD uses both", () => {
    const gpus = [gpu(80, "0"), gpu(80, "1")];
    const packed = plan(B1, { slots: 4, gpus });
    expect(packed.devices).toEqual([{ id: "0", layers: 17, bytes: 2_903_304_192 }]);
    const spread = plan(B1, { slots: 4, gpus, spread: true });
    expect(spread.devices.map((d) => d.layers)).toEqual([9, 8]);
    expect(spread.vramBytes).toBe(4_629_409_792);
  });

  it("2 x 80 GB, 70B at 32K x 4 slots (40 GiB of KV): split over both", () => {
    const p = plan(B70, { numCtx: 32768, slots: 4, gpus: [gpu(80, "0"), gpu(80, "1")] });
    expect(p.kvBytes).toBe(40 * GiB);
    expect(p.gpuLayers).toBe(81);
    expect(p.devices.map((d) => d.layers)).toEqual([41, 40]);
  });

  it("24 GB + 8 GB, 70B: the bigger GPU first, the rest on the CPU", () => {
    const p = plan(B70, { gpus: [gpu(8, "small"), gpu(24, "big")] });
    expect(p.gpuLayers).toBe(59);
    expect(p.devices).toEqual([
      { id: "big", layers: 47, bytes: 25_547_980_800 },
      { id: "small", layers: 12, bytes: 8_113_111_040 },
    ]);
    expect(p.ramBytes).toBe(11_642_961_920);
  });
});

describe("CPU only (this machine)", () => {
  it("no GPU: 0 layers, everything in RAM, and the RAM check", () => {
    const p = plan(B8, { ram: { freeBytes: 4 * GiB } });
    expect(p.gpuLayers).toBe(0);
    expect(p.fitsGpu).toBe(true);
    // embeddings + 32 x (block + KV) + output + full graph
    expect(p.ramBytes).toBe(295_501_824 + 32 * 139_493_376 + 295_518_208 + 310_380_544);
    expect(p.fitsRam).toBe(false);
    expect(ramShortMessage(p)).toBe("model requires more system memory (5.0 GiB) than is available (4.0 GiB)");
    expect(plan(B8, { ram: { freeBytes: 4 * GiB, swapFreeBytes: 2 * GiB } }).fitsRam).toBe(true);
  });

  it("the tiny test model's shape from its GGUF header plans 0 GPU layers", async () => {
    const info = await readGgufInfo(await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }));
    const s = modelShape(info);
    expect(s).toMatchObject({ architecture: "llama", blockCount: 2, headCount: 2, headCountKv: [1, 1], headDimK: 32, headDimV: 32, vocabSize: 1024, embeddingLength: 64 });
    const blocks = info.tensors.filter((t) => t.name.startsWith("blk.")).reduce((a, t) => a + t.bytes, 0);
    expect(s.layerBytes.reduce((a, b) => a + b, 0)).toBe(blocks);
    const all = info.tensors.reduce((a, t) => a + t.bytes, 0);
    expect(s.hostBytes + blocks + s.outputHostBytes).toBe(all);
    const p = planMemory({ shape: s, numCtx: 2048, slots: 4, numBatch: 512, kvTypeK: "f16", kvTypeV: "f16", flashAttention: false, numGpu: -1, gpus: [], ram: { freeBytes: 8 * GiB }, gpuOverheadBytes: 0 });
    expect(p.gpuLayers).toBe(0);
    expect(p.vramBytes).toBe(0);
    expect(p.kvBytes).toBe(2 * 8192 * 1 * 32 * 4); // 2 layers x 8192 tokens x 1 head x 32 x (2 + 2)
    expect(p.fitsRam).toBe(true);
  });

  it("humanBytes2 is Ollama's", () => {
    expect(humanBytes2(512)).toBe("512 B");
    expect(humanBytes2(1536)).toBe("1.5 KiB");
    expect(humanBytes2(5 * 1024 * 1024)).toBe("5.0 MiB");
  });
});
