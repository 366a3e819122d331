// Which type each tensor gets when /api/create quantizes: Ollama's mix for Q4_K_M / Q4_K_S / Q8_0
// (server/quantization.go), the fallbacks for rows a block does not divide, and the tensors left
// alone.
import { describe, expect, it } from "vitest";
import type { GgufInfo, GgufTensorInfo } from "../../src/registry/gguf.js";
import { planTensorTypes } from "../../src/registry/quantize-plan.js";

const F16 = 1;
function tensor(name: string, dims: number[], type = F16): GgufTensorInfo {
  return { name, type, typeName: type === F16 ? "F16" : "F32", dims, offset: 0, bytes: 0 };
}
function model(opts: { layers: number; embd: number; ffn: number; tied?: boolean; experts?: number; arch?: string; extra?: GgufTensorInfo[] }): GgufInfo {
  const { layers, embd, ffn } = opts;
  const tensors = [tensor("token_embd.weight", [embd, 1000])];
  for (let i = 0; i < layers; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      tensor(`${p}attn_norm.weight`, [embd], 0),
      tensor(`${p}attn_q.weight`, [embd, embd]),
      tensor(`${p}attn_k.weight`, [embd, embd / 4]),
      tensor(`${p}attn_v.weight`, [embd, embd / 4]),
      tensor(`${p}attn_output.weight`, [embd, embd]),
      tensor(`${p}ffn_norm.weight`, [embd], 0),
      tensor(`${p}ffn_gate.weight`, [embd, ffn]),
      tensor(`${p}ffn_up.weight`, [embd, ffn]),
      tensor(`${p}ffn_down.weight`, [ffn, embd]),
    );
  }
  tensors.push(tensor("output_norm.weight", [embd], 0), ...(opts.extra ?? []));
  if (!opts.tied) tensors.push(tensor("output.weight", [embd, 1000]));
  const arch = opts.arch ?? "llama";
  const metadata: GgufInfo["metadata"] = { "general.architecture": arch, ...(opts.experts ? { [`${arch}.expert_count`]: opts.experts } : {}) };
  return { version: 3, metadata, types: {}, tensors, dataOffset: 0, isEmbedding: false } as unknown as GgufInfo;
}
function plan(info: GgufInfo, target: Parameters<typeof planTensorTypes>[1]): Record<string, string> {
  const types = planTensorTypes(info, target);
  return Object.fromEntries(info.tensors.map((t, i) => [t.name, types[i] ?? "keep"]));
}

describe("Q4_K_M and Q4_K_S", () => {
  it("give the output matrix Q6_K and more bits to attn_v and ffn_down of chosen layers", () => {
    // 8 layers: Ollama's useMoreBits picks the first eighth (0), the last eighth (7) and every third between (3, 6)
    const p = plan(model({ layers: 8, embd: 512, ffn: 1024 }), "Q4_K_M");
    expect(p["output.weight"]).toBe("Q6_K");
    expect(p["token_embd.weight"]).toBe("Q4_K");
    const more = [0, 3, 6, 7];
    for (let i = 0; i < 8; i++) {
      expect(p[`blk.${i}.attn_v.weight`]).toBe(more.includes(i) ? "Q6_K" : "Q4_K");
      expect(p[`blk.${i}.ffn_down.weight`]).toBe(more.includes(i) ? "Q6_K" : "Q4_K");
      for (const n of ["attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"]) expect(p[`blk.${i}.${n}.weight`]).toBe("Q4_K");
      expect(p[`blk.${i}.attn_norm.weight`]).toBe("keep");
    }
    const s = plan(model({ layers: 8, embd: 512, ffn: 1024 }), "Q4_K_S");
    for (let i = 0; i < 8; i++) {
      expect(s[`blk.${i}.attn_v.weight`]).toBe(i < 4 ? "Q5_K" : "Q4_K");
      expect(s[`blk.${i}.ffn_down.weight`]).toBe(i < 1 ? "Q5_K" : "Q4_K");
    }
    expect(s["output.weight"]).toBe("Q6_K");
  });

  it("a tied model's token_embd is its output matrix and gets Q6_K", () => {
    const p = plan(model({ layers: 2, embd: 256, ffn: 512, tied: true }), "Q4_K_M");
    expect(p["token_embd.weight"]).toBe("Q6_K");
    expect(p["output.weight"]).toBeUndefined();
  });

  it("rows a 256-block does not divide fall back: Q4_K → Q5_0, Q6_K → Q8_0, and to F16 below 32", () => {
    const p = plan(model({ layers: 2, embd: 64, ffn: 128 }), "Q4_K_M");
    expect(p["blk.0.attn_q.weight"]).toBe("Q5_0");
    expect(p["blk.1.attn_v.weight"]).toBe("Q8_0"); // the last eighth: Q6_K, then its fallback
    expect(p["output.weight"]).toBe("Q8_0");
    const odd = plan(model({ layers: 1, embd: 48, ffn: 96 }), "Q4_K_M");
    expect(odd["blk.0.attn_q.weight"]).toBe("keep"); // F16 already: 48 is not a multiple of 32
    expect(plan(model({ layers: 1, embd: 48, ffn: 96 }), "Q8_0")["blk.0.attn_q.weight"]).toBe("keep");
  });

  it("8-expert attention and MLA projections get Q8_0; vision and gating tensors stay", () => {
    const extra = [
      tensor("blk.0.attn_q_a.weight", [512, 256]),
      tensor("blk.0.ffn_gate_inp.weight", [512, 8]),
      tensor("v.blk.0.attn_q.weight", [512, 512]),
      tensor("mm.0.weight", [512, 512]),
      tensor("position_embd.weight", [512, 512]),
    ];
    const p = plan(model({ layers: 2, embd: 512, ffn: 1024, experts: 8, extra }), "Q4_K_M");
    expect(p["blk.0.attn_v.weight"]).toBe("Q8_0");
    expect(p["blk.1.attn_k.weight"]).toBe("Q8_0");
    expect(p["blk.0.attn_output.weight"]).toBe("Q5_K");
    expect(p["blk.0.attn_q_a.weight"]).toBe("Q8_0");
    for (const n of ["blk.0.ffn_gate_inp.weight", "v.blk.0.attn_q.weight", "mm.0.weight", "position_embd.weight"]) expect(p[n]).toBe("keep");
  });
});

describe("the other targets", () => {
  it("Q8_0 keeps the output matrix at Q8_0; Q4_0 quantizes every matrix alike", () => {
    const q8 = plan(model({ layers: 2, embd: 256, ffn: 512 }), "Q8_0");
    expect(new Set(Object.entries(q8).filter(([n]) => !n.includes("norm")).map(([, t]) => t))).toEqual(new Set(["Q8_0"]));
    const q4 = plan(model({ layers: 2, embd: 256, ffn: 512 }), "Q4_0");
    expect(q4["output.weight"]).toBe("Q4_0");
    expect(q4["blk.1.attn_v.weight"]).toBe("Q4_0");
  });

  it("float targets convert every float tensor of two or more dimensions; quantized tensors are copied", () => {
    const info = model({ layers: 1, embd: 64, ffn: 128, extra: [tensor("blk.0.already.weight", [64, 64], 2)] });
    const bf = plan(info, "BF16");
    expect(bf["blk.0.attn_q.weight"]).toBe("BF16");
    expect(bf["blk.0.attn_norm.weight"]).toBe("keep");
    expect(bf["blk.0.already.weight"]).toBe("keep");
    expect(plan(info, "F16")["blk.0.attn_q.weight"]).toBe("keep"); // F16 already
    expect(plan(info, "F32")["blk.0.attn_q.weight"]).toBe("F32");
  });
});
