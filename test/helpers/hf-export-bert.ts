// A generated BERT test model (make-test-model --arch bert, F16/F32) written back out as a
// sentence-transformers checkpoint: model.safetensors with BertModel's tensor names (plus the
// integer position-id buffer and the pooler transformers saves), config.json, a WordPiece
// tokenizer.json ("##" continuations) with tokenizer_config.json, and modules.json with its
// Pooling module's config in a subdirectory. Converting it back must give the model exported.
import { mkdir, open, writeFile } from "node:fs/promises";
import path from "node:path";
import { readGgufInfo } from "../../src/registry/gguf.js";
import { writeSafetensors } from "./hf-export.js";

const HF_NAMES: ReadonlyArray<[RegExp, string]> = [
  [/^token_embd\.weight$/, "embeddings.word_embeddings.weight"],
  [/^position_embd\.weight$/, "embeddings.position_embeddings.weight"],
  [/^token_types\.weight$/, "embeddings.token_type_embeddings.weight"],
  [/^token_embd_norm\.(weight|bias)$/, "embeddings.LayerNorm.$1"],
  [/^blk\.(\d+)\.attn_(q|k|v)\.(weight|bias)$/, "encoder.layer.$1.attention.self.$2.$3"],
  [/^blk\.(\d+)\.attn_output\.(weight|bias)$/, "encoder.layer.$1.attention.output.dense.$2"],
  [/^blk\.(\d+)\.attn_output_norm\.(weight|bias)$/, "encoder.layer.$1.attention.output.LayerNorm.$2"],
  [/^blk\.(\d+)\.ffn_up\.(weight|bias)$/, "encoder.layer.$1.intermediate.dense.$2"],
  [/^blk\.(\d+)\.ffn_down\.(weight|bias)$/, "encoder.layer.$1.output.dense.$2"],
  [/^blk\.(\d+)\.layer_output_norm\.(weight|bias)$/, "encoder.layer.$1.output.LayerNorm.$2"],
];

const QUERY_KEY_VALUE: Readonly<Record<string, string>> = { q: "query", k: "key", v: "value" };

function hfName(name: string): string {
  for (const [re, to] of HF_NAMES) if (re.test(name)) return name.replace(re, to).replace(/\.self\.(q|k|v)\./, (_, x: string) => `.self.${QUERY_KEY_VALUE[x]}.`);
  throw new Error(`no BertModel name for ${name}`);
}

export interface BertExport {
  /** sentence-transformers' pooling (no modules.json at all: undefined). */
  pooling?: "mean" | "cls" | "max";
  /** Leave out tokenizer_config.json: the special tokens come from tokenizer.json alone. */
  noTokenizerConfig?: boolean;
}

export async function exportHfBert(gguf: string, dir: string, o: BertExport = {}): Promise<void> {
  const info = await readGgufInfo(gguf, { arrays: "full" });
  const m = info.metadata;
  if (m["general.architecture"] !== "bert") throw new Error("not a bert model");
  const u = (k: string) => Number(m[`bert.${k}`]);
  await mkdir(dir, { recursive: true });
  const fh = await open(gguf, "r");
  const tensors: Array<{ name: string; dtype: "F16" | "F32" | "I64"; shape: number[]; data: Buffer }> = [];
  try {
    for (const t of info.tensors) {
      if (t.typeName !== "F16" && t.typeName !== "F32") throw new Error(`export needs an F16/F32 model, ${t.name} is ${t.typeName}`);
      const data = Buffer.alloc(t.bytes);
      await fh.read(data, 0, t.bytes, info.dataOffset + t.offset);
      tensors.push({ name: hfName(t.name), dtype: t.typeName, shape: [...t.dims].reverse(), data });
    }
  } finally {
    await fh.close();
  }
  // what transformers saves besides the weights llama.cpp uses
  const positions = u("context_length");
  const ids = Buffer.alloc(positions * 8);
  for (let i = 0; i < positions; i++) ids.writeBigInt64LE(BigInt(i), i * 8);
  const hidden = u("embedding_length");
  tensors.push(
    { name: "embeddings.position_ids", dtype: "I64", shape: [1, positions], data: ids },
    { name: "pooler.dense.weight", dtype: "F32", shape: [hidden, hidden], data: Buffer.alloc(hidden * hidden * 4) },
    { name: "pooler.dense.bias", dtype: "F32", shape: [hidden], data: Buffer.alloc(hidden * 4) },
  );
  await writeSafetensors(path.join(dir, "model.safetensors"), tensors as Parameters<typeof writeSafetensors>[1]);

  const tokens = m["tokenizer.ggml.tokens"] as string[];
  await writeFile(
    path.join(dir, "config.json"),
    JSON.stringify({
      _name_or_path: "sentence-transformers/ollamats-test-bert",
      architectures: ["BertModel"],
      attention_probs_dropout_prob: 0.1,
      hidden_act: "gelu",
      hidden_size: hidden,
      intermediate_size: u("feed_forward_length"),
      layer_norm_eps: u("attention.layer_norm_epsilon"),
      max_position_embeddings: positions,
      model_type: "bert",
      num_attention_heads: u("attention.head_count"),
      num_hidden_layers: u("block_count"),
      pad_token_id: 0,
      position_embedding_type: "absolute",
      type_vocab_size: Number(m["tokenizer.ggml.token_type_count"]),
      vocab_size: tokens.length,
    }),
  );
  // phantom-space pieces back to WordPiece's: "▁word" starts a word, a bare piece continues one
  const special = (t: string) => /^\[.*\]$/.test(t);
  const vocab: Record<string, number> = {};
  tokens.forEach((t, id) => {
    vocab[special(t) ? t : t.startsWith("\u2581") ? t.slice(1) : `##${t}`] = id;
  });
  const text = (k: string) => tokens[Number(m[`tokenizer.ggml.${k}_token_id`])]!;
  const named = { cls: text("cls"), sep: text("seperator"), unk: text("unknown"), pad: text("padding"), mask: text("mask") };
  const added = Object.values(named).map((content) => ({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  await writeFile(
    path.join(dir, "tokenizer.json"),
    JSON.stringify({
      version: "1.0",
      added_tokens: added,
      normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: "BertPreTokenizer" },
      post_processor: {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: named.cls, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: named.sep, type_id: 0 } }],
        special_tokens: { [named.cls]: { id: named.cls, ids: [vocab[named.cls]], tokens: [named.cls] }, [named.sep]: { id: named.sep, ids: [vocab[named.sep]], tokens: [named.sep] } },
      },
      decoder: { type: "WordPiece", prefix: "##", cleanup: true },
      model: { type: "WordPiece", unk_token: named.unk, continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
    }),
  );
  if (!o.noTokenizerConfig) {
    await writeFile(
      path.join(dir, "tokenizer_config.json"),
      JSON.stringify({ cls_token: named.cls, sep_token: named.sep, unk_token: named.unk, pad_token: named.pad, mask_token: named.mask, do_lower_case: true, model_max_length: positions, tokenizer_class: "BertTokenizer" }),
    );
  }
  if (o.pooling) {
    await writeFile(
      path.join(dir, "modules.json"),
      JSON.stringify([
        { idx: 0, name: "0", path: "", type: "sentence_transformers.models.Transformer" },
        { idx: 1, name: "1", path: "1_Pooling", type: "sentence_transformers.models.Pooling" },
        { idx: 2, name: "2", path: "2_Normalize", type: "sentence_transformers.models.Normalize" },
      ]),
    );
    await mkdir(path.join(dir, "1_Pooling"), { recursive: true });
    await writeFile(
      path.join(dir, "1_Pooling", "config.json"),
      JSON.stringify({ word_embedding_dimension: hidden, pooling_mode_cls_token: o.pooling === "cls", pooling_mode_mean_tokens: o.pooling === "mean", pooling_mode_max_tokens: o.pooling === "max", pooling_mode_mean_sqrt_len_tokens: false }),
    );
  }
}
