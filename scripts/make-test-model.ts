// Writes deterministic synthetic GGUF v3 models (llama architecture, seeded random weights, an SPM
// tokenizer and a ChatML chat template) for tests and benchmarks.
//
//   tsx scripts/make-test-model.ts [--shape tiny|small|1b] [--type F32|F16|Q8_0|Q4_0] [--seed 1] [--embedding] [--out DIR]
//
// Prints the absolute path. Same options => byte-identical file. Files go to <repo>/.cache/models by
// default and are reused when already present with the expected size.
import { mkdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { encodedChunks, ggufLayout, kv, writeGguf, type KvEntry, type TensorSpec, type WritableType } from "./gguf-writer.js";
import { BOS_ID, buildVocab, EOS_ID, FIRST_PIECE_ID, UNK_ID } from "./test-vocab.js";

export type ModelShape = "tiny" | "small" | "1b";
export type ModelType = WritableType;

export interface MakeModelOptions {
  shape?: ModelShape;
  type?: ModelType;
  seed?: number;
  embedding?: boolean;
  outDir?: string;
}

export interface ShapeSpec {
  layers: number;
  embd: number;
  heads: number;
  headsKv: number;
  ffn: number;
  vocab: number;
  contextLength: number;
  ropeBase: number;
}

export const SHAPES: Record<ModelShape, ShapeSpec> = {
  tiny: { layers: 2, embd: 64, heads: 2, headsKv: 1, ffn: 128, vocab: 1024, contextLength: 4096, ropeBase: 10000 },
  small: { layers: 4, embd: 256, heads: 4, headsKv: 2, ffn: 768, vocab: 4096, contextLength: 8192, ropeBase: 10000 },
  // Llama-3.2-1B layer shape (untied output matrix, 32000-token vocab)
  "1b": { layers: 16, embd: 2048, heads: 32, headsKv: 8, ffn: 8192, vocab: 32000, contextLength: 131072, ropeBase: 500000 },
};

/** ChatML, as found in many GGUF files' tokenizer.chat_template. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** llama_ftype values for general.file_type. */
const FILE_TYPE: Record<ModelType, number> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 };

/** Output-matrix rows of special and byte tokens are scaled by this, so random generation rarely
 *  ends the turn or emits raw bytes; the words dominate. */
const SPECIAL_ROW_SCALE = 0.2;

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_MODEL_DIR = join(REPO_ROOT, ".cache", "models");

export function modelFileName(opts: MakeModelOptions = {}): string {
  const { shape = "tiny", type = "Q4_0", seed = 1, embedding = false } = opts;
  return `${shape}${embedding ? "-embed" : ""}-${type}-s${seed}.gguf`;
}

/** FNV-1a over a string, mixed with the seed: per-tensor PRNG seed. */
function tensorSeed(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Uniform weights with standard deviation `std` from a mulberry32 stream; optional per-row scale. */
function randomTensor(
  name: string, dims: number[], type: ModelType, seed: number, std: number,
  rowScale?: (row: number) => number,
): TensorSpec {
  const rowLen = dims[0]!;
  const elements = dims.reduce((a, b) => a * b, 1);
  return {
    name, dims, type,
    data: () => {
      let state = tensorSeed(seed, name);
      const amp = std * Math.sqrt(3) * 2;
      return encodedChunks(type, elements, rowLen, (dst, start) => {
        for (let i = 0; i < dst.length; i++) {
          state = (state + 0x6d2b79f5) | 0;
          let t = Math.imul(state ^ (state >>> 15), 1 | state);
          t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
          dst[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5) * amp;
        }
        if (rowScale) {
          for (let r = 0; r < dst.length / rowLen; r++) {
            const s = rowScale(start / rowLen + r);
            if (s !== 1) for (let j = r * rowLen; j < (r + 1) * rowLen; j++) dst[j] = dst[j]! * s;
          }
        }
      });
    },
  };
}

function constTensor(name: string, dims: number[], value: number): TensorSpec {
  const elements = dims.reduce((a, b) => a * b, 1);
  return { name, dims, type: "F32", data: () => encodedChunks("F32", elements, dims[0]!, (dst) => dst.fill(value)) };
}

export function buildModel(opts: MakeModelOptions = {}): { kvs: KvEntry[]; tensors: TensorSpec[] } {
  const { shape = "tiny", type = "Q4_0", seed = 1, embedding = false } = opts;
  const s = SHAPES[shape];
  if (!s) throw new Error(`unknown shape ${shape}`);
  if (!(type in FILE_TYPE)) throw new Error(`unknown type ${type}`);
  const headDim = s.embd / s.heads;
  const kvDim = headDim * s.headsKv;
  const vocab = buildVocab(s.vocab);
  const arch = "llama";
  const kvs: KvEntry[] = [
    kv.str("general.architecture", arch),
    kv.str("general.name", `ollamats-test-${shape}${embedding ? "-embed" : ""}`),
    kv.u32("general.file_type", FILE_TYPE[type]),
    kv.u32("general.quantization_version", 2),
    kv.u32(`${arch}.context_length`, s.contextLength),
    kv.u32(`${arch}.embedding_length`, s.embd),
    kv.u32(`${arch}.block_count`, s.layers),
    kv.u32(`${arch}.feed_forward_length`, s.ffn),
    kv.u32(`${arch}.attention.head_count`, s.heads),
    kv.u32(`${arch}.attention.head_count_kv`, s.headsKv),
    kv.u32(`${arch}.rope.dimension_count`, headDim),
    kv.f32(`${arch}.rope.freq_base`, s.ropeBase),
    kv.f32(`${arch}.attention.layer_norm_rms_epsilon`, 1e-5),
    kv.u32(`${arch}.vocab_size`, s.vocab),
    ...(embedding ? [kv.u32(`${arch}.pooling_type`, 1)] : []),
    kv.str("tokenizer.ggml.model", "llama"),
    kv.strs("tokenizer.ggml.tokens", vocab.tokens),
    kv.f32s("tokenizer.ggml.scores", vocab.scores),
    kv.i32s("tokenizer.ggml.token_type", vocab.types),
    kv.u32("tokenizer.ggml.bos_token_id", BOS_ID),
    kv.u32("tokenizer.ggml.eos_token_id", EOS_ID),
    kv.u32("tokenizer.ggml.unknown_token_id", UNK_ID),
    kv.bool("tokenizer.ggml.add_bos_token", true),
    kv.bool("tokenizer.ggml.add_eos_token", false),
    // no implicit leading space: text after a special token is not turned into "▁text", so
    // tokenize/detokenize round-trips exactly ("<|im_start|>user\n" stays "user", not " user")
    kv.bool("tokenizer.ggml.add_space_prefix", false),
    kv.str("tokenizer.chat_template", CHATML_TEMPLATE),
  ];
  const inStd = 1 / Math.sqrt(s.embd);
  const tensors: TensorSpec[] = [randomTensor("token_embd.weight", [s.embd, s.vocab], type, seed, 1)];
  for (let i = 0; i < s.layers; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      constTensor(`${p}attn_norm.weight`, [s.embd], 1),
      randomTensor(`${p}attn_q.weight`, [s.embd, s.embd], type, seed, inStd),
      randomTensor(`${p}attn_k.weight`, [s.embd, kvDim], type, seed, inStd),
      randomTensor(`${p}attn_v.weight`, [s.embd, kvDim], type, seed, inStd),
      randomTensor(`${p}attn_output.weight`, [s.embd, s.embd], type, seed, inStd),
      constTensor(`${p}ffn_norm.weight`, [s.embd], 1),
      randomTensor(`${p}ffn_gate.weight`, [s.embd, s.ffn], type, seed, inStd),
      randomTensor(`${p}ffn_up.weight`, [s.embd, s.ffn], type, seed, inStd),
      randomTensor(`${p}ffn_down.weight`, [s.ffn, s.embd], type, seed, 1 / Math.sqrt(s.ffn)),
    );
  }
  tensors.push(
    constTensor("output_norm.weight", [s.embd], 1),
    // logits std ~3: peaked enough to be word-like, varied enough not to loop on one token
    randomTensor("output.weight", [s.embd, s.vocab], type, seed, 3 / Math.sqrt(s.embd),
      (row) => (row < FIRST_PIECE_ID ? SPECIAL_ROW_SCALE : 1)),
  );
  return { kvs, tensors };
}

/** Writes (or reuses) the model file and returns its absolute path. */
export async function makeTestModel(opts: MakeModelOptions = {}): Promise<string> {
  const outDir = resolve(opts.outDir ?? DEFAULT_MODEL_DIR);
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`seed must be a uint32, got ${seed}`);
  const path = join(outDir, modelFileName(opts));
  const { kvs, tensors } = buildModel(opts);
  const { totalSize } = ggufLayout(kvs, tensors);
  const existing = await stat(path).catch(() => undefined);
  if (existing?.isFile() && existing.size === totalSize) return path;
  await mkdir(outDir, { recursive: true });
  await writeGguf(path, kvs, tensors);
  return path;
}

function parseArgs(argv: string[]): MakeModelOptions {
  const opts: MakeModelOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--shape") opts.shape = val() as ModelShape;
    else if (a === "--type") opts.type = val() as ModelType;
    else if (a === "--seed") opts.seed = Number(val());
    else if (a === "--embedding") opts.embedding = true;
    else if (a === "--out") opts.outDir = val();
    else throw new Error(`unknown argument ${a}`);
  }
  if (opts.shape && !(opts.shape in SHAPES)) throw new Error(`--shape must be one of ${Object.keys(SHAPES).join(", ")}`);
  if (opts.type && !(opts.type in FILE_TYPE)) throw new Error(`--type must be one of ${Object.keys(FILE_TYPE).join(", ")}`);
  return opts;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    console.log(await makeTestModel(parseArgs(process.argv.slice(2))));
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
