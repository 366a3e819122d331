// ggml's float16 conversion and reference block quantizers (quantize_row_q8_0_ref /
// quantize_row_q4_0_ref, float32 arithmetic), shared by /api/create's quantization and the
// test-model generator so both write the same bytes.

export type EncodeTarget = "F32" | "F16" | "Q8_0" | "Q4_0";


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

const HALF_TABLE = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >>> 10) & 0x1f;
    const m = h & 0x3ff;
    t[h] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  }
  return t;
})();

/** Decode `n` values of a float tensor type (F32, F16, BF16) from `src` (4-byte aligned) into `dst`. */
export function decode(type: number, src: Buffer, dst: Float32Array, n: number): void {
  if (type === 0) {
    const v = new Float32Array(src.buffer, src.byteOffset, n);
    dst.set(v);
  } else if (type === 1) {
    for (let i = 0; i < n; i++) dst[i] = HALF_TABLE[src[2 * i]! | (src[2 * i + 1]! << 8)]!;
  } else {
    const out = new Uint32Array(dst.buffer, dst.byteOffset, n);
    for (let i = 0; i < n; i++) out[i] = ((src[2 * i]! | (src[2 * i + 1]! << 8)) << 16) >>> 0;
  }
}

const fr = Math.fround;

/** Encode `n` floats (a multiple of the block size) as `target` into `out`. */
export function encode(target: EncodeTarget, src: Float32Array, n: number, out: Buffer): void {
  if (target === "F32") {
    Buffer.from(src.buffer, src.byteOffset, n * 4).copy(out);
  } else if (target === "F16") {
    for (let i = 0; i < n; i++) out.writeUInt16LE(halfBits(src[i]!), 2 * i);
  } else if (target === "Q8_0") {
    for (let b = 0, o = 0; b < n; b += 32, o += 34) {
      let amax = 0;
      for (let j = 0; j < 32; j++) {
        const a = Math.abs(src[b + j]!);
        if (a > amax) amax = a;
      }
      const d = fr(amax / 127);
      const id = d ? fr(1 / d) : 0;
      out.writeUInt16LE(halfBits(d), o);
      for (let j = 0; j < 32; j++) {
        const x = fr(src[b + j]! * id);
        // roundf: half away from zero
        const q = x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
        out[o + 2 + j] = q & 0xff;
      }
    }
  } else {
    for (let b = 0, o = 0; b < n; b += 32, o += 18) {
      let amax = 0;
      let max = 0;
      for (let j = 0; j < 32; j++) {
        const v = src[b + j]!;
        const a = Math.abs(v);
        if (amax < a) {
          amax = a;
          max = v;
        }
      }
      const d = fr(max / -8);
      const id = d ? fr(1 / d) : 0;
      out.writeUInt16LE(halfBits(d), o);
      for (let j = 0; j < 16; j++) {
        const x0 = fr(src[b + j]! * id);
        const x1 = fr(src[b + 16 + j]! * id);
        const q0 = Math.min(15, Math.trunc(fr(x0 + 8.5)) & 0xff);
        const q1 = Math.min(15, Math.trunc(fr(x1 + 8.5)) & 0xff);
        out[o + 2 + j] = q0 | (q1 << 4);
      }
    }
  }
}
