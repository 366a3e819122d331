// Synthetic BERT-family embedding models, laid out as llama.cpp's converter writes them from a
// sentence-transformers checkpoint: an encoder (bidirectional attention, no KV cache), a WordPiece
// tokenizer ("bert", phantom-space pieces, [CLS] … [SEP] around every input), post-layer norms,
// and a pooling type instead of an output matrix.
//
// - "bert" (all-MiniLM, bge, mxbai-embed): learned position embeddings (the context length is the
//   table's size), biases everywhere, GELU feed-forward, q/k/v apart.
// - "nomic-bert" (nomic-embed-text): rotary positions, one fused q/k/v matrix, SwiGLU feed-forward,
//   no biases.
//
// Only the special-token ids llama.cpp's BERT converter writes are set (cls, separator, unknown,
// padding, mask; no bos/eos): the engine then takes [CLS] as the start and [SEP] as the end.
import { kv, type KvEntry, type TensorSpec, type WritableType } from "./gguf-writer.js";
import { constTensor, randomTensor } from "./random-tensors.js";
import { buildWordPieceVocab, TOKEN_TYPE, WORDPIECE_IDS } from "./test-vocab.js";

export type BertArchitecture = "bert" | "nomic-bert";

export interface BertShape {
  layers: number;
  embd: number;
  heads: number;
  ffn: number;
  vocab: number;
  contextLength: number;
}

/** llama.cpp's LLAMA_POOLING_TYPE_MEAN, _CLS and _RANK (a cross-encoder: [CLS] through the
 *  pooler's dense + tanh, then a one-score classifier, as bge-reranker and ms-marco MiniLM are). */
export const BERT_POOLING = { mean: 1, cls: 2, rank: 4 } as const;

export interface BertOptions {
  arch: BertArchitecture;
  shape: BertShape;
  type: WritableType;
  seed: number;
  /** general.* and anything else the file carries before the shape. */
  headKvs: KvEntry[];
  pooling?: keyof typeof BERT_POOLING;
}

/** The context a tiny BERT was trained for: 512 positions, as all-MiniLM and bge. */
export const BERT_CONTEXT = 512;
/** nomic-embed-text's context (rotary positions: no table to size). */
export const NOMIC_CONTEXT = 2048;

export function buildBertModel(o: BertOptions): { kvs: KvEntry[]; tensors: TensorSpec[] } {
  const { arch, shape: s, type, seed } = o;
  const nomic = arch === "nomic-bert";
  const v = buildWordPieceVocab(s.vocab);
  const kvs: KvEntry[] = [
    ...o.headKvs,
    kv.u32(`${arch}.context_length`, s.contextLength),
    kv.u32(`${arch}.embedding_length`, s.embd),
    kv.u32(`${arch}.feed_forward_length`, s.ffn),
    kv.u32(`${arch}.block_count`, s.layers),
    kv.u32(`${arch}.attention.head_count`, s.heads),
    kv.f32(`${arch}.attention.layer_norm_epsilon`, 1e-12),
    kv.bool(`${arch}.attention.causal`, false),
    kv.u32(`${arch}.pooling_type`, BERT_POOLING[o.pooling ?? "mean"]),
    ...(nomic ? [kv.f32(`${arch}.rope.freq_base`, 1000)] : []),
    kv.u32("tokenizer.ggml.token_type_count", 2),
    kv.str("tokenizer.ggml.model", "bert"),
    kv.strs("tokenizer.ggml.tokens", v.tokens),
    kv.i32s("tokenizer.ggml.token_type", v.types),
    kv.u32("tokenizer.ggml.unknown_token_id", WORDPIECE_IDS.unk),
    kv.u32("tokenizer.ggml.seperator_token_id", WORDPIECE_IDS.sep),
    kv.u32("tokenizer.ggml.padding_token_id", WORDPIECE_IDS.pad),
    kv.u32("tokenizer.ggml.cls_token_id", WORDPIECE_IDS.cls),
    kv.u32("tokenizer.ggml.mask_token_id", WORDPIECE_IDS.mask),
  ];
  if (v.types.filter((t) => t === TOKEN_TYPE.unknown).length !== 1) throw new Error("a WordPiece vocabulary has one [UNK]");
  const std = 1 / Math.sqrt(s.embd);
  const bias = (name: string, n: number) => randomTensor(name, [n], "F32", seed, 0.02);
  const norm = (name: string) => [constTensor(`${name}.weight`, [s.embd], 1), constTensor(`${name}.bias`, [s.embd], 0)];
  // the position table stays unquantized, as converters keep it; the token-type rows must be F32
  // (llama.cpp adds one to F32 activations, and its CPU add has no F16 operand)
  const table = type === "F32" ? "F32" : "F16";
  const tensors: TensorSpec[] = [
    randomTensor("token_embd.weight", [s.embd, s.vocab], type, seed, 1),
    randomTensor("token_types.weight", [s.embd, 2], "F32", seed, 0.1),
    ...(nomic ? [] : [randomTensor("position_embd.weight", [s.embd, s.contextLength], table, seed, 0.5)]),
    ...norm("token_embd_norm"),
  ];
  for (let i = 0; i < s.layers; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      ...(nomic
        ? [randomTensor(`${p}attn_qkv.weight`, [s.embd, 3 * s.embd], type, seed, std)]
        : [
          randomTensor(`${p}attn_q.weight`, [s.embd, s.embd], type, seed, std), bias(`${p}attn_q.bias`, s.embd),
          randomTensor(`${p}attn_k.weight`, [s.embd, s.embd], type, seed, std), bias(`${p}attn_k.bias`, s.embd),
          randomTensor(`${p}attn_v.weight`, [s.embd, s.embd], type, seed, std), bias(`${p}attn_v.bias`, s.embd),
        ]),
      randomTensor(`${p}attn_output.weight`, [s.embd, s.embd], type, seed, std),
      ...(nomic ? [] : [bias(`${p}attn_output.bias`, s.embd)]),
      ...norm(`${p}attn_output_norm`),
      ...(nomic ? [randomTensor(`${p}ffn_gate.weight`, [s.embd, s.ffn], type, seed, std)] : []),
      randomTensor(`${p}ffn_up.weight`, [s.embd, s.ffn], type, seed, std),
      ...(nomic ? [] : [bias(`${p}ffn_up.bias`, s.ffn)]),
      randomTensor(`${p}ffn_down.weight`, [s.ffn, s.embd], type, seed, 1 / Math.sqrt(s.ffn)),
      ...(nomic ? [] : [bias(`${p}ffn_down.bias`, s.embd)]),
      ...norm(`${p}layer_output_norm`),
    );
  }
  if (o.pooling === "rank") {
    tensors.push(
      randomTensor("cls.weight", [s.embd, s.embd], "F32", seed, std),
      constTensor("cls.bias", [s.embd], 0),
      // scores of a few units, so the relevance (a sigmoid of it) varies between documents
      randomTensor("cls.output.weight", [s.embd, 1], "F32", seed, 3 / Math.sqrt(s.embd)),
      constTensor("cls.output.bias", [1], 0),
    );
  }
  return { kvs, tensors };
}
