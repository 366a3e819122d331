// A synthetic Mamba model (the first selective state-space architecture llama.cpp runs): no
// attention and no KV cache; each layer keeps a fixed-size recurrent state per sequence (a
// convolution window and the SSM state) that summarises every token so far and cannot be cut back
// to an earlier position. Laid out as llama.cpp's converter writes state-spaces/mamba-*: `ssm_a`
// holds -exp(A_log), already negative. The tokenizer and chat template are the caller's.
//
// With `attentionEvery`, a hybrid as Jamba is: every so many layers an attention layer (with a
// KV cache that can be cut back) instead of a Mamba one, every layer followed by a gated MLP; the
// per-layer head_count_kv array (0 for a Mamba layer) says which is which.
import { kv, type KvEntry, type TensorSpec, type WritableType } from "./gguf-writer.js";
import { constTensor, randomTensor } from "./random-tensors.js";

export interface MambaOptions {
  layers: number;
  embd: number;
  vocab: number;
  type: WritableType;
  seed: number;
  /** general.*, the tokenizer's keys and anything else the file carries besides the shape. */
  headKvs: KvEntry[];
  /** Output-matrix row scale (special tokens rarer), as for the other test models. */
  outRows: (row: number) => number;
  /** A Jamba hybrid: layer i is an attention layer when i % attentionEvery is attentionEvery - 1. */
  attentionEvery?: number;
  /** The hybrid's attention heads and MLP width. */
  heads?: number;
  headsKv?: number;
  ffn?: number;
}

/** llama.cpp runs Mamba with an expansion factor of 2 only. */
const EXPAND = 2;
const CONV_KERNEL = 4;
const STATE_SIZE = 16;

export function buildMambaModel(o: MambaOptions): { kvs: KvEntry[]; tensors: TensorSpec[] } {
  const inner = EXPAND * o.embd;
  const dtRank = Math.ceil(o.embd / 16);
  const every = o.attentionEvery;
  const arch = every ? "jamba" : "mamba";
  const attention = (i: number) => every !== undefined && i % every === every - 1;
  const heads = o.heads ?? 2;
  const headsKv = o.headsKv ?? 1;
  const ffn = every ? (o.ffn ?? 2 * o.embd) : 0;
  const kvDim = (o.embd / heads) * headsKv;
  const kvs: KvEntry[] = [
    ...o.headKvs,
    // Mamba has no positions to run out of; its converter writes 2^20
    kv.u32(`${arch}.context_length`, 1 << 20),
    kv.u32(`${arch}.embedding_length`, o.embd),
    kv.u32(`${arch}.feed_forward_length`, ffn),
    ...(every
      ? [kv.u32(`${arch}.attention.head_count`, heads), kv.i32s(`${arch}.attention.head_count_kv`, Array.from({ length: o.layers }, (_, i) => (attention(i) ? headsKv : 0)))]
      : [kv.u32(`${arch}.attention.head_count`, 0)]),
    kv.u32(`${arch}.block_count`, o.layers),
    kv.u32(`${arch}.ssm.conv_kernel`, CONV_KERNEL),
    kv.u32(`${arch}.ssm.inner_size`, inner),
    kv.u32(`${arch}.ssm.state_size`, STATE_SIZE),
    kv.u32(`${arch}.ssm.time_step_rank`, dtRank),
    kv.f32(`${arch}.attention.layer_norm_rms_epsilon`, 1e-5),
  ];
  const { type, seed } = o;
  const std = 1 / Math.sqrt(o.embd);
  const tensors: TensorSpec[] = [randomTensor("token_embd.weight", [o.embd, o.vocab], type, seed, 1)];
  for (let i = 0; i < o.layers; i++) {
    const p = `blk.${i}.`;
    tensors.push(constTensor(`${p}attn_norm.weight`, [o.embd], 1));
    if (every) {
      tensors.push(
        constTensor(`${p}ffn_norm.weight`, [o.embd], 1),
        randomTensor(`${p}ffn_gate.weight`, [o.embd, ffn], type, seed, std),
        randomTensor(`${p}ffn_up.weight`, [o.embd, ffn], type, seed, std),
        randomTensor(`${p}ffn_down.weight`, [ffn, o.embd], type, seed, 1 / Math.sqrt(ffn)),
      );
    }
    if (attention(i)) {
      tensors.push(
        randomTensor(`${p}attn_q.weight`, [o.embd, o.embd], type, seed, std),
        randomTensor(`${p}attn_k.weight`, [o.embd, kvDim], type, seed, std),
        randomTensor(`${p}attn_v.weight`, [o.embd, kvDim], type, seed, std),
        randomTensor(`${p}attn_output.weight`, [o.embd, o.embd], type, seed, std),
      );
      continue;
    }
    if (every) {
      // Jamba normalises the step and the B and C projections
      tensors.push(constTensor(`${p}ssm_dt_norm.weight`, [dtRank], 1), constTensor(`${p}ssm_b_norm.weight`, [STATE_SIZE], 1), constTensor(`${p}ssm_c_norm.weight`, [STATE_SIZE], 1));
    }
    tensors.push(
      randomTensor(`${p}ssm_in.weight`, [o.embd, 2 * inner], type, seed, std),
      randomTensor(`${p}ssm_conv1d.weight`, [CONV_KERNEL, inner], "F32", seed, 0.5),
      constTensor(`${p}ssm_conv1d.bias`, [inner], 0),
      randomTensor(`${p}ssm_x.weight`, [inner, dtRank + 2 * STATE_SIZE], type, seed, 1 / Math.sqrt(inner)),
      randomTensor(`${p}ssm_dt.weight`, [dtRank, inner], "F32", seed, 1 / Math.sqrt(dtRank)),
      // softplus(-2) ≈ 0.13: a step that keeps a memory of several tokens
      constTensor(`${p}ssm_dt.bias`, [inner], -2),
      constTensor(`${p}ssm_a`, [STATE_SIZE, inner], -1),
      constTensor(`${p}ssm_d`, [inner], 1),
      randomTensor(`${p}ssm_out.weight`, [inner, o.embd], type, seed, 1 / Math.sqrt(inner)),
    );
  }
  tensors.push(
    constTensor("output_norm.weight", [o.embd], 1),
    randomTensor("output.weight", [o.embd, o.vocab], type, seed, 3 / Math.sqrt(o.embd), o.outRows),
  );
  return { kvs, tensors };
}
