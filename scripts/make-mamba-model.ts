// A synthetic Mamba model (the first selective state-space architecture llama.cpp runs): no
// attention and no KV cache; each layer keeps a fixed-size recurrent state per sequence (a
// convolution window and the SSM state) that summarises every token so far and cannot be cut back
// to an earlier position. Laid out as llama.cpp's converter writes state-spaces/mamba-*: `ssm_a`
// holds -exp(A_log), already negative. The tokenizer and chat template are the caller's.
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
}

/** llama.cpp runs Mamba with an expansion factor of 2 only. */
const EXPAND = 2;
const CONV_KERNEL = 4;
const STATE_SIZE = 16;

export function buildMambaModel(o: MambaOptions): { kvs: KvEntry[]; tensors: TensorSpec[] } {
  const inner = EXPAND * o.embd;
  const dtRank = Math.ceil(o.embd / 16);
  const kvs: KvEntry[] = [
    ...o.headKvs,
    // Mamba has no positions to run out of; its converter writes 2^20
    kv.u32("mamba.context_length", 1 << 20),
    kv.u32("mamba.embedding_length", o.embd),
    kv.u32("mamba.feed_forward_length", 0),
    kv.u32("mamba.attention.head_count", 0),
    kv.u32("mamba.block_count", o.layers),
    kv.u32("mamba.ssm.conv_kernel", CONV_KERNEL),
    kv.u32("mamba.ssm.inner_size", inner),
    kv.u32("mamba.ssm.state_size", STATE_SIZE),
    kv.u32("mamba.ssm.time_step_rank", dtRank),
    kv.f32("mamba.attention.layer_norm_rms_epsilon", 1e-5),
  ];
  const { type, seed } = o;
  const std = 1 / Math.sqrt(o.embd);
  const tensors: TensorSpec[] = [randomTensor("token_embd.weight", [o.embd, o.vocab], type, seed, 1)];
  for (let i = 0; i < o.layers; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      constTensor(`${p}attn_norm.weight`, [o.embd], 1),
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
