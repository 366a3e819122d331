// Flash attention and KV cache types per model: OLLAMA_FLASH_ATTENTION, OLLAMA_KV_CACHE_TYPE and
// the _K/_V extension against what the model can do.
import { describe, expect, it } from "vitest";
import { checkKvSettings, KvConfigError, resolveKvCache, type AttentionFacts, type KvSettings } from "../../src/backends/llamacpp/kv-cache.js";

const llama: AttentionFacts = { architecture: "llama", headDimK: 128, headDimV: 128, isEmbedding: false };
const hd16: AttentionFacts = { ...llama, headDimK: 16, headDimV: 16 };

function settings(s: Partial<KvSettings> & { type?: string }): KvSettings {
  const type = s.type ?? "";
  return { flashAttention: s.flashAttention, kvCacheType: type, kvCacheTypeK: s.kvCacheTypeK ?? type, kvCacheTypeV: s.kvCacheTypeV ?? type };
}

describe("resolveKvCache", () => {
  it("defaults: f16, flash attention automatic (on where the model allows it, as Ollama main and node-llama-cpp), off when asked", () => {
    expect(resolveKvCache(settings({}), llama)).toEqual({ flashAttention: true, typeK: "f16", typeV: "f16", warnings: [] });
    expect(resolveKvCache(settings({ flashAttention: false }), llama).flashAttention).toBe(false);
    expect(resolveKvCache(settings({}), { ...llama, isEmbedding: true }).flashAttention).toBe(false);
  });

  it("a quantized V cache turns flash attention on when the setting is automatic", () => {
    expect(resolveKvCache(settings({ type: "q8_0" }), llama)).toEqual({ flashAttention: true, typeK: "q8_0", typeV: "q8_0", warnings: [] });
    expect(resolveKvCache(settings({ kvCacheTypeK: "q8_0", kvCacheTypeV: "q4_0" }), llama)).toEqual({
      flashAttention: true,
      typeK: "q8_0",
      typeV: "q4_0",
      warnings: [],
    });
  });

  it("a quantized K cache alone needs no flash attention", () => {
    expect(resolveKvCache(settings({ kvCacheTypeK: "q8_0", flashAttention: false }), llama)).toEqual({ flashAttention: false, typeK: "q8_0", typeV: "f16", warnings: [] });
  });

  it("OLLAMA_KV_CACHE_TYPE with OLLAMA_FLASH_ATTENTION=0: f16, as Ollama does, with a warning", () => {
    const r = resolveKvCache(settings({ type: "q4_0", flashAttention: false }), llama);
    expect(r).toMatchObject({ flashAttention: false, typeK: "f16", typeV: "f16" });
    expect(r.warnings).toEqual(["OLLAMA_KV_CACHE_TYPE=q4_0 needs flash attention, which OLLAMA_FLASH_ATTENTION turns off; using f16"]);
  });

  it("an explicit OLLAMA_KV_CACHE_TYPE_V with OLLAMA_FLASH_ATTENTION=0 is refused clearly", () => {
    const s = settings({ kvCacheTypeV: "q4_0", flashAttention: false });
    expect(() => checkKvSettings(s)).toThrow(KvConfigError);
    expect(() => checkKvSettings(s)).toThrow(
      "OLLAMA_KV_CACHE_TYPE_V=q4_0 needs flash attention, but OLLAMA_FLASH_ATTENTION turns it off: unset OLLAMA_FLASH_ATTENTION (or set it to 1), or use an f16 V cache",
    );
    expect(() => checkKvSettings(settings({ kvCacheTypeK: "q4_0", flashAttention: false }))).not.toThrow();
  });

  it("a head size the block cannot divide falls back to f16 with a warning (never a failed load)", () => {
    const r = resolveKvCache(settings({ type: "q8_0" }), hd16);
    expect(r).toMatchObject({ flashAttention: true, typeK: "f16", typeV: "f16" });
    expect(r.warnings).toEqual([
      "K cache type q8_0 needs a head size divisible by 32, the model's is 16; using f16",
      "V cache type q8_0 needs a head size divisible by 32, the model's is 16; using f16",
    ]);
  });

  it("a model without flash attention keeps an f16 V cache; its K may stay quantized", () => {
    const embed = { ...llama, isEmbedding: true };
    const r = resolveKvCache(settings({ type: "q8_0" }), embed);
    expect(r).toMatchObject({ flashAttention: false, typeK: "q8_0", typeV: "f16" });
    expect(r.warnings).toEqual(["a quantized V cache needs flash attention, which this model cannot use; V cache uses f16"]);
    expect(resolveKvCache(settings({ flashAttention: true }), { ...llama, architecture: "gemma2" }).flashAttention).toBe(false);
    expect(resolveKvCache(settings({ flashAttention: true }), { ...llama, headDimV: 64 }).flashAttention).toBe(false);
  });

  it("gpt-oss takes only f16", () => {
    const r = resolveKvCache(settings({ type: "q8_0", flashAttention: true }), { ...llama, architecture: "gptoss" });
    expect(r).toMatchObject({ flashAttention: true, typeK: "f16", typeV: "f16" });
    expect(r.warnings).toHaveLength(1);
  });
});
