// ggml's 16-bit float formats: IEEE half (GGML_FP32_TO_FP16, round to nearest even) and bfloat16
// (GGML_FP32_TO_BF16: round to nearest even, NaN kept quiet), both ways.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** float32 → float16 bits, round to nearest even (GGML_FP32_TO_FP16). */
export function halfBits(x: number): number {
  f32[0] = x;
  const b = u32[0] as number;
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
}

/** Every half's value, indexed by its bits. */
export const HALF_TABLE = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >>> 10) & 0x1f;
    const m = h & 0x3ff;
    t[h] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return t;
})();

/** float32 → bfloat16 bits (GGML_FP32_TO_BF16). */
export function bf16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0] as number;
  if ((b & 0x7fffffff) > 0x7f800000) return ((b >>> 16) | 64) & 0xffff; // NaN: keep it a quiet NaN
  // no overflow past 2^32: only NaNs (handled above) are that close to it
  return ((b + 0x7fff + ((b >>> 16) & 1)) / 65536) >>> 0;
}
