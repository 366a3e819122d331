// A BERT encoder directory (a sentence-transformers checkpoint: all-MiniLM, bge, e5, mxbai-embed)
// converted to llama.cpp's "bert" embedding model, as Ollama's convert_bert.go does: tensors
// renamed to llama.cpp's names, matrices as F16 and vectors and token types as F32, the WordPiece vocabulary in
// phantom-space form (hf-tokenizer.ts), bidirectional attention, and the pooling the checkpoint's
// sentence-transformers modules ask for. Unlike Ollama, a directory without modules.json is
// converted with mean pooling (sentence-transformers' default) instead of refused.
import { kv, type KvEntry } from "./gguf-write.js";
import { ConvertError, count, modelNameOf, num, readJson, readSources, readTokenizer, type ConvertPlan, type Source } from "./hf-source.js";
import { obj } from "./hf-tokenizer.js";

/** config.json's architectures that are a BERT encoder (a masked-LM head is left out). */
export const BERT_ARCHITECTURES: ReadonlySet<string> = new Set(["BertModel", "BertForMaskedLM"]);

/** Hugging Face names → llama.cpp's, in order: "attention.output.dense" before "output.dense". */
const RENAMES: ReadonlyArray<[string, string]> = [
  ["encoder.layer.", "blk."],
  ["embeddings.word_embeddings", "token_embd"],
  ["embeddings.token_type_embeddings", "token_types"],
  ["embeddings.position_embeddings", "position_embd"],
  ["embeddings.LayerNorm", "token_embd_norm"],
  ["attention.self.query", "attn_q"],
  ["attention.self.key", "attn_k"],
  ["attention.self.value", "attn_v"],
  ["attention.output.dense", "attn_output"],
  ["attention.output.LayerNorm", "attn_output_norm"],
  ["intermediate.dense", "ffn_up"],
  ["output.dense", "ffn_down"],
  ["output.LayerNorm", "layer_output_norm"],
];

/** Each layer's tensors, all of which a BertModel has. */
const PER_LAYER = ["attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm", "ffn_up", "ffn_down", "layer_output_norm"].flatMap((n) => [`${n}.weight`, `${n}.bias`]);

/** The tensors outside the layers (token types are optional in llama.cpp). */
const GLOBAL = ["token_embd.weight", "position_embd.weight", "token_types.weight", "token_embd_norm.weight", "token_embd_norm.bias"];

/** llama.cpp's LLAMA_POOLING_TYPE_MEAN, _CLS and _LAST. */
const POOLING = { mean: 1, cls: 2, last: 3 } as const;

/** The checkpoint's own name for a tensor without the wrappers some savers add ("bert.", gamma/beta). */
function plainName(name: string): string {
  return name.replace(/^bert\./, "").replace(/\.gamma$/, ".weight").replace(/\.beta$/, ".bias");
}

/** Buffers and heads an embedding model does not use: the position ids (an integer buffer), the
 *  pooler, a masked-LM or next-sentence head. */
function unused(name: string): boolean {
  const n = plainName(name);
  return n === "embeddings.position_ids" || n.startsWith("pooler.") || n.startsWith("cls.");
}

interface Dims {
  hidden: number;
  ffn: number;
  positions: number;
  types: number;
}

/** The Hugging Face shape ([out, in]) of a renamed tensor (without `blk.N.`); vocabulary rows free. */
function expectedShape(name: string, d: Dims, rows: number): number[] | undefined {
  const [base, kind] = [name.slice(0, name.lastIndexOf(".")), name.slice(name.lastIndexOf(".") + 1)];
  switch (base) {
    case "token_embd":
      return kind === "weight" ? [rows, d.hidden] : undefined;
    case "position_embd":
      return kind === "weight" ? [d.positions, d.hidden] : undefined;
    case "token_types":
      return kind === "weight" ? [d.types, d.hidden] : undefined;
    case "token_embd_norm":
    case "attn_output_norm":
    case "layer_output_norm":
      return [d.hidden];
    case "attn_q":
    case "attn_k":
    case "attn_v":
    case "attn_output":
      return kind === "weight" ? [d.hidden, d.hidden] : [d.hidden];
    case "ffn_up":
      return kind === "weight" ? [d.ffn, d.hidden] : [d.ffn];
    case "ffn_down":
      return kind === "weight" ? [d.hidden, d.ffn] : [d.hidden];
    default:
      return undefined;
  }
}

/** The pooling sentence-transformers' modules.json asks for (mean without one). */
async function pooling(files: Map<string, string>): Promise<{ type: number; normalize: boolean }> {
  const modules = await readJson(files, "modules.json");
  if (modules === undefined) return { type: POOLING.mean, normalize: false };
  if (!Array.isArray(modules)) throw new ConvertError("modules.json is not a list of sentence-transformers modules");
  let pool: string | undefined;
  let normalize = false;
  for (const m of modules) {
    const type = obj(m)?.type;
    if (type === "sentence_transformers.models.Pooling") pool = typeof obj(m)?.path === "string" ? (obj(m)!.path as string) : "";
    if (type === "sentence_transformers.models.Normalize") normalize = true;
  }
  if (pool === undefined) return { type: POOLING.mean, normalize };
  const name = pool === "" ? "config.json" : `${pool.replace(/\/+$/, "")}/config.json`;
  const c = obj(await readJson(files, name));
  if (!c) throw new ConvertError(`modules.json names a Pooling module in ${JSON.stringify(pool)}, but ${name} is not among the files; add the directory's ${name}`);
  if (c.pooling_mode_mean_tokens === true) return { type: POOLING.mean, normalize };
  if (c.pooling_mode_cls_token === true) return { type: POOLING.cls, normalize };
  if (c.pooling_mode_lasttoken === true) return { type: POOLING.last, normalize };
  throw new ConvertError(`${name}: a pooling mode llama.cpp does not compute (it pools by mean, [CLS] token or last token)`);
}

export async function planBertConversion(files: Map<string, string>, config: Record<string, unknown>): Promise<ConvertPlan> {
  const hidden = count(config.hidden_size);
  const layers = count(config.num_hidden_layers);
  const heads = count(config.num_attention_heads);
  const ffn = count(config.intermediate_size);
  const positions = count(config.max_position_embeddings);
  if (!hidden || !layers || !heads || !ffn || !positions) {
    throw new ConvertError("config.json lacks hidden_size, num_hidden_layers, num_attention_heads, intermediate_size or max_position_embeddings");
  }
  if (hidden % heads !== 0) throw new ConvertError(`config.json: hidden_size ${hidden} does not split into ${heads} attention heads`);
  const act = config.hidden_act ?? "gelu";
  if (typeof act !== "string" || !act.startsWith("gelu")) throw new ConvertError(`config.json: hidden_act ${JSON.stringify(act)}; llama.cpp's BERT uses GELU`);
  const posType = config.position_embedding_type ?? "absolute";
  if (posType !== "absolute") throw new ConvertError(`config.json: position_embedding_type ${JSON.stringify(posType)}; llama.cpp's BERT has absolute position embeddings`);

  const sources = await readSources(files, unused);
  const tensors = new Map<string, Source>();
  for (const s of sources) {
    let name = plainName(s.name);
    for (const [from, to] of RENAMES) name = name.split(from).join(to);
    if (tensors.has(name)) throw new ConvertError(`tensor ${s.name} appears twice`);
    tensors.set(name, s);
  }
  const embd = tensors.get("token_embd.weight");
  if (!embd) throw new ConvertError("the safetensors files have no embeddings.word_embeddings.weight");
  const types = tensors.get("token_types.weight")?.tensor.shape[0] ?? count(config.type_vocab_size) ?? 2;
  const dims: Dims = { hidden, ffn, positions, types };
  const rows = embd.tensor.shape[0] ?? 0;
  const plan: ConvertPlan = { kvs: [], tensors: [], totalBytes: 0 };
  for (const [name, s] of tensors) {
    const layer = /^blk\.(\d+)\./.exec(name);
    if (layer && Number(layer[1]) >= layers) throw new ConvertError(`tensor ${s.name} is for layer ${layer[1]}, but config.json says ${layers} layers`);
    const own = name.replace(/^blk\.\d+\./, "");
    const want = expectedShape(own, dims, rows);
    if (!want || !(layer ? PER_LAYER : GLOBAL).includes(own)) throw new ConvertError(`tensor ${s.name} is not part of a BERT model as ollamats converts it`);
    const shape = s.tensor.shape;
    if (want.join() !== shape.join() || shape.includes(0)) throw new ConvertError(`tensor ${s.name} has shape [${shape.join(", ")}]; config.json makes it [${want.join(", ")}]`);
    // token-type rows are added to F32 activations: llama.cpp's CPU add takes no F16 operand
    plan.tensors.push({ source: s, name, dims: [...shape].reverse(), type: shape.length === 1 || name === "token_types.weight" ? "F32" : "F16" });
    plan.totalBytes += s.tensor.bytes;
  }
  for (const n of ["position_embd.weight", "token_embd_norm.weight", "token_embd_norm.bias"]) {
    if (!tensors.has(n)) throw new ConvertError(`the safetensors files have no ${n.replace("position_embd", "embeddings.position_embeddings").replace("token_embd_norm", "embeddings.LayerNorm")}`);
  }
  for (let i = 0; i < layers; i++) {
    const missing = PER_LAYER.filter((n) => !tensors.has(`blk.${i}.${n}`));
    if (missing.length === PER_LAYER.length) throw new ConvertError(`the safetensors files have no weights for layer ${i} (config.json says ${layers} layers)`);
    if (missing.length > 0) throw new ConvertError(`layer ${i} lacks ${missing.join(", ")}`);
  }

  const tokenizer = await readTokenizer(files, rows, {}, "embeddings.word_embeddings.weight");
  const pool = await pooling(files);
  const p = (k: string) => `bert.${k}`;
  const modelName = modelNameOf(config);
  const kvs: KvEntry[] = [
    kv.str("general.architecture", "bert"),
    ...(modelName ? [kv.str("general.name", modelName)] : []),
    kv.u32("general.file_type", 1),
    kv.u32("general.quantization_version", 2),
    ...tokenizer,
    kv.u32("tokenizer.ggml.token_type_count", types),
    kv.u32(p("context_length"), positions),
    kv.u32(p("embedding_length"), hidden),
    kv.u32(p("feed_forward_length"), ffn),
    kv.u32(p("block_count"), layers),
    kv.u32(p("attention.head_count"), heads),
    kv.f32(p("attention.layer_norm_epsilon"), num(config.layer_norm_eps) ?? 1e-12),
    kv.bool(p("attention.causal"), false),
    kv.u32(p("pooling_type"), pool.type),
    kv.bool(p("normalize_embeddings"), pool.normalize),
  ];
  plan.kvs = kvs;
  return plan;
}
