// Writes deterministic synthetic GGUF v3 models (llama architecture, seeded random weights, an SPM
// tokenizer and a ChatML chat template, unless told otherwise) for tests and benchmarks. `--ranking` writes a reranker
// instead: the qwen3 architecture (llama.cpp runs its rank pooling on the last token, then a
// softmax over the classifier's labels) with pooling_type rank and a `cls.output` head.
//
//   tsx scripts/make-test-model.ts [--shape tiny|small|1b] [--type F32|F16|Q8_0|Q4_0] [--seed 1] [--layers N] [--quiet-from N] [--embedding | --ranking]
//       [--tokenizer spm|gpt2] [--template chatml|llama3|llama3.2|gemma|mistral|phi3|harmony|qwen3-coder|functionary|none] [--tied] [--arch llama|qwen2|qwen3|gemma|gemma2|gemma3|phi3|mamba|jamba|bert|nomic-bert] [--experts N] [--ends-turns] [--out DIR]
//
// Other kinds of models, as other generators make them: `--tokenizer gpt2` is a byte-level BPE
// tokenizer (tokenizer.ggml.model "gpt2", pre "llama-bpe", merges, Llama 3's <|begin_of_text|> and
// <|end_of_text|>, special tokens after the pieces); `--template` writes that family's real Jinja
// chat template and adds its turn tokens to the vocabulary (`none`: no tokenizer.chat_template at
// all); `--tied` leaves out output.weight (llama.cpp then uses token_embd for the output); `--arch
// qwen2` is the qwen2 architecture (the llama tensors plus q/k/v biases); `--ends-turns` makes the
// template's turn tokens likely outputs, so answers end (or a new turn starts) within a few tokens.
//
// `--layers N` keeps only the first N blocks of the shape: tensors are seeded by name, so the
// result is the full model with its upper layers cut off (a draft model for speculative decoding
// that shares the vocabulary, the embeddings and the lower layers). On random weights every block
// changes the next token, so such a cut agrees with the full model only by chance; `--quiet-from
// N` makes blocks N and up write into the residual stream at QUIET_SCALE of their usual size, so
// the cut to N layers predicts the full model's tokens (a well-matched draft) while the full model
// still costs what its shape costs.
//
// Prints the absolute path. Same options => byte-identical file. Files go to <repo>/.cache/models by
// default and are reused when already present with the expected size and header bytes.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { kv, writeGgufCached, type KvEntry, type TensorSpec, type WritableType } from "./gguf-writer.js";
import { constTensor, randomTensor } from "./random-tensors.js";
import { buildMambaModel } from "./make-mamba-model.js";
import { BERT_CONTEXT, buildBertModel, NOMIC_CONTEXT, type BertArchitecture } from "./make-bert-model.js";
import { CHAT_FORMATS, type ChatFormat } from "./chat-templates.js";
import { buildBpeVocab, buildVocab, SPECIAL_TOKENS, TOKEN_TYPE, UNK_ID } from "./test-vocab.js";

export type ModelShape = "tiny" | "small" | "1b";
export type Tokenizer = "spm" | "gpt2";
export type Architecture = "llama" | "qwen2" | "qwen3" | "gemma" | "gemma2" | "gemma3" | "phi3" | "mamba" | "jamba" | BertArchitecture;
export const TOKENIZERS: readonly Tokenizer[] = ["spm", "gpt2"];
export const ARCHITECTURES: readonly Architecture[] = ["llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "mamba", "jamba", "bert", "nomic-bert"];
export { CHAT_FORMATS, type ChatFormat };
export type ModelType = WritableType;

export interface MakeModelOptions {
  shape?: ModelShape;
  type?: ModelType;
  seed?: number;
  embedding?: boolean;
  /** A reranker (node-llama-cpp's ranking context): qwen3, pooling_type rank, a classifier. */
  ranking?: boolean;
  /** Only the first N blocks of the shape (same weights for those): a cut-down draft model. */
  layers?: number;
  /** Blocks from this one up barely change the output (see QUIET_SCALE). */
  quietFrom?: number;
  /** "spm" (default: tokenizer.ggml.model "llama") or "gpt2" (byte-level BPE). */
  tokenizer?: Tokenizer;
  /** SPM only: tokenizer.ggml.add_space_prefix true, as in Llama 2 and Mistral files (text is
   *  tokenized as if it began with a space: "hi" → "▁hi"). Default false. */
  spacePrefix?: boolean;
  /** The chat template and its turn tokens (default "chatml"). */
  template?: ChatFormat;
  /** No output.weight: the output projection is token_embd's. */
  tied?: boolean;
  /** "llama" (default), "qwen2" (attention biases), "qwen3" (per-head query/key norms),
   *  "gemma", "gemma2", "gemma3" (always tied; see buildModel), or "phi3" (fused q/k/v and
   *  gate/up matrices); "bert" or "nomic-bert": an embedding encoder with a WordPiece tokenizer
   *  (make-bert-model.ts; the tokenizer and template options do not apply); "mamba": a recurrent
   *  state-space model without attention, "jamba": Mamba and attention layers in turn
   *  (make-mamba-model.ts). */
  arch?: Architecture;
  /** A mixture of experts: this many expert MLPs per layer, two used per token (llama: Mixtral's
   *  layout; qwen3: the qwen3moe architecture). */
  experts?: number;
  /** The template's turn tokens are likely outputs (TURN_ROW_SCALE), so an answer soon reaches
   *  one, as a chat model's does: what stop tokens and stop parameters are tested with. */
  endsTurns?: boolean;
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
export const CHATML_TEMPLATE = CHAT_FORMATS.chatml.template!;

/** Stored as ollamats.test_model_version; bump when the generated bytes change. */
export const GENERATOR_VERSION = 3;

/** llama.cpp's LLAMA_POOLING_TYPE_MEAN and _RANK. */
const POOLING_MEAN = 1;
const POOLING_RANK = 4;
/** The reranker's classifier labels: llama.cpp sizes cls.output by their count. */
const RANK_LABELS = ["yes", "no"];

/** llama_ftype values for general.file_type. */
const FILE_TYPE: Record<ModelType, number> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 };

/** Output-matrix rows of special and byte tokens are scaled by this, so random generation rarely
 *  ends the turn or emits raw bytes; the words dominate. */
const SPECIAL_ROW_SCALE = 0.2;

/** The turn tokens' output rows with `endsTurns`: logits a few times wider than a word's, so
 *  one of them wins every few tokens. */
const TURN_ROW_SCALE = 1.6;

/** What a quiet block's attention output and FFN down projection are scaled by. */
const QUIET_SCALE = 0.02;

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_MODEL_DIR = join(REPO_ROOT, ".cache", "models");

export function modelFileName(opts: MakeModelOptions = {}): string {
  const { shape = "tiny", type = "Q4_0", seed = 1, embedding = false, ranking = false, layers } = opts;
  const cut = layers !== undefined && layers !== SHAPES[shape].layers ? `-L${layers}` : "";
  const quiet = opts.quietFrom !== undefined ? `-quiet${opts.quietFrom}` : "";
  return `${shape}${kindTag(opts)}${embedding ? "-embed" : ""}${ranking ? "-rank" : ""}${cut}${quiet}-${type}-s${seed}.gguf`;
}

/** What sets the model apart from the default kind (llama, SPM, ChatML, untied): "" for that. */
function kindTag(opts: MakeModelOptions): string {
  const { arch = "llama", tokenizer = "spm", template = "chatml", tied = false } = opts;
  return `${arch === "llama" ? "" : `-${arch}`}${tokenizer === "spm" ? "" : `-${tokenizer}`}${template === "chatml" ? "" : `-${template}`}${tied ? "-tied" : ""}${opts.endsTurns ? "-turns" : ""}${opts.spacePrefix && tokenizer === "spm" ? "-sp" : ""}${opts.experts ? `-moe${opts.experts}` : ""}`;
}

interface TokenizerKvs { kvs: KvEntry[]; vocab: number; low: (id: number) => boolean; turns: (id: number) => boolean }

/** The tokenizer's metadata, and which ids are special (or raw bytes): their output rows are
 *  scaled down so random generation rarely ends the turn or emits them. */
function tokenizerKvs(tokenizer: Tokenizer, format: ChatFormat, size: number, spacePrefix = false): TokenizerKvs {
  const spec = CHAT_FORMATS[format];
  if (!spec) throw new Error(`unknown template ${format}`);
  if (tokenizer === "gpt2") {
    const v = buildBpeVocab(size, ["<|begin_of_text|>", "<|end_of_text|>", ...spec.tokens]);
    const id = (t: string) => v.special.get(t)!;
    // byte-level characters standing for anything but printable ASCII
    const bytes = (i: number) => i < 256 && !(i >= 0x21 && i <= 0x7e);
    const turns = new Set(spec.tokens.map(id));
    return {
      vocab: v.tokens.length,
      low: (i) => v.types[i] !== TOKEN_TYPE.normal || bytes(i),
      turns: (i) => turns.has(i),
      kvs: [
        kv.str("tokenizer.ggml.model", "gpt2"),
        kv.str("tokenizer.ggml.pre", "llama-bpe"),
        kv.strs("tokenizer.ggml.tokens", v.tokens),
        kv.i32s("tokenizer.ggml.token_type", v.types),
        kv.strs("tokenizer.ggml.merges", v.merges),
        kv.u32("tokenizer.ggml.bos_token_id", id("<|begin_of_text|>")),
        kv.u32("tokenizer.ggml.eos_token_id", id(spec.endOfTurn ?? "<|end_of_text|>")),
        kv.bool("tokenizer.ggml.add_bos_token", true),
        kv.bool("tokenizer.ggml.add_eos_token", false),
        ...chatTemplateKv(format),
      ],
    };
  }
  if (tokenizer !== "spm") throw new Error(`unknown tokenizer ${tokenizer}`);
  const specials: readonly string[] = format === "chatml" ? SPECIAL_TOKENS : [...SPECIAL_TOKENS.slice(0, 3), ...spec.tokens];
  const v = buildVocab(size, specials);
  const turns = new Set(spec.tokens.map((t) => specials.indexOf(t)));
  return {
    vocab: v.tokens.length,
    low: (i) => v.types[i] !== TOKEN_TYPE.normal,
    turns: (i) => turns.has(i),
    kvs: [
      kv.str("tokenizer.ggml.model", "llama"),
      kv.strs("tokenizer.ggml.tokens", v.tokens),
      kv.f32s("tokenizer.ggml.scores", v.scores),
      kv.i32s("tokenizer.ggml.token_type", v.types),
      kv.u32("tokenizer.ggml.bos_token_id", specials.indexOf("<s>")),
      // ChatML turns (and every format with a turn token) end on the eos token
      kv.u32("tokenizer.ggml.eos_token_id", specials.indexOf(spec.endOfTurn ?? "</s>")),
      kv.u32("tokenizer.ggml.unknown_token_id", UNK_ID),
      kv.bool("tokenizer.ggml.add_bos_token", true),
      kv.bool("tokenizer.ggml.add_eos_token", false),
      // By default no implicit leading space: text after a special token is not turned into
      // "▁text", so tokenize/detokenize round-trips exactly ("<|im_start|>user\n" stays "user").
      kv.bool("tokenizer.ggml.add_space_prefix", spacePrefix),
      ...chatTemplateKv(format),
    ],
  };
}

function chatTemplateKv(format: ChatFormat): KvEntry[] {
  const t = CHAT_FORMATS[format].template;
  return t === undefined ? [] : [kv.str("tokenizer.chat_template", t)];
}

const GEMMA_GAIN = 4;

export function buildModel(opts: MakeModelOptions = {}): { kvs: KvEntry[]; tensors: TensorSpec[] } {
  const { shape = "tiny", type = "Q4_0", seed = 1, embedding = false, ranking = false, tokenizer = "spm", template = "chatml", tied = false } = opts;
  const full = SHAPES[shape];
  if (!full) throw new Error(`unknown shape ${shape}`);
  const layers = opts.layers ?? full.layers;
  if (!Number.isInteger(layers) || layers < 1 || layers > full.layers) throw new Error(`layers must be 1 to ${full.layers} for shape ${shape}, got ${layers}`);
  const s = { ...full, layers };
  const quietFrom = opts.quietFrom ?? Infinity;
  if (opts.quietFrom !== undefined && (!Number.isInteger(quietFrom) || quietFrom < 0)) throw new Error(`quietFrom must be a block index, got ${opts.quietFrom}`);
  if (!(type in FILE_TYPE)) throw new Error(`unknown type ${type}`);
  if (embedding && ranking) throw new Error("a model is an embedding model or a reranker, not both");
  const headDim = s.embd / s.heads;
  const kvDim = headDim * s.headsKv;
  const head = (arch: string) => [
    kv.str("general.architecture", arch),
    kv.str("general.name", `ollamats-test-${shape}${kindTag(opts)}${embedding ? "-embed" : ""}${ranking ? "-rank" : ""}`),
    kv.u32("general.file_type", FILE_TYPE[type]),
    kv.u32("general.quantization_version", 2),
    // bump when the weights or vocabulary change, so cached files are regenerated
    kv.u32("ollamats.test_model_version", GENERATOR_VERSION),
  ];
  if (opts.arch === "bert" || opts.arch === "nomic-bert") {
    if (opts.experts || opts.quietFrom !== undefined || (ranking && opts.arch !== "bert")) throw new Error(`--arch ${opts.arch} is an encoder: no --experts or --quiet-from (and --ranking for bert only)`);
    return buildBertModel({
      arch: opts.arch, type, seed, headKvs: head(opts.arch),
      shape: { ...s, contextLength: opts.arch === "bert" ? BERT_CONTEXT : NOMIC_CONTEXT },
      ...(ranking ? { pooling: "rank" as const } : {}),
    });
  }
  const tok = tokenizerKvs(tokenizer, template, s.vocab, opts.spacePrefix === true);
  if (ranking && (opts.arch ?? "llama") !== "llama") throw new Error("a reranker is a qwen3 or bert model: --arch does not apply but bert");
  if (!ARCHITECTURES.includes(opts.arch ?? "llama")) throw new Error(`unknown architecture ${opts.arch}`);
  const experts = opts.experts ?? 0;
  if (experts !== 0 && (!Number.isInteger(experts) || experts < 2 || experts > 64 || !["llama", "qwen3"].includes(opts.arch ?? "llama"))) {
    throw new Error("experts must be 2 to 64, for the llama or qwen3 architecture");
  }
  const outRows = (row: number) => (opts.endsTurns && tok.turns(row) ? TURN_ROW_SCALE : tok.low(row) ? SPECIAL_ROW_SCALE : 1);
  if (opts.arch === "mamba" || opts.arch === "jamba") {
    if (ranking || embedding || experts || opts.quietFrom !== undefined || tied) throw new Error(`--arch ${opts.arch} is a plain generative model: no --ranking, --embedding, --experts, --quiet-from or --tied`);
    // jamba: every other layer attention, the rest Mamba
    const hybrid = opts.arch === "jamba" ? { attentionEvery: 2, heads: s.heads, headsKv: s.headsKv, ffn: s.ffn } : {};
    return buildMambaModel({ layers: s.layers, embd: s.embd, vocab: s.vocab, type, seed, headKvs: [...head(opts.arch), ...tok.kvs], outRows, ...hybrid });
  }
  const arch = ranking ? "qwen3" : experts && opts.arch === "qwen3" ? "qwen3moe" : opts.arch ?? "llama";
  const biases = arch === "qwen2";
  // Gemma: GELU, embeddings scaled by √n_embd, always tied (llama.cpp refuses an output.weight
  // for gemma and gemma2); gemma2/3 add norms after attention and MLP, gemma2 soft-caps logits,
  // gemma3 normalises queries and keys per head; both alternate sliding-window layers.
  const gemma = arch.startsWith("gemma");
  const tiedOut = tied || gemma;
  const pooling = embedding ? POOLING_MEAN : ranking ? POOLING_RANK : undefined;
  const kvs: KvEntry[] = [
    ...head(arch),
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
    ...(gemma ? [kv.u32(`${arch}.attention.key_length`, headDim), kv.u32(`${arch}.attention.value_length`, headDim)] : []),
    ...(arch === "gemma2" ? [kv.u32(`${arch}.attention.sliding_window`, 256), kv.f32(`${arch}.attn_logit_softcapping`, 50), kv.f32(`${arch}.final_logit_softcapping`, 30)] : []),
    ...(arch === "gemma3" ? [kv.u32(`${arch}.attention.sliding_window`, 256)] : []),
    ...(arch === "phi3" ? [kv.u32(`${arch}.rope.scaling.original_context_length`, s.contextLength), kv.u32(`${arch}.attention.sliding_window`, 0)] : []),
    ...(experts ? [kv.u32(`${arch}.expert_count`, experts), kv.u32(`${arch}.expert_used_count`, 2)] : []),
    ...(arch === "qwen3moe" ? [kv.u32(`${arch}.expert_feed_forward_length`, s.ffn)] : []),
    ...(pooling !== undefined ? [kv.u32(`${arch}.pooling_type`, pooling)] : []),
    ...(ranking ? [kv.strs(`${arch}.classifier.output_labels`, RANK_LABELS)] : []),
    ...tok.kvs,
  ];
  const inStd = 1 / Math.sqrt(s.embd);
  // logits std ~3: peaked enough to be word-like, varied enough not to loop on one token
  const outStd = 3 / Math.sqrt(s.embd);
  // tied: the embeddings are the output matrix too, so they get its scale (RMS norm makes the
  // input side indifferent to it)
  const tensors: TensorSpec[] = [
    tiedOut
      ? randomTensor("token_embd.weight", [s.embd, s.vocab], type, seed, outStd, outRows)
      : randomTensor("token_embd.weight", [s.embd, s.vocab], type, seed, 1),
  ];
  for (let i = 0; i < s.layers; i++) {
    const p = `blk.${i}.`;
    // Gemma's input is the embedding times √n_embd: its layers' outputs are made as large (gemma2/3
    // through their post norms), or the residual stream would be the input token alone.
    const out = (i >= quietFrom ? QUIET_SCALE : 1) * (arch === "gemma" ? GEMMA_GAIN : 1);
    // phi3 keeps q, k and v in one matrix (rows in that order), and gate and up in another
    const qkv = arch === "phi3"
      ? [randomTensor(`${p}attn_qkv.weight`, [s.embd, s.embd + 2 * kvDim], type, seed, inStd)]
      : [randomTensor(`${p}attn_q.weight`, [s.embd, s.embd], type, seed, inStd), randomTensor(`${p}attn_k.weight`, [s.embd, kvDim], type, seed, inStd), randomTensor(`${p}attn_v.weight`, [s.embd, kvDim], type, seed, inStd)];
    // experts: a router, then each expert's gate, up and down matrices stacked on a third axis
    const gateUp = arch === "phi3"
      ? [randomTensor(`${p}ffn_up.weight`, [s.embd, 2 * s.ffn], type, seed, inStd)]
      : experts
        ? [
          randomTensor(`${p}ffn_gate_inp.weight`, [s.embd, experts], type, seed, inStd),
          randomTensor(`${p}ffn_gate_exps.weight`, [s.embd, s.ffn, experts], type, seed, inStd),
          randomTensor(`${p}ffn_up_exps.weight`, [s.embd, s.ffn, experts], type, seed, inStd),
        ]
        : [randomTensor(`${p}ffn_gate.weight`, [s.embd, s.ffn], type, seed, inStd), randomTensor(`${p}ffn_up.weight`, [s.embd, s.ffn], type, seed, inStd)];
    const down = experts ? `${p}ffn_down_exps.weight` : `${p}ffn_down.weight`;
    tensors.push(
      constTensor(`${p}attn_norm.weight`, [s.embd], 1),
      ...qkv,
      ...(biases
        ? [
          randomTensor(`${p}attn_q.bias`, [s.embd], "F32", seed, 0.1),
          randomTensor(`${p}attn_k.bias`, [kvDim], "F32", seed, 0.1),
          randomTensor(`${p}attn_v.bias`, [kvDim], "F32", seed, 0.1),
        ]
        : []),
      randomTensor(`${p}attn_output.weight`, [s.embd, s.embd], type, seed, inStd * out),
      // qwen3 normalises queries and keys per head
      ...(arch === "qwen3" || arch === "qwen3moe" || arch === "gemma3" ? [constTensor(`${p}attn_q_norm.weight`, [headDim], 1), constTensor(`${p}attn_k_norm.weight`, [headDim], 1)] : []),
      ...(arch === "gemma2" || arch === "gemma3" ? [constTensor(`${p}post_attention_norm.weight`, [s.embd], GEMMA_GAIN), constTensor(`${p}post_ffw_norm.weight`, [s.embd], GEMMA_GAIN)] : []),
      constTensor(`${p}ffn_norm.weight`, [s.embd], 1),
      ...gateUp,
      randomTensor(down, experts ? [s.ffn, s.embd, experts] : [s.ffn, s.embd], type, seed, out / Math.sqrt(s.ffn)),
    );
  }
  tensors.push(constTensor("output_norm.weight", [s.embd], 1));
  if (ranking) {
    // The relevance head: one row per label, scores of a few units so the softmax varies.
    tensors.push(randomTensor("cls.output.weight", [s.embd, RANK_LABELS.length], "F32", seed, 3 / Math.sqrt(s.embd)));
    return { kvs, tensors };
  }
  if (!tiedOut) tensors.push(randomTensor("output.weight", [s.embd, s.vocab], type, seed, outStd, outRows));
  return { kvs, tensors };
}

export function checkSeed(seed: number): void {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`seed must be a uint32, got ${seed}`);
}

/** Writes (or reuses: same size and same header bytes) the model file and returns its absolute path. */
export async function makeTestModel(opts: MakeModelOptions = {}): Promise<string> {
  const outDir = resolve(opts.outDir ?? DEFAULT_MODEL_DIR);
  checkSeed(opts.seed ?? 1);
  const path = join(outDir, modelFileName(opts));
  const { kvs, tensors } = buildModel(opts);
  return writeGgufCached(path, kvs, tensors);
}

/** Command-line flags (node:util parseArgs rejects unknown ones and missing values). */
function optionsFromArgv(argv: string[]): MakeModelOptions {
  const { values: v } = parseArgs({
    args: argv,
    options: {
      shape: { type: "string" },
      type: { type: "string" },
      seed: { type: "string" },
      embedding: { type: "boolean" },
      ranking: { type: "boolean" },
      layers: { type: "string" },
      "quiet-from": { type: "string" },
      tokenizer: { type: "string" },
      template: { type: "string" },
      tied: { type: "boolean" },
      "ends-turns": { type: "boolean" },
      arch: { type: "string" },
      experts: { type: "string" },
      out: { type: "string" },
    },
  });
  if (v.shape !== undefined && !(v.shape in SHAPES)) throw new Error(`--shape must be one of ${Object.keys(SHAPES).join(", ")}`);
  if (v.type !== undefined && !(v.type in FILE_TYPE)) throw new Error(`--type must be one of ${Object.keys(FILE_TYPE).join(", ")}`);
  const oneOf = (flag: string, value: string | undefined, allowed: readonly string[]) => {
    if (value !== undefined && !allowed.includes(value)) throw new Error(`--${flag} must be one of ${allowed.join(", ")}`);
  };
  oneOf("tokenizer", v.tokenizer, TOKENIZERS);
  oneOf("template", v.template, Object.keys(CHAT_FORMATS));
  oneOf("arch", v.arch, ARCHITECTURES);
  return {
    shape: v.shape as ModelShape | undefined,
    type: v.type as ModelType | undefined,
    seed: v.seed === undefined ? undefined : Number(v.seed),
    embedding: v.embedding,
    ranking: v.ranking,
    layers: v.layers === undefined ? undefined : Number(v.layers),
    quietFrom: v["quiet-from"] === undefined ? undefined : Number(v["quiet-from"]),
    tokenizer: v.tokenizer as Tokenizer | undefined,
    template: v.template as ChatFormat | undefined,
    tied: v.tied,
    endsTurns: v["ends-turns"],
    arch: v.arch as Architecture | undefined,
    experts: v.experts === undefined ? undefined : Number(v.experts),
    outDir: v.out,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    console.log(await makeTestModel(optionsFromArgv(process.argv.slice(2))));
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  }
}
