// A LoRA adapter saved as safetensors (Hugging Face PEFT's adapter_model.safetensors with its
// adapter_config.json, or mlx-lm's adapters.safetensors) converted to the GGUF adapter llama.cpp
// loads, for the base model it is created on, as Ollama's `ADAPTER ./dir` does. Each pair of
// low-rank matrices becomes `<base tensor>.lora_a` (ggml dims [n_in, rank]) and `.lora_b`
// ([rank, n_out]), checked against the base model's own tensor before a byte is written; Llama's
// q/k rows are reordered as the base's were (hf-convert.ts). llama.cpp scales B(Ax) by
// adapter.lora.alpha / rank, one alpha per file, so a module whose PEFT scale differs (rsLoRA,
// alpha_pattern) or mlx-lm's direct `scale` gets the difference folded into its B values.
import type { GgufInfo } from "./gguf.js";
import { kv } from "./gguf-write.js";
import { ConvertError, count, num, readJson, readSources, type ConvertPlan, type PlannedTensor, type Source } from "./hf-source.js";
import { obj } from "./hf-tokenizer.js";

/** Base architectures whose llama.cpp tensors are Hugging Face's projections by another name. */
const BASES: Readonly<Record<string, { repack: boolean }>> = {
  llama: { repack: true },
  qwen2: { repack: false },
  qwen3: { repack: false },
  qwen3moe: { repack: false },
  gemma: { repack: false },
  gemma2: { repack: false },
  gemma3: { repack: false },
  phi3: { repack: false },
};

const MODULES: Readonly<Record<string, string>> = {
  q_proj: "attn_q",
  k_proj: "attn_k",
  v_proj: "attn_v",
  o_proj: "attn_output",
  gate_proj: "ffn_gate",
  up_proj: "ffn_up",
  down_proj: "ffn_down",
  // Phi-3's fused projections
  qkv_proj: "attn_qkv",
  gate_up_proj: "ffn_up",
};

// The language model's decoder layers under PEFT's `base_model.model.` and the model's own
// prefixes (`model.`, a multimodal model's `language_model.`); PEFT's A/B or mlx-lm's a/b.
const PEFT = /^(?:base_model\.model\.)?(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_(A|B)(?:\.default)?\.weight$/;
const MLX = /^(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_(a|b)$/;

type Config = Record<string, unknown>;

const MAX_RANK = 2048;

/** PEFT's regex key lookup for rank_pattern / alpha_pattern: the pattern matches the module's name or its tail. */
function patternValue(patterns: unknown, module: string): number | undefined {
  for (const [p, v] of Object.entries(obj(patterns) ?? {})) {
    let re: RegExp;
    try {
      re = new RegExp(`^(?:.*\\.)?(?:${p})$`);
    } catch {
      throw new ConvertError(`adapter_config.json: alpha_pattern key ${JSON.stringify(p)} is not a regular expression`);
    }
    if (re.test(module) && num(v) !== undefined) return num(v);
  }
  return undefined;
}

/** The config's refusals: adapter kinds llama.cpp cannot apply. */
function checkConfig(c: Config, mlx: boolean): void {
  const peftType = c.peft_type;
  if (typeof peftType === "string" && peftType.toUpperCase() !== "LORA") throw new ConvertError(`a ${peftType} adapter cannot be converted: llama.cpp applies LoRA adapters only`);
  if (c.use_dora === true || c.fine_tune_type === "dora") {
    throw new ConvertError("a DoRA adapter cannot be converted: llama.cpp applies plain LoRA only; merge the adapter into its base model (PEFT's merge_and_unload) and create from the merged model");
  }
  if (c.fan_in_fan_out === true) throw new ConvertError("adapter_config.json sets fan_in_fan_out, which Llama-family projections never use: this adapter is for another architecture");
  if (mlx && c.fine_tune_type !== undefined && c.fine_tune_type !== "lora") throw new ConvertError(`an mlx-lm ${String(c.fine_tune_type)} fine-tune is not a LoRA adapter`);
}

/**
 * The per-module alpha llama.cpp must see for PEFT's or mlx-lm's scale with this rank: PEFT's
 * scale is lora_alpha / r (or / √r with rsLoRA), mlx-lm's is its `scale` outright.
 */
function alphaFor(c: Config, mlx: boolean, module: string, rank: number): number {
  if (mlx) {
    const p = obj(c.lora_parameters) ?? {};
    const scale = num(p.scale);
    if (scale !== undefined) return scale * rank;
    const alpha = num(p.alpha) ?? num(c.lora_alpha);
    if (alpha !== undefined) return alpha; // Ollama's reading of an alpha without a scale
    throw new ConvertError("adapter_config.json gives no lora_parameters.scale: mlx-lm writes it with the adapter; copy the adapter's whole directory");
  }
  const alpha = patternValue(c.alpha_pattern, module) ?? num(c.lora_alpha) ?? 8; // PEFT's default
  return c.use_rslora === true ? alpha * Math.sqrt(rank) : alpha;
}

interface Pair {
  base: string;
  module: string;
  a?: Source;
  b?: Source;
}

/** Plan the GGUF adapter for `files` (name → path) on the base model `base`. */
export async function planAdapterConversion(files: Map<string, string>, base: GgufInfo): Promise<ConvertPlan> {
  const arch = String(base.metadata["general.architecture"] ?? "");
  const spec = Object.hasOwn(BASES, arch) ? BASES[arch] : undefined;
  if (!spec) {
    throw new ConvertError(
      `ollamats converts safetensors adapters for ${Object.keys(BASES).join(", ")} models, not ${arch || "this"} one; convert it with llama.cpp's convert_lora_to_gguf.py and use the .gguf file`,
    );
  }
  const config = obj(await readJson(files, "adapter_config.json"));
  if (!config) {
    throw new ConvertError("adapter_config.json is missing: a safetensors adapter needs the adapter_config.json saved with it (name the adapter's directory)");
  }
  const sources = await readSources(files);
  if (sources.length === 0) throw new ConvertError("the adapter has no tensors");
  const mlx = sources.every((s) => /\.lora_[ab]$/.test(s.name));
  checkConfig(config, mlx);

  const baseTensors = new Map(base.tensors.map((t) => [t.name, t]));
  const pairs = new Map<string, Pair>();
  for (const s of sources) {
    const m = (mlx ? MLX : PEFT).exec(s.name);
    const layer = m?.[1];
    const proj = m?.[2];
    const target = proj && Object.hasOwn(MODULES, proj) ? MODULES[proj] : undefined;
    if (!m || !target) {
      if (/modules_to_save|embed_tokens|lm_head/.test(s.name)) {
        throw new ConvertError(`tensor ${s.name} is a fully trained module, which a llama.cpp LoRA adapter cannot carry; merge the adapter into its base model (PEFT's merge_and_unload) and create from the merged model`);
      }
      throw new ConvertError(`tensor ${s.name} is not a LoRA matrix of a decoder layer's attention or MLP projection`);
    }
    const baseName = `blk.${layer}.${target}.weight`;
    if (!baseTensors.has(baseName)) throw new ConvertError(`tensor ${s.name} adapts ${baseName}, which the base model does not have`);
    const p = pairs.get(baseName) ?? { base: baseName, module: s.name.replace(/\.lora_[ABab](\.default)?(\.weight)?$/, "") };
    const side = m[3]!.toLowerCase() as "a" | "b";
    if (p[side]) throw new ConvertError(`tensor ${s.name} appears twice`);
    p[side] = s;
    pairs.set(baseName, p);
  }

  const plan: ConvertPlan = { kvs: [], tensors: [], totalBytes: 0 };
  let alpha: number | undefined;
  for (const p of [...pairs.values()].sort((x, y) => compareNames(x.base, y.base))) {
    if (!p.a || !p.b) throw new ConvertError(`${p.module} has lora_${p.a ? "B" : "A"} missing`);
    const w = baseTensors.get(p.base)!;
    const [nIn, nOut] = [Number(w.dims[0]), Number(w.dims[1])];
    // As stored: PEFT's A is [rank, n_in] and B [n_out, rank]; mlx-lm keeps both transposed.
    const [aShape, bShape] = [p.a.tensor.shape, p.b.tensor.shape];
    const rank = mlx ? aShape[1] : aShape[0];
    const fits =
      aShape.length === 2 && bShape.length === 2 && rank !== undefined && rank > 0 && rank <= Math.min(nIn, nOut) &&
      (mlx ? aShape[0] === nIn && bShape[0] === rank && bShape[1] === nOut : aShape[1] === nIn && bShape[0] === nOut && bShape[1] === rank);
    if (!fits) {
      const want = mlx ? `[${nIn}, r] and [r, ${nOut}]` : `[r, ${nIn}] and [${nOut}, r]`;
      throw new ConvertError(`${p.module}: lora_A [${aShape.join(", ")}] and lora_B [${bShape.join(", ")}] do not fit ${p.base} of the base model (${want})`);
    }
    // real adapters' ranks are 4–256; a transposed (mlx-lm) matrix is read whole, so a bound
    if (rank > MAX_RANK) throw new ConvertError(`${p.module}: rank ${rank} is more than the ${MAX_RANK} ollamats converts`);
    const moduleAlpha = alphaFor(config, mlx, p.module, rank);
    if (!(moduleAlpha > 0) || !Number.isFinite(moduleAlpha)) throw new ConvertError(`adapter_config.json gives ${p.module} a scale of ${moduleAlpha}`);
    alpha ??= moduleAlpha;
    const scale = moduleAlpha === alpha ? undefined : moduleAlpha / alpha;
    const heads = spec.repack ? repackHeads(p.base, base.metadata, arch) : undefined;
    if (heads !== undefined && nOut % (heads * 2) !== 0) throw new ConvertError(`${p.base}: ${nOut} rows do not split into ${heads} heads`);
    // Adapters are small: their precision is kept (F32 stays F32), bfloat16 becomes F16.
    const type = (s: Source) => (s.tensor.dtype === "F32" ? "F32" : "F16");
    const a: PlannedTensor = { name: `${p.base}.lora_a`, dims: [nIn, rank], type: type(p.a), source: p.a, ...(mlx ? { transposed: true } : {}) };
    const b: PlannedTensor = {
      name: `${p.base}.lora_b`,
      dims: [rank, nOut],
      type: type(p.b),
      source: p.b,
      ...(mlx ? { transposed: true } : {}),
      ...(scale !== undefined ? { scale } : {}),
      ...(heads ? { repackHeads: heads } : {}),
    };
    plan.tensors.push(a, b);
    plan.totalBytes += p.a.tensor.bytes + p.b.tensor.bytes;
  }
  plan.kvs = [
    kv.str("general.architecture", arch),
    kv.str("general.type", "adapter"),
    kv.str("adapter.type", "lora"),
    kv.f32("adapter.lora.alpha", alpha!),
  ];
  return plan;
}

/** Llama's q and k heads, for reordering B's rows as the base model's were reordered. */
function repackHeads(name: string, meta: GgufInfo["metadata"], arch: string): number | undefined {
  const heads = count(Number(meta[`${arch}.attention.head_count`]));
  if (/\.attn_q\.weight$/.test(name)) return heads;
  if (/\.attn_k\.weight$/.test(name)) return count(Number(meta[`${arch}.attention.head_count_kv`])) ?? heads;
  return undefined;
}

/** blk.2 before blk.10. */
function compareNames(a: string, b: string): number {
  return a.localeCompare(b, "en", { numeric: true });
}
