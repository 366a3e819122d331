// Crafted GGUF headers (issue 13 rows 1, 2, 5, 6, 10): the metadata must be consistent with the
// tensors the file holds, and long arrays are bounded and read past, before anything is sized from
// them. Each file is the tiny generated model with one field changed.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GgufValueType, tensorBytes, writeGguf, type KvEntry, type TensorSpec } from "../../scripts/gguf-writer.js";
import { buildModel } from "../../scripts/make-test-model.js";
import { GgufError, ggufFacts, readGgufInfo } from "../../src/registry/gguf.js";
import { ggufArrayLength, ggufTokenText } from "../../src/registry/gguf-slim.js";
import { modelShape } from "../../src/backends/llamacpp/memory.js";

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gguf-bounds-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const u32 = (key: string, value: number): KvEntry => ({ key, type: GgufValueType.UINT32, value });
const u64 = (key: string, value: bigint): KvEntry => ({ key, type: GgufValueType.UINT64, value });
const u32s = (key: string, value: number[]): KvEntry => ({ key, type: GgufValueType.ARRAY, itemType: GgufValueType.UINT32, value });

/** Zero-filled data: only headers are read here. */
const zeros = (t: TensorSpec): TensorSpec => ({ ...t, data: () => [new Uint8Array(tensorBytes(t))] });

/** The tiny model with its KV list and tensors passed through `edit`. */
async function crafted(edit: (kvs: KvEntry[], tensors: TensorSpec[]) => { kvs: KvEntry[]; tensors: TensorSpec[] } | void): Promise<string> {
  const m = buildModel({ shape: "tiny", type: "Q8_0" });
  let kvs = m.kvs;
  let tensors = m.tensors.map(zeros);
  const r = edit(kvs, tensors);
  if (r) ({ kvs, tensors } = r);
  const path = join(dir, `m${n++}.gguf`);
  await writeGguf(path, kvs, tensors);
  return path;
}

const setKv = (e: KvEntry) => (kvs: KvEntry[]) => {
  const i = kvs.findIndex((k) => k.key === e.key);
  if (i >= 0) kvs[i] = e;
  else kvs.push(e);
};

async function refused(path: string, re: RegExp): Promise<void> {
  const err = await readGgufInfo(path).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(GgufError);
  expect((err as Error).message).toMatch(re);
}

describe("GGUF metadata checked against the tensors", () => {
  it("the unchanged model passes", async () => {
    const info = await readGgufInfo(await crafted(() => undefined));
    expect(ggufFacts(info)).toMatchObject({ blockCount: 2, headCount: 2, headCountKv: 1 });
  });

  it.each([
    ["2^32-16 as u32", u32("llama.block_count", 2 ** 32 - 16)],
    ["2^40 as u64", u64("llama.block_count", 2n ** 40n)],
    ["12 million", u32("llama.block_count", 12_000_000)],
    ["30 million", u32("llama.block_count", 30_000_000)],
    ["one more than the tensors hold", u32("llama.block_count", 3)],
    ["one less", u32("llama.block_count", 1)],
  ])("block_count %s is refused", async (_, e) => {
    await refused(await crafted(setKv(e)), /block_count/);
  });

  it("layer numbers in tensor names must be contiguous and bounded", async () => {
    await refused(await crafted((_, t) => { t.push({ ...t[1]!, name: "blk.9.attn_norm.weight" }); }), /layer 9/);
    await refused(await crafted((_, t) => { t.push({ ...t[1]!, name: "blk.99999999999.attn_norm.weight" }); }), /layer number/);
  });

  it("a per-layer head_count array must have one entry per layer (a 300k-element one is refused)", async () => {
    await refused(await crafted(setKv(u32s("llama.attention.head_count", new Array(300_000).fill(2)))), /"llama.attention.head_count" has 300000 elements; only tokenizer arrays/);
    await refused(await crafted(setKv(u32s("llama.attention.head_count", new Array(4000).fill(2)))), /has 4000 entries but the model has 2 layers/);
    await refused(await crafted(setKv(u32s("llama.attention.head_count", [2, 2, 2]))), /3 entries/);
    const ok = await readGgufInfo(await crafted(setKv(u32s("llama.attention.head_count", [2, 2]))));
    expect(ggufFacts(ok).headCount).toBe(2);
  });

  it.each([
    ["head_count 0", u32("llama.attention.head_count", 0), /head_count" is 0/],
    ["head_count_kv 0", u32("llama.attention.head_count_kv", 0), /head_count_kv" is 0/],
    ["heads not a multiple of kv heads", u32("llama.attention.head_count_kv", 3), /2 attention heads, not a multiple of its 3/],
    ["per-layer zero heads on an attention layer", u32s("llama.attention.head_count", [2, 0]), /layer 1/],
    ["more heads than the embedding is wide", u32("llama.attention.head_count", 128), /128 attention heads/],
    ["head_count 2^31", u32("llama.attention.head_count", 2 ** 31), /head_count/],
    ["embedding_length unlike token_embd", u32("llama.embedding_length", 128), /embedding_length" is 128 but token_embd.weight is 64 wide/],
    ["embedding_length 0", u32("llama.embedding_length", 0), /embedding_length/],
    ["context_length 0", u32("llama.context_length", 0), /context_length/],
    ["key_length 0", u32("llama.attention.key_length", 0), /key_length/],
    ["block_count as a string", { key: "llama.block_count", type: GgufValueType.STRING, value: "2" } as KvEntry, /block_count/],
    ["block_count as a float", { key: "llama.block_count", type: GgufValueType.FLOAT32, value: 2.5 } as KvEntry, /block_count/],
    // right values, wrong stored types: llama.cpp reads each with one exact type (fuzz case 804)
    ["head_count 2 as u64", u64("llama.attention.head_count", 2n), /"llama.attention.head_count" is stored as uint64; llama.cpp reads it only as uint32 or array of int32 or array of uint32/],
    ["context_length as u64", u64("llama.context_length", 256n), /"llama.context_length" is stored as uint64; llama.cpp reads it only as uint32/],
    ["head_count as a u8 array", { key: "llama.attention.head_count", type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: [2, 2] } as KvEntry, /stored as array of uint8/],
    ["rms epsilon as f64", { key: "llama.attention.layer_norm_rms_epsilon", type: GgufValueType.FLOAT64, value: 1e-5 } as KvEntry, /stored as float64; llama.cpp reads it only as float32/],
    ["bos token id as i32", { key: "tokenizer.ggml.bos_token_id", type: GgufValueType.INT32, value: 1 } as KvEntry, /"tokenizer.ggml.bos_token_id" is stored as int32/],
  ])("%s is refused", async (_, e, re) => {
    await refused(await crafted(setKv(e)), re);
  });

  it("vocabulary arrays must match token_embd and each other", async () => {
    await refused(await crafted((kvs) => {
      const i = kvs.findIndex((k) => k.key === "tokenizer.ggml.scores");
      kvs[i] = { key: "tokenizer.ggml.scores", type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32, value: [0, 1] };
    }), /scores" has 2 entries for 1024 tokens/);
    await refused(await crafted((kvs) => {
      const i = kvs.findIndex((k) => k.key === "tokenizer.ggml.tokens");
      kvs[i] = { key: "tokenizer.ggml.tokens", type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: ["a", "b"] };
    }), /vocabulary has 2 tokens but token_embd.weight has 1024 rows/);
  });
});

describe("long metadata arrays", () => {
  it("two 4,194,304-element u8 arrays outside the tokenizer are refused before they are read", async () => {
    const big = new Uint8Array(4_194_304);
    const path = await crafted((kvs) => {
      kvs.push({ key: "general.junk_a", type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: big });
      kvs.push({ key: "general.junk_b", type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: big });
    });
    await refused(path, /array "general.junk_a" \(uint8\) element count 4194304 .* exceeds the limit of 2097152/);
    const smaller = await crafted((kvs) => {
      kvs.push({ key: "general.junk_a", type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: new Uint8Array(100_000) });
    });
    await refused(smaller, /"general.junk_a" has 100000 elements; only tokenizer arrays may hold more than 65536/);
  });

  it("arrays beyond 2^21 elements are refused, in the tokenizer too", async () => {
    const path = await crafted((kvs) => {
      kvs.push({ key: "tokenizer.ggml.junk", type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, value: new Uint8Array(2 ** 21 + 1) });
    });
    await refused(path, /exceeds the limit of 2097152/);
  });

  it("a slim read skips long arrays (lengths and special tokens kept); a full read keeps them", async () => {
    const vocab = 5000;
    const tokens = Array.from({ length: vocab }, (_, i) => `tok${i}`);
    const path = await crafted((kvs, tensors) => {
      const set = (e: KvEntry) => setKv(e)(kvs);
      set({ key: "tokenizer.ggml.tokens", type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value: tokens });
      set({ key: "tokenizer.ggml.scores", type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32, value: new Array(vocab).fill(0) });
      set({ key: "tokenizer.ggml.token_type", type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, value: new Array(vocab).fill(1) });
      set(u32("tokenizer.ggml.bos_token_id", 4321));
      set(u32("llama.vocab_size", vocab));
      return {
        kvs,
        tensors: tensors.map((t) => (t.name === "token_embd.weight" || t.name === "output.weight" ? zeros({ ...t, dims: [64, vocab] }) : t)),
      };
    });
    const slim = await readGgufInfo(path);
    expect(slim.metadata["tokenizer.ggml.tokens"]).toEqual([]);
    expect(ggufArrayLength(slim, "tokenizer.ggml.tokens")).toBe(vocab);
    expect(ggufArrayLength(slim, "tokenizer.ggml.scores")).toBe(vocab);
    expect(ggufTokenText(slim, 4321)).toBe("tok4321");
    expect(ggufTokenText(slim, 4)).toBe("tok4"); // eos_token_id of the generated model
    expect(modelShape(slim).vocabSize).toBe(vocab);
    const full = await readGgufInfo(path, { arrays: "full" });
    expect(full.metadata["tokenizer.ggml.tokens"]).toEqual(tokens);
    expect(ggufTokenText(full, 4321)).toBe("tok4321");
  });
});
