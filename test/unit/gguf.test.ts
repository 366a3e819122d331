import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHATML_TEMPLATE, makeTestModel, SHAPES } from "../../scripts/make-test-model.js";
import { GgufError, ggufFacts, ggufModelInfo, humanNumber, readGgufInfo } from "../../src/registry/gguf.js";

const TYPES = ["F32", "F16", "Q8_0", "Q4_0"] as const;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gguf-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Little-endian byte builder for hand-crafted (mostly broken) GGUF files. */
class B {
  parts: Buffer[] = [];
  u32(v: number) { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.parts.push(b); return this; }
  u64(v: number | bigint) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.parts.push(b); return this; }
  raw(s: string | Buffer) { this.parts.push(Buffer.from(s)); return this; }
  str(s: string) { return this.u64(Buffer.byteLength(s)).raw(s); }
  /** magic, version, tensor count, kv count */
  head(tensors: number | bigint, kvs: number | bigint, version = 3) { return this.raw("GGUF").u32(version).u64(tensors).u64(kvs); }
  pad(to: number) { const n = this.buf().length; if (n < to) this.parts.push(Buffer.alloc(to - n)); return this; }
  buf() { return Buffer.concat(this.parts); }
}

async function write(name: string, data: Buffer | B): Promise<string> {
  const p = join(dir, name);
  await writeFile(p, data instanceof B ? data.buf() : data);
  return p;
}

async function rejects(path: string, re: RegExp): Promise<GgufError> {
  const err = await readGgufInfo(path).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(GgufError);
  expect((err as Error).message).toMatch(re);
  return err as GgufError;
}

const sha256 = async (p: string) => createHash("sha256").update(await readFile(p)).digest("hex");

describe("readGgufInfo on generated tiny models", () => {
  const s = SHAPES.tiny;
  const headDim = s.embd / s.heads;
  const perLayer = 2 * s.embd + 2 * s.embd * s.embd + 2 * s.embd * headDim * s.headsKv + 3 * s.embd * s.ffn;
  const expectedParams = 2 * s.embd * s.vocab + s.layers * perLayer + s.embd;

  it.each(TYPES)("%s: header, tensors and facts", async (type) => {
    const path = await makeTestModel({ type });
    const info = await readGgufInfo(path);
    expect(info.version).toBe(3);
    expect(info.fileSize).toBe((await stat(path)).size);
    expect(info.metadata["general.architecture"]).toBe("llama");
    expect(info.metadata["llama.attention.layer_norm_rms_epsilon"]).toBe(1e-5);
    expect(info.metadata["llama.context_length"]).toBe(4096);
    expect(info.metadata["tokenizer.ggml.eos_token_id"]).toBe(4);
    expect((info.metadata["tokenizer.ggml.tokens"] as string[]).slice(0, 5)).toEqual(["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]);
    expect(info.tensors).toHaveLength(1 + 9 * s.layers + 2);
    expect(info.dataOffset % 32).toBe(0);
    for (const t of info.tensors) {
      expect(t.typeName).toBe(t.dims.length === 1 ? "F32" : type);
      expect(t.offset % 32).toBe(0);
    }
    const last = info.tensors.at(-1)!;
    expect(info.dataOffset + last.offset + last.bytes).toBe(info.fileSize);

    const facts = ggufFacts(info);
    const sum = info.tensors.reduce((a, t) => a + t.dims.reduce((x, y) => x * y, 1), 0);
    expect(facts.parameterCount).toBe(sum);
    expect(facts.parameterCount).toBe(expectedParams);
    expect(facts).toMatchObject({
      architecture: "llama", family: "llama", quantizationLevel: type, parameterSize: humanNumber(expectedParams),
      contextLength: 4096, embeddingLength: 64, blockCount: 2, headCount: 2, headCountKv: 1,
      chatTemplate: CHATML_TEMPLATE, isEmbedding: false,
    });
    expect(facts.poolingType).toBeUndefined();
  });

  it("embedding variant has pooling_type 1", async () => {
    const facts = ggufFacts(await readGgufInfo(await makeTestModel({ type: "F32", embedding: true })));
    expect(facts.poolingType).toBe(1);
    expect(facts.isEmbedding).toBe(true);
  });

  it("model_info hides long arrays unless verbose", async () => {
    const info = await readGgufInfo(await makeTestModel({ type: "Q4_0" }));
    const mi = ggufModelInfo(info, false);
    expect(mi["tokenizer.ggml.tokens"]).toEqual([]);
    expect(mi["general.name"]).toBeUndefined();
    expect(mi["tokenizer.chat_template"]).toBeUndefined();
    expect(mi["general.parameter_count"]).toBe(expectedParams);
    expect(mi["general.architecture"]).toBe("llama");
    expect(mi["llama.rope.freq_base"]).toBe(10000);
    expect(Object.keys(mi)).toEqual([...Object.keys(mi)].sort());
    const verbose = ggufModelInfo(info, true);
    expect(verbose["tokenizer.ggml.tokens"]).toHaveLength(s.vocab);
    expect(() => JSON.stringify(verbose)).not.toThrow();
  });

  it("humanNumber matches Ollama's format.HumanNumber", () => {
    const cases: [number, string][] = [[0, "0"], [999, "999"], [1000, "1K"], [1001, "1K"], [136730, "137K"], [1e6, "1M"],
      [125e6, "125M"], [500.5e6, "500.50M"], [500.55e6, "500.55M"], [1e9, "1B"], [1_235_814_400, "1.2B"], [2.8e9, "2.8B"], [2.85e9, "2.9B"], [1e12, "1000B"]];
    for (const [n, want] of cases) expect(humanNumber(n), String(n)).toBe(want);
  });
});

describe("make-test-model determinism", () => {
  it("same seed gives byte-identical files, another seed differs, existing files are reused", async () => {
    const a = await makeTestModel({ seed: 7, outDir: join(dir, "a") });
    const b = await makeTestModel({ seed: 7, outDir: join(dir, "b") });
    const c = await makeTestModel({ seed: 8, outDir: join(dir, "a") });
    expect(a.endsWith("tiny-Q4_0-s7.gguf")).toBe(true);
    expect(c.endsWith("tiny-Q4_0-s8.gguf")).toBe(true);
    expect(await sha256(a)).toBe(await sha256(b));
    expect(await sha256(a)).not.toBe(await sha256(c));
    const before = (await stat(a)).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    expect(await makeTestModel({ seed: 7, outDir: join(dir, "a") })).toBe(a);
    expect((await stat(a)).mtimeMs).toBe(before);
  });
});

describe("readGgufInfo rejects bad files", () => {
  it("empty file", async () => {
    await rejects(await write("empty.gguf", Buffer.alloc(0)), /^not a GGUF file \(empty file\)$/);
  });

  it("bad magic", async () => {
    await rejects(await write("magic.gguf", new B().raw("GGML").u32(3).u64(0).u64(0)), /^not a GGUF file \(bad magic\)$/);
  });

  it("version 1 (and unknown versions)", async () => {
    await rejects(await write("v1.gguf", new B().head(0, 0, 1)), /version 1 is not supported/);
    await rejects(await write("v9.gguf", new B().head(0, 0, 9)), /version 9/);
  });

  it("versions 2 and 3 are accepted", async () => {
    for (const v of [2, 3]) {
      const info = await readGgufInfo(await write(`ok-v${v}.gguf`, new B().head(0, 1, v).str("general.architecture").u32(8).str("llama")));
      expect(info.version).toBe(v);
      expect(info.metadata["general.architecture"]).toBe("llama");
    }
  });

  it("huge KV count", async () => {
    await rejects(await write("kvcount.gguf", new B().head(0, 2n ** 60n).pad(256)), /KV count 1152921504606846976 .*only 232 remain/);
  });

  it("huge tensor count", async () => {
    await rejects(await write("tcount.gguf", new B().head(2n ** 40n, 0).pad(256)), /tensor count 1099511627776/);
  });

  it("string length beyond EOF", async () => {
    await rejects(await write("strlen.gguf", new B().head(0, 1).u64(2n ** 40n).raw("general.name")), /key of KV #0 at offset 24 declares length 1099511627776, only 12 bytes remain/);
    await rejects(await write("strval.gguf", new B().head(0, 1).str("general.name").u32(8).u64(1000).raw("abc")), /string value of "general.name" .* declares length 1000/);
  });

  it("array count beyond EOF", async () => {
    const f = new B().head(0, 1).str("tokenizer.ggml.scores").u32(9).u32(6).u64(1_000_000).raw(Buffer.alloc(64));
    await rejects(await write("arr.gguf", f), /array "tokenizer.ggml.scores" \(float32\) element count 1000000 .*needs at least 4000000 bytes/);
    const g = new B().head(0, 1).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(2n ** 62n).raw(Buffer.alloc(64));
    await rejects(await write("arr2.gguf", g), /array "tokenizer.ggml.tokens" \(string\) element count/);
  });

  it("unknown value types", async () => {
    await rejects(await write("vt.gguf", new B().head(0, 1).str("x").u32(13).u32(0)), /unknown value type 13 for key "x"/);
    await rejects(await write("avt.gguf", new B().head(0, 1).str("y").u32(9).u32(77).u64(0)), /unknown array element type 77 for key "y"/);
  });

  it("duplicate keys and bad alignment", async () => {
    await rejects(await write("dup.gguf", new B().head(0, 2).str("a").u32(4).u32(1).str("a").u32(4).u32(2)), /duplicate key "a"/);
    await rejects(await write("align.gguf", new B().head(0, 1).str("general.alignment").u32(4).u32(24)), /alignment 24 is not a power of 2/);
  });

  const tensorFile = (type: number, dims: number[], offset = 0, dataBytes = 64) => {
    const f = new B().head(1, 0).str("w").u32(dims.length);
    for (const d of dims) f.u64(d);
    f.u32(type).u64(offset);
    return f.pad(64).raw(Buffer.alloc(dataBytes)); // header is < 64 bytes: data section at 64
  };

  it("unknown tensor type, bad shapes, misaligned offsets", async () => {
    await rejects(await write("ttype.gguf", tensorFile(99, [4])), /unknown tensor type 99 for tensor "w"/);
    await rejects(await write("ttype4.gguf", tensorFile(4, [4])), /unknown tensor type 4 for tensor "w"/);
    await rejects(await write("dims.gguf", tensorFile(0, [1, 1, 1, 1, 1])), /tensor "w" has 5 dimensions/);
    await rejects(await write("block.gguf", tensorFile(2, [16, 2])), /not a multiple of the block size 32/);
    await rejects(await write("misalign.gguf", tensorFile(0, [4], 8)), /offset 8 is not a multiple of the alignment 32/);
    await rejects(await write("huge.gguf", tensorFile(0, [2 ** 20, 2 ** 20])), /tensor "w" needs 4398046511104 bytes/);
    await rejects(await write("huge2.gguf", tensorFile(0, [2 ** 30, 2 ** 30])), /tensor "w" has too many elements/);
    await rejects(await write("past.gguf", tensorFile(0, [4], 2 ** 40)), /truncated \(tensor "w" data ends at byte 1099511627856, file is 128 bytes\)/);
    const ok = await readGgufInfo(await write("t-ok.gguf", tensorFile(0, [16])));
    expect(ok.tensors).toEqual([{ name: "w", type: 0, typeName: "F32", dims: [16], offset: 0, bytes: 64 }]);
    expect(ok.dataOffset).toBe(64);
  });

  // ggml's gguf.cpp, which every llama.cpp load goes through, refuses these: found at create,
  // not as a bare "Failed to load model" at the first request
  it("what llama.cpp refuses: tensors out of order, apart or overlapping; an empty key; a 64-byte tensor name", async () => {
    const two = (a: number, b: number, name = "b") =>
      new B().head(2, 0).str("a").u32(1).u64(8).u32(0).u64(a).str(name).u32(1).u64(8).u32(0).u64(b).pad(128).raw(Buffer.alloc(128));
    const ok = await readGgufInfo(await write("order-ok.gguf", two(0, 32)));
    expect(ok.tensors.map((t) => [t.name, t.offset, t.bytes])).toEqual([["a", 0, 32], ["b", 32, 32]]);
    const layout = (name: string, at: number, want: number) => new RegExp(`^invalid GGUF file: tensor "${name}" data is at offset ${at} of the data section, not ${want}: tensors must follow one another in order, each padded to 32 bytes$`);
    await rejects(await write("order-gap.gguf", two(0, 64)), layout("b", 64, 32));
    await rejects(await write("order-swap.gguf", two(32, 0)), layout("a", 32, 0));
    await rejects(await write("order-overlap.gguf", two(0, 0)), layout("b", 0, 32));
    await rejects(await write("empty-key.gguf", new B().head(0, 1).str("").u32(4).u32(1)), /^invalid GGUF file: key of KV #0 is empty$/);
    const long = "n".repeat(64);
    await rejects(await write("long-name.gguf", two(0, 32, long)), new RegExp(`^invalid GGUF file: tensor name "${long}" is 64 bytes; llama\\.cpp takes at most 63$`));
    expect((await readGgufInfo(await write("name-63.gguf", two(0, 32, "n".repeat(63))))).tensors[1]!.name).toHaveLength(63);
  });

  it("a vocabulary stored as another type than llama.cpp reads: tokens as one string, scores as strings, a flag as a number", async () => {
    const arch = (b: B) => b.str("general.architecture").u32(8).str("llama");
    await rejects(await write("tokens-str.gguf", arch(new B().head(0, 2)).str("tokenizer.ggml.tokens").u32(8).str("\r\n")), /^invalid GGUF file: "tokenizer\.ggml\.tokens" is stored as string; llama\.cpp reads it only as array of string$/);
    const scores = arch(new B().head(0, 3)).str("tokenizer.ggml.tokens").u32(9).u32(8).u64(1).str("a").str("tokenizer.ggml.scores").u32(9).u32(8).u64(1).str("x");
    await rejects(await write("scores-str.gguf", scores), /^invalid GGUF file: "tokenizer\.ggml\.scores" is stored as array of string; llama\.cpp reads it only as array of float32 or array of int32$/);
    const flag = arch(new B().head(0, 2)).str("tokenizer.ggml.add_bos_token").u32(4).u32(1);
    await rejects(await write("add-bos-u32.gguf", flag), /^invalid GGUF file: "tokenizer\.ggml\.add_bos_token" is stored as uint32; llama\.cpp reads it only as bool$/);
  });

  it("a vocabulary with a token twice, which llama.cpp aborts on: read whole, and skipped in a slim read", async () => {
    const vocab = (tokens: string[]) => {
      const b = new B().head(0, 2).str("general.architecture").u32(8).str("llama").str("tokenizer.ggml.tokens").u32(9).u32(8).u64(tokens.length);
      for (const t of tokens) b.str(t);
      return b;
    };
    await rejects(await write("dup-small.gguf", vocab(["a", "▁call", "b", "▁call"])), /^invalid GGUF file: "tokenizer\.ggml\.tokens" holds the token "▁call" twice \(ids 1 and 3\); llama\.cpp refuses a vocabulary with a repeated token$/);
    const many = Array.from({ length: 6000 }, (_, i) => `t${i}`);
    expect((await readGgufInfo(await write("vocab-large.gguf", vocab(many)))).arrayLengths?.["tokenizer.ggml.tokens"]).toBe(6000);
    many[5999] = "t7";
    await rejects(await write("dup-large.gguf", vocab(many)), /^invalid GGUF file: "tokenizer\.ggml\.tokens" holds the token "t7" twice \(ids 7 and 5999\)/);
  });

  it("truncated files: 100 bytes, 50%, size-1", async () => {
    const full = await readFile(await makeTestModel({ type: "Q4_0" }));
    const info = await readGgufInfo(await makeTestModel({ type: "Q4_0" }));
    await rejects(await write("t100.gguf", full.subarray(0, 100)), /truncated.*file is 100 bytes/);
    const half = Math.floor(full.length / 2);
    expect(half).toBeGreaterThan(info.dataOffset); // cut inside the tensor data
    await rejects(await write("t50.gguf", full.subarray(0, half)), new RegExp(`^invalid GGUF file: truncated \\(tensor "[^"]+" data ends at byte \\d+, file is ${half} bytes\\)$`));
    const last = info.tensors.at(-1)!;
    await rejects(await write("tm1.gguf", full.subarray(0, full.length - 1)),
      new RegExp(`^invalid GGUF file: truncated \\(tensor "${last.name}" data ends at byte ${full.length}, file is ${full.length - 1} bytes\\)$`));
    // cut in the middle of the metadata (the token list)
    await rejects(await write("tmeta.gguf", full.subarray(0, 5000)), /truncated/);
  });
});
