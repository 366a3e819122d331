// The pieces of the safetensors converter on their own: the q/k row order, the tokenizer's
// GGUF metadata from tokenizer.json or a SentencePiece model, and safetensors header checks.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KvEntry } from "../../src/registry/gguf-write.js";
import { repackRows } from "../../src/registry/hf-convert.js";
import { tokenizerKvs } from "../../src/registry/hf-tokenizer.js";
import { readSafetensors } from "../../src/registry/safetensors.js";
import { sentencePieceModel, unpermute } from "../helpers/hf-export.js";

const kvMap = (kvs: KvEntry[]) => Object.fromEntries(kvs.map((k) => [k.key, Array.isArray(k.value) || ArrayBuffer.isView(k.value) ? Array.from(k.value as ArrayLike<unknown>) : k.value]));

describe("q/k rows", () => {
  it("llama.cpp's order from Hugging Face's, per head: first halves and second halves of the rotary pairs side by side", () => {
    // 2 heads of 4 rows, rows of 1 value: HF [a0 a1 b0 b1 | c0 c1 d0 d1] → [a0 b0 a1 b1 | c0 d0 c1 d1]
    const hf = Float32Array.from([10, 11, 20, 21, 30, 31, 40, 41]);
    expect(Array.from(repackRows(hf, 8, 1, 2))).toEqual([10, 20, 11, 21, 30, 40, 31, 41]);
    // and the exporter's inverse gives back what it was given, for wider rows and more heads
    const rows = 24;
    const rowLen = 5;
    const v = Float32Array.from({ length: rows * rowLen }, (_, i) => i);
    const back = unpermute(Buffer.from(repackRows(v, rows, rowLen, 3).buffer), rows, rowLen * 4, 3);
    expect(Array.from(new Float32Array(back.buffer, back.byteOffset, rows * rowLen))).toEqual(Array.from(v));
  });
});

describe("tokenizer metadata", () => {
  const LLAMA3 = String.raw`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`;
  const bpe = (extra: object = {}) => ({
    added_tokens: [{ id: 4, content: "<|end|>", special: true }, { id: 6, content: "<tool>", special: false }],
    pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "Split", pattern: { Regex: LLAMA3 } }, { type: "ByteLevel" }] },
    model: { type: "BPE", vocab: { a: 0, b: 1, ab: 2, "Ġa": 3, c: 5 }, merges: [["a", "b"], "Ġ a"] },
    ...extra,
  });

  it("byte-level BPE: tokens by id (a hole kept as a placeholder), types, merges of either form, the pre-tokenizer by its pattern", () => {
    const { kvs, vocabSize } = tokenizerKvs({ tokenizerJson: bpe(), tokenizerConfig: { bos_token: "a", eos_token: { content: "<|end|>" }, add_bos_token: true, chat_template: "{{ x }}" } });
    const m = kvMap(kvs);
    expect(vocabSize).toBe(7);
    expect(m["tokenizer.ggml.model"]).toBe("gpt2");
    expect(m["tokenizer.ggml.pre"]).toBe("llama-bpe");
    expect(m["tokenizer.ggml.tokens"]).toEqual(["a", "b", "ab", "Ġa", "<|end|>", "c", "<tool>"]);
    expect(m["tokenizer.ggml.token_type"]).toEqual([1, 1, 1, 1, 3, 1, 4]);
    expect(m["tokenizer.ggml.merges"]).toEqual(["a b", "Ġ a"]);
    expect(m["tokenizer.chat_template"]).toBe("{{ x }}");
    expect(m).toMatchObject({ "tokenizer.ggml.eos_token_id": 4, "tokenizer.ggml.add_eos_token": false, "tokenizer.ggml.bos_token_id": 0, "tokenizer.ggml.add_bos_token": true });
    // ids 1, 3 and 5 unused: placeholders (type unused) keep the others in place; config.json's larger vocab_size pads the end
    const holes = tokenizerKvs({ tokenizerJson: bpe({ model: { type: "BPE", vocab: { a: 0, c: 2 }, merges: [] } }) }, 9);
    expect(kvMap(holes.kvs)["tokenizer.ggml.tokens"]).toEqual(["a", "[UNUSED1]", "c", "[UNUSED3]", "<|end|>", "[UNUSED5]", "<tool>", "[PAD0]", "[PAD1]"]);
    expect(holes.vocabSize).toBe(9);
  });

  it("chat templates: named ones (Command R's tool_use) as llama.cpp's converter writes them; chat_template.json, then chat_template.jinja replace the default", () => {
    const named = kvMap(
      tokenizerKvs({ tokenizerJson: bpe(), tokenizerConfig: { chat_template: [{ name: "default", template: "D" }, { name: "tool_use", template: "T" }, { name: "rag", template: "R" }, { name: "../x", template: "bad name" }] } }).kvs,
    );
    expect(named["tokenizer.chat_template"]).toBe("D");
    expect(named["tokenizer.chat_template.tool_use"]).toBe("T");
    expect(named["tokenizer.chat_template.rag"]).toBe("R");
    expect(named["tokenizer.chat_templates"]).toEqual(["tool_use", "rag"]);
    expect(Object.keys(named).filter((k) => k.includes("x"))).toEqual([]);
    const files = { tokenizerJson: bpe(), tokenizerConfig: { chat_template: "config" }, chatTemplateJson: { chat_template: "json file" } };
    expect(kvMap(tokenizerKvs(files).kvs)["tokenizer.chat_template"]).toBe("json file");
    expect(kvMap(tokenizerKvs({ ...files, chatTemplateJinja: "jinja file" }).kvs)["tokenizer.chat_template"]).toBe("jinja file");
    expect(kvMap(tokenizerKvs({ tokenizerJson: bpe(), chatTemplateJinja: "only jinja" }).kvs)["tokenizer.chat_template"]).toBe("only jinja");
    expect(() => tokenizerKvs({ tokenizerJson: bpe(), chatTemplateJson: { chat_template: 7 } })).toThrow("chat_template.json: invalid chat_template");
  });

  it("names qwen2's pre-tokenizer, and the default for one it does not know", () => {
    const qwen = LLAMA3.replace(String.raw`\p{N}{1,3}`, String.raw`\p{N}`);
    const pre = (regex: string) => kvMap(tokenizerKvs({ tokenizerJson: bpe({ pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "Split", pattern: { Regex: regex } }] } }) }).kvs)["tokenizer.ggml.pre"];
    expect(pre(qwen)).toBe("qwen2");
    expect(pre("\\s+")).toBe("default");
  });

  it("WordPiece: phantom-space pieces (word starts get ▁, continuations lose ##), [CLS] as the start and [SEP] as the end of every input", () => {
    const wordPiece = { added_tokens: [{ id: 0, content: "[PAD]", special: true }, { id: 1, content: "[CLS]", special: true }, { id: 2, content: "[SEP]", special: true }, { id: 3, content: "[UNK]", special: true }], post_processor: { type: "BertProcessing", sep: ["[SEP]", 2], cls: ["[CLS]", 1] }, model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", vocab: { "[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[UNK]": 3, hello: 4, "##lo": 5, "[unused0]": 6, ",": 7 } } };
    const m = kvMap(tokenizerKvs({ tokenizerJson: wordPiece, tokenizerConfig: { cls_token: "[CLS]", sep_token: "[SEP]", unk_token: "[UNK]", pad_token: "[PAD]" } }).kvs);
    expect(m["tokenizer.ggml.model"]).toBe("bert");
    expect(m["tokenizer.ggml.tokens"]).toEqual(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "\u2581hello", "lo", "[unused0]", "\u2581,"]);
    expect(m["tokenizer.ggml.token_type"]).toEqual([3, 3, 3, 3, 1, 1, 1, 1]);
    expect(m).toMatchObject({ "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.add_bos_token": true, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.cls_token_id": 1, "tokenizer.ggml.seperator_token_id": 2, "tokenizer.ggml.unknown_token_id": 3, "tokenizer.ggml.padding_token_id": 0 });
    // without tokenizer_config.json: the post-processor names [CLS] and [SEP], the model its [UNK]
    const bare = kvMap(tokenizerKvs({ tokenizerJson: wordPiece }).kvs);
    expect(bare).toMatchObject({ "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 3 });
  });

  it("SentencePiece: pieces, scores and types from the protobuf, the leading-space setting, added tokens after the pieces", () => {
    const model = sentencePieceModel(["<unk>", "<s>", "</s>", "▁hi", "<0x0A>"], [0, 0, 0, -1.5, 0], [2, 3, 3, 1, 6], false);
    const { kvs } = tokenizerKvs({ tokenizerModel: model, tokenizerConfig: { bos_token: "<s>", eos_token: "</s>", add_bos_token: true }, addedTokensJson: { "<extra>": 6 } });
    const m = kvMap(kvs);
    expect(m["tokenizer.ggml.model"]).toBe("llama");
    expect(m["tokenizer.ggml.tokens"]).toEqual(["<unk>", "<s>", "</s>", "▁hi", "<0x0A>", "[PAD5]", "<extra>"]);
    expect(m["tokenizer.ggml.scores"]).toEqual([0, 0, 0, -1.5, 0, -1, -1]);
    expect(m["tokenizer.ggml.token_type"]).toEqual([2, 3, 3, 1, 6, 4, 4]);
    expect(m["tokenizer.ggml.add_space_prefix"]).toBe(false);
    expect(m).toMatchObject({ "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2 });
  });

  it("refuses what it cannot turn into a llama.cpp vocabulary", () => {
    expect(() => tokenizerKvs({})).toThrow("no tokenizer: the directory needs tokenizer.json or tokenizer.model");
    expect(() => tokenizerKvs({ tokenizerJson: bpe({ model: { type: "BPE", byte_fallback: true, vocab: { a: 0 } } }) })).toThrow(/SentencePiece-style BPE .* add tokenizer\.model/);
    expect(() => tokenizerKvs({ tokenizerJson: bpe({ model: { type: "Unigram", vocab: [["a", 0]] } }) })).toThrow(/a Unigram model; ollamats converts byte-level BPE and WordPiece tokenizers/);
    expect(() => tokenizerKvs({ tokenizerJson: { model: { type: "WordPiece", vocab: {} } } })).toThrow(/model\.vocab is empty/);
    expect(() => tokenizerKvs({ tokenizerModel: Buffer.from([0x0a, 0xff]) })).toThrow(/tokenizer\.model: truncated/);
  });
});

describe("safetensors headers", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-st-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const file = async (header: object, data = 0) => {
    const json = Buffer.from(JSON.stringify(header));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    const f = path.join(dir, `${Math.random().toString(36).slice(2)}.safetensors`);
    await writeFile(f, Buffer.concat([len, json, Buffer.alloc(data)]));
    return f;
  };

  it("reads tensors with absolute offsets and skips the metadata", async () => {
    const f = await file({ __metadata__: { format: "pt" }, a: { dtype: "F16", shape: [2, 3], data_offsets: [0, 12] }, b: { dtype: "BF16", shape: [2], data_offsets: [12, 16] } }, 16);
    const t = await readSafetensors(f, "x.safetensors");
    const start = 8 + Buffer.from(JSON.stringify({ __metadata__: { format: "pt" }, a: { dtype: "F16", shape: [2, 3], data_offsets: [0, 12] }, b: { dtype: "BF16", shape: [2], data_offsets: [12, 16] } })).length;
    expect(t).toEqual([
      { name: "a", dtype: "F16", shape: [2, 3], offset: start, bytes: 12 },
      { name: "b", dtype: "BF16", shape: [2], offset: start + 12, bytes: 4 },
    ]);
  });

  it("refuses sizes that disagree with the shape, a shape that is not one, and a header that is not JSON", async () => {
    await expect(readSafetensors(await file({ a: { dtype: "F32", shape: [3], data_offsets: [0, 8] } }, 8), "x")).rejects.toThrow("x: tensor a: 8 bytes for shape [3] of F32");
    await expect(readSafetensors(await file({ a: { dtype: "F32", shape: [-1], data_offsets: [0, 4] } }, 4), "x")).rejects.toThrow("x: tensor a has an invalid shape");
    await expect(readSafetensors(await file({ a: { dtype: "F32", shape: [1], data_offsets: [4, 0] } }, 4), "x")).rejects.toThrow("x: tensor a has data outside the file");
    const f = path.join(dir, "bad.safetensors");
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(3n);
    await writeFile(f, Buffer.concat([len, Buffer.from("{{{")]));
    await expect(readSafetensors(f, "bad")).rejects.toThrow("bad: the header is not JSON");
  });
});
