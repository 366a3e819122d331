// Speculative decoding's pure parts: which draft a create accepts (vocabulary and kind), what a
// request asks of a runner (draft, prompt lookup, draft_num_predict, Ollama's defaults) and when
// that forces a reload, and where the memory plan puts the draft.
import { describe, expect, it } from "vitest";
import { buildModel } from "../../scripts/make-test-model.js";
import type { RunnerOptions } from "../../src/backends/backend.js";
import { withDraft } from "../../src/backends/llamacpp/draft-memory.js";
import { modelShape, planMemory, type GpuDevice, type ModelShape, type PlanInput } from "../../src/backends/llamacpp/memory.js";
import { DEFAULT_DRAFT_NUM_PREDICT, loadOptionsFor, needsReload } from "../../src/backends/llamacpp/placement.js";
import { loadConfig } from "../../src/config.js";
import { resolveOptions } from "../../src/daemon/options.js";
import { draftKindRefusal, vocabularyDifference } from "../../src/registry/draft-check.js";
import type { GgufInfo, GgufValue } from "../../src/registry/gguf.js";
import type { GgufSource } from "../../src/registry/model-spec.js";
import { tensorBytes, type KvEntry, type TensorSpec } from "../../scripts/gguf-writer.js";

/** A test model's header as the reader would give it (metadata only; no file needed). */
function header(opts: Parameters<typeof buildModel>[0], edit: (md: Record<string, GgufValue>) => void = () => {}): GgufInfo {
  const { kvs } = buildModel(opts);
  const metadata: Record<string, GgufValue> = {};
  for (const e of kvs as KvEntry[]) metadata[e.key] = (typeof e.value === "object" ? Array.from(e.value as Iterable<string | number>) : e.value) as GgufValue;
  edit(metadata);
  return { version: 3, metadata, types: {}, tensors: [], dataOffset: 0, fileSize: 0 };
}

describe("a draft's vocabulary", () => {
  const model = header({ shape: "tiny", seed: 1 });

  it("matches a draft made with the same tokenizer, whatever its weights or layers", () => {
    expect(vocabularyDifference(model, header({ shape: "tiny", seed: 7, layers: 1 }))).toBeUndefined();
  });

  it("differs in size", () => {
    expect(vocabularyDifference(model, header({ shape: "small" }))).toBe("4096 tokens in the draft, 1024 in the model");
  });

  it("differs in one token of the same count", () => {
    const draft = header({ shape: "tiny" }, (md) => {
      const tokens = [...(md["tokenizer.ggml.tokens"] as string[])];
      tokens[700] = "zzz";
      md["tokenizer.ggml.tokens"] = tokens;
    });
    expect(vocabularyDifference(model, draft)).toMatch(/^token 700 is "zzz" in the draft, ".+" in the model$/);
  });

  it("differs in its special tokens or tokenizer", () => {
    expect(vocabularyDifference(model, header({ shape: "tiny" }, (md) => (md["tokenizer.ggml.eos_token_id"] = 2)))).toBe("EOS token 2 in the draft, 4 in the model");
    expect(vocabularyDifference(model, header({ shape: "tiny" }, (md) => (md["tokenizer.ggml.model"] = "gpt2")))).toBe('tokenizer "gpt2" in the draft, "llama" in the model');
    expect(vocabularyDifference(model, header({ shape: "tiny" }, (md) => delete md["tokenizer.ggml.add_bos_token"]))).toBe("add_bos_token unset in the draft, true in the model");
  });

  it("refuses a draft that is no text-generation model", () => {
    expect(draftKindRefusal(header({ shape: "tiny" }))).toBeUndefined();
    expect(draftKindRefusal(header({ shape: "tiny", embedding: true }))).toBe("the draft must be a text-generation model, not an embedding model");
    expect(draftKindRefusal(header({ shape: "tiny" }, (md) => (md["general.type"] = "adapter")))).toBe("the draft must be a model, not an adapter");
  });
});

const config = loadConfig({});
const source = (draft?: string, isEmbedding = false): GgufSource =>
  ({
    kind: "gguf",
    path: "/blobs/model",
    digest: "sha256:0",
    adapters: [],
    gguf: {} as GgufInfo,
    facts: { contextLength: 4096, isEmbedding },
    ...(draft ? { draft: { path: draft, digest: "sha256:1", gguf: {} as GgufInfo } } : {}),
  }) as unknown as GgufSource;
const kv = { flashAttention: false, typeK: "f16", typeV: "f16", warnings: [] } as never;
const runner = (o: Record<string, unknown> = {}): RunnerOptions => resolveOptions({ numCtx: 2048, cores: 2 }, undefined, o).runner;

describe("what a request asks of a runner", () => {
  it("a model with a draft drafts 4 tokens (Ollama's default), or draft_num_predict", () => {
    expect(loadOptionsFor(config, source("/blobs/draft"), runner(), kv)).toMatchObject({ draft: "/blobs/draft", draftNumPredict: DEFAULT_DRAFT_NUM_PREDICT, draftMinConfidence: 0.6 });
    expect(loadOptionsFor(config, source("/blobs/draft"), runner({ draft_num_predict: 2 }), kv)).toMatchObject({ draft: "/blobs/draft", draftNumPredict: 2 });
    // 0 turns it off: the draft is not even loaded
    const off = loadOptionsFor(config, source("/blobs/draft"), runner({ draft_num_predict: 0 }), kv);
    expect(off.draft).toBeUndefined();
    expect(off.draftNumPredict).toBeUndefined();
  });

  it("a model without one has none, unless prompt_lookup asks for it; a draft wins over it", () => {
    const plain = loadOptionsFor(config, source(), runner({ draft_num_predict: 8 }), kv);
    expect([plain.draft, plain.promptLookup, plain.draftNumPredict]).toEqual([undefined, undefined, undefined]);
    expect(loadOptionsFor(config, source(), runner({ prompt_lookup: true }), kv)).toMatchObject({ promptLookup: true, draftNumPredict: 4 });
    expect(loadOptionsFor(config, source("/d"), runner({ prompt_lookup: true }), kv).promptLookup).toBeUndefined();
    expect(loadOptionsFor(config, source(undefined, true), runner({ prompt_lookup: true }), kv).promptLookup).toBeUndefined();
  });

  it("a different draft, draft_num_predict or prompt_lookup reloads the runner; the same does not", () => {
    const load = (src: GgufSource, o: Record<string, unknown> = {}) => loadOptionsFor(config, src, runner(o), kv);
    const base = load(source("/d"));
    expect(needsReload(base, load(source("/d")))).toBe(false);
    expect(needsReload(base, load(source("/d"), { draft_num_predict: 4 }))).toBe(false);
    expect(needsReload(base, load(source("/d"), { draft_num_predict: 5 }))).toBe(true);
    expect(needsReload(base, load(source("/other")))).toBe(true);
    expect(needsReload(base, load(source()))).toBe(true);
    expect(needsReload(load(source()), load(source(), { prompt_lookup: true }))).toBe(true);
    // set but meaningless without a draft or prompt lookup: no reload
    expect(needsReload(load(source()), load(source(), { draft_num_predict: 9 }))).toBe(false);
  });

  it("one slot for recurrent and hybrid architectures and Ollama's one-slot families, OLLAMA_NUM_PARALLEL slots for the rest", () => {
    const four = loadConfig({ OLLAMA_NUM_PARALLEL: "4" });
    const arch = (architecture: string, isEmbedding = false) => ({ ...source(undefined, isEmbedding), facts: { contextLength: 4096, isEmbedding, architecture, family: architecture } }) as GgufSource;
    for (const a of ["mamba", "mamba2", "jamba", "rwkv7", "granitehybrid", "lfm2", "qwen3next", "nemotron_h", "mllama"]) expect(loadOptionsFor(four, arch(a), runner(), kv).slots, a).toBe(1);
    for (const a of ["llama", "qwen3", "gemma3"]) expect(loadOptionsFor(four, arch(a), runner(), kv).slots, a).toBe(4);
    expect(loadOptionsFor(four, arch("bert", true), runner(), kv).slots).toBe(1);
  });

  it("bounds draft_num_predict and types prompt_lookup", () => {
    expect(runner({ draft_num_predict: 1000 }).draftNumPredict).toBe(64);
    expect(runner({ draft_num_predict: -3 }).draftNumPredict).toBe(0);
    expect(runner().draftNumPredict).toBeUndefined();
    expect(() => runner({ prompt_lookup: "yes" })).toThrow('option "prompt_lookup" must be of type boolean');
  });
});

describe("the draft in the memory plan", () => {
  const GiB = 1024 ** 3;
  const target = modelShape({ ...header({ shape: "small" }), tensors: buildModel({ shape: "small" }).tensors.map(tensorInfo) });
  const draft = modelShape({ ...header({ shape: "small", layers: 1 }), tensors: buildModel({ shape: "small", layers: 1 }).tensors.map(tensorInfo) });
  const input = (gpus: GpuDevice[]): PlanInput => ({
    shape: target,
    numCtx: 2048,
    slots: 2,
    numBatch: 512,
    kvTypeK: "f16",
    kvTypeV: "f16",
    flashAttention: false,
    numGpu: -1,
    gpus,
    ram: { freeBytes: 64 * GiB },
    gpuOverheadBytes: 0,
  });

  it("goes whole onto the GPU that holds the whole model when there is room", () => {
    const i = input([{ id: "0", library: "cuda", totalBytes: 24 * GiB, freeBytes: 24 * GiB }]);
    const base = planMemory(i);
    const p = withDraft(base, i, draft);
    expect(p.draft?.gpuLayers).toBe(draft.blockCount + 1);
    expect(p.vramBytes - base.vramBytes).toBe(p.draft?.vramBytes);
    expect(p.devices[0]?.bytes).toBe((base.devices[0]?.bytes ?? 0) + (p.draft?.vramBytes ?? 0));
    // its KV cache: one f16 sequence of 2048 tokens per slot, every layer
    expect(p.draft?.kvBytes).toBe(2048 * 2 * draft.headCountKv[0]! * (draft.headDimK + draft.headDimV) * 2);
    expect(p.ramBytes - base.ramBytes).toBe(draft.hostBytes);
  });

  it("runs on the CPU when the model is not whole on one GPU, or the GPU has no room left", () => {
    for (const gpus of [[], [{ id: "0", library: "cuda", totalBytes: GiB, freeBytes: 0.5 * GiB } satisfies GpuDevice]]) {
      const i = input(gpus);
      const base = planMemory(i);
      const p = withDraft(base, i, draft);
      expect(p.draft?.gpuLayers).toBe(0);
      expect(p.vramBytes).toBe(base.vramBytes);
      const d = p.draft!;
      expect(p.ramBytes - base.ramBytes).toBe(d.weightsBytes + d.kvBytes + d.graphBytes);
      expect(p.totalBytes - base.totalBytes).toBe(p.ramBytes - base.ramBytes);
    }
  });

  it("does not fit when RAM cannot hold it too", () => {
    const i = { ...input([]), ram: { freeBytes: 0 } };
    const base = { ...planMemory(i), fitsRam: true, ramAvailableBytes: planMemory(i).ramBytes };
    expect(withDraft(base, i, draft).fitsRam).toBe(false);
  });
});

/** A generated tensor's info as the GGUF reader reports it (sizes only). */
function tensorInfo(t: TensorSpec): GgufInfo["tensors"][number] {
  return { name: t.name, type: 0, typeName: t.type, dims: t.dims, offset: 0, bytes: tensorBytes(t) };
}
