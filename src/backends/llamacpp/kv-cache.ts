// Flash attention and KV cache types for one model (pure). OLLAMA_FLASH_ATTENTION,
// OLLAMA_KV_CACHE_TYPE and our OLLAMA_KV_CACHE_TYPE_K / _V meet what the model can do:
//   - a type the model's head size cannot hold (ggml blocks of 32 elements must divide it), or a
//     quantized type on an architecture that refuses one, falls back to f16 with a warning;
//   - llama.cpp needs flash attention for a quantized V cache: the V type turns it on when the
//     setting is automatic; OLLAMA_FLASH_ATTENTION=0 with an explicit OLLAMA_KV_CACHE_TYPE_V is a
//     configuration error (refused when the daemon starts); with Ollama's own OLLAMA_KV_CACHE_TYPE
//     it means f16, as Ollama does; a model that cannot use flash attention keeps an f16 V cache.
import { KV_BLOCK_SIZE, type KvCacheType } from "./memory.js";

export interface KvSettings {
  flashAttention: boolean | undefined; // undefined = automatic
  kvCacheType: string; // OLLAMA_KV_CACHE_TYPE ("" = f16)
  kvCacheTypeK: string; // resolved: OLLAMA_KV_CACHE_TYPE_K or OLLAMA_KV_CACHE_TYPE
  kvCacheTypeV: string;
}

export interface AttentionFacts {
  architecture: string;
  headDimK: number;
  headDimV: number;
  isEmbedding: boolean;
}

export interface KvPlan {
  flashAttention: boolean;
  typeK: KvCacheType;
  typeV: KvCacheType;
  /** Fallbacks worth a WARN line. */
  warnings: string[];
}

export class KvConfigError extends Error {}

const QUANT_REFUSED = new Set(["gptoss", "gpt-oss"]); // attention sinks: f16 only (Ollama)
const NO_FLASH = new Set(["gemma2"]);

function asType(s: string): KvCacheType {
  return s === "q8_0" || s === "q4_0" ? s : "f16";
}

/** Ollama's SupportsFlashAttention: not an embedding model, not gemma2, equal non-zero head sizes. */
export function supportsFlashAttention(m: AttentionFacts): boolean {
  return !m.isEmbedding && !NO_FLASH.has(m.architecture) && m.headDimK > 0 && m.headDimK === m.headDimV;
}

/** The V type came from OLLAMA_KV_CACHE_TYPE_V rather than Ollama's shared variable. */
function explicitV(s: KvSettings): boolean {
  return asType(s.kvCacheTypeV) !== asType(s.kvCacheType);
}

/** Throws when the settings contradict each other, whatever the model (checked at start). */
export function checkKvSettings(s: KvSettings): void {
  const v = asType(s.kvCacheTypeV);
  if (v !== "f16" && s.flashAttention === false && explicitV(s)) {
    throw new KvConfigError(
      `OLLAMA_KV_CACHE_TYPE_V=${v} needs flash attention, but OLLAMA_FLASH_ATTENTION turns it off: ` +
        `unset OLLAMA_FLASH_ATTENTION (or set it to 1), or use an f16 V cache`,
    );
  }
}

export function resolveKvCache(s: KvSettings, m: AttentionFacts): KvPlan {
  checkKvSettings(s);
  const warnings: string[] = [];
  let k = asType(s.kvCacheTypeK);
  let v = asType(s.kvCacheTypeV);

  if (QUANT_REFUSED.has(m.architecture) && (k !== "f16" || v !== "f16")) {
    warnings.push(`the ${m.architecture} architecture supports only an f16 KV cache; using f16`);
    k = "f16";
    v = "f16";
  }
  const fitsHead = (t: KvCacheType, dim: number) => dim > 0 && dim % KV_BLOCK_SIZE[t] === 0;
  if (!fitsHead(k, m.headDimK)) {
    warnings.push(`K cache type ${k} needs a head size divisible by ${KV_BLOCK_SIZE[k]}, the model's is ${m.headDimK}; using f16`);
    k = "f16";
  }
  if (!fitsHead(v, m.headDimV)) {
    warnings.push(`V cache type ${v} needs a head size divisible by ${KV_BLOCK_SIZE[v]}, the model's is ${m.headDimV}; using f16`);
    v = "f16";
  }

  const modelFa = supportsFlashAttention(m);
  // Unset is automatic, as in Ollama main and node-llama-cpp's own default ("auto": llama.cpp
  // turns it on wherever the device supports it, the CPU included): on when the model allows it.
  // Off (classic Ollama's default) cost 8-30% of prompt speed against the engine's defaults.
  let fa = s.flashAttention !== false && modelFa;
  if (v !== "f16") {
    if (s.flashAttention === false) {
      // Only Ollama's shared variable gets here (checkKvSettings refuses the explicit one):
      // Ollama ignores the cache type without flash attention.
      warnings.push(`OLLAMA_KV_CACHE_TYPE=${v} needs flash attention, which OLLAMA_FLASH_ATTENTION turns off; using f16`);
      v = "f16";
      if (asType(s.kvCacheTypeK) === asType(s.kvCacheType)) k = "f16";
    } else if (!modelFa) {
      warnings.push(`a quantized V cache needs flash attention, which this model cannot use; V cache uses f16`);
      v = "f16";
    } else {
      fa = true;
    }
  }
  return { flashAttention: fa, typeK: k, typeV: v, warnings };
}
