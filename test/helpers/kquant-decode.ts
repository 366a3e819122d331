// ggml's dequantizers of the K-quant blocks (dequantize_row_q4_K / _q5_K / _q6_K), for tests
// that check what our encoders (src/registry/kquants.ts) wrote decodes back close to its input.
import { HALF_TABLE } from "../../src/registry/ggml-half.js";
import { KQUANT_BLOCK_BYTES, scaleMinK4, type KQuantType } from "../../src/registry/kquants.js";

const QK_K = 256;

/** Decode `n` weights of `type` from `src` into `dst`. */
export function decodeK(type: KQuantType, src: Uint8Array, n: number, dst: Float32Array): void {
  const bytes = KQUANT_BLOCK_BYTES[type];
  for (let b = 0, o = 0; b < n; b += QK_K, o += bytes) {
    if (type === "Q6_K") {
      const d = HALF_TABLE[src[o + 208]! | (src[o + 209]! << 8)]!;
      for (let half = 0; half < 2; half++) {
        const ql = o + 64 * half;
        const qh = o + 128 + 32 * half;
        const sc = o + 192 + 8 * half;
        for (let l = 0; l < 32; l++) {
          const is = l >> 4;
          const h = src[qh + l]!;
          const q1 = ((src[ql + l]! & 0xf) | ((h & 3) << 4)) - 32;
          const q2 = ((src[ql + l + 32]! & 0xf) | (((h >> 2) & 3) << 4)) - 32;
          const q3 = ((src[ql + l]! >> 4) | (((h >> 4) & 3) << 4)) - 32;
          const q4 = ((src[ql + l + 32]! >> 4) | (((h >> 6) & 3) << 4)) - 32;
          const s = (k: number) => (src[sc + is + k]! << 24) >> 24;
          const y = b + 128 * half + l;
          dst[y] = d * s(0) * q1;
          dst[y + 32] = d * s(2) * q2;
          dst[y + 64] = d * s(4) * q3;
          dst[y + 96] = d * s(6) * q4;
        }
      }
      continue;
    }
    const d = HALF_TABLE[src[o]! | (src[o + 1]! << 8)]!;
    const dmin = HALF_TABLE[src[o + 2]! | (src[o + 3]! << 8)]!;
    for (let j = 0; j < 8; j++) {
      const [sc, m] = scaleMinK4(j, src, o + 4);
      const pair = j >> 1; // 64 weights share a byte run: j even low nibbles, j odd high nibbles
      for (let i = 0; i < 32; i++) {
        let q: number;
        if (type === "Q4_K") {
          const byte = src[o + 16 + 32 * pair + i]!;
          q = j & 1 ? byte >> 4 : byte & 0xf;
        } else {
          const byte = src[o + 48 + 32 * pair + i]!;
          q = (j & 1 ? byte >> 4 : byte & 0xf) + (src[o + 16 + i]! & (1 << j) ? 16 : 0);
        }
        dst[b + 32 * j + i] = d * sc * q - dmin * m;
      }
    }
  }
}
