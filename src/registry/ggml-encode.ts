// ggml's tensor encodings for /api/create's quantization and the test-model generator, so both
// write the same bytes: the float formats, the 32-weight blocks (quantize_row_q8_0_ref, _q4_0_ref,
// _q5_0_ref, _q5_1_ref, in float32 arithmetic) and the K-quants (kquants.ts).
import { bf16Bits, HALF_TABLE, halfBits } from "./ggml-half.js";
import { encodeK } from "./kquants.js";

export type EncodeTarget = "F32" | "F16" | "BF16" | "Q8_0" | "Q4_0" | "Q5_0" | "Q5_1" | "Q4_K" | "Q5_K" | "Q6_K";

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

/** roundf: half away from zero. */
const roundAway = (x: number): number => (x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5));

/** Index and value of the largest magnitude in src[b..b+32). */
function absMax(src: Float32Array, b: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    const v = src[b + j]!;
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return max;
}

/** How a 32-weight block turns a weight into its level (ggml's reference rounding of each). */
const enum Level {
  Q4_0,
  Q5_0,
  Q5_1,
}

function level(kind: Level, x: number, id: number, min: number): number {
  if (kind === Level.Q4_0) return Math.min(15, Math.trunc(fr(fr(x * id) + 8.5)) & 0xff);
  if (kind === Level.Q5_0) return Math.min(31, Math.trunc(fr(fr(x * id) + 16.5)));
  return Math.trunc(fr(fr(fr(x - min) * id) + 0.5)) & 0xff;
}

/**
 * The levels of src[b..b+32) as ggml's 32-weight blocks pack them: 16 bytes at out[qs..], weight
 * j's low nibble with weight j+16's in the high one; with qh ≥ 0, each weight's fifth bit (bit j
 * for weight j) in the u32 at out[qh..].
 */
function packHalves(src: Float32Array, b: number, out: Buffer, qs: number, qh: number, kind: Level, id: number, min: number): void {
  let bits = 0;
  for (let j = 0; j < 16; j++) {
    const q0 = level(kind, src[b + j]!, id, min);
    const q1 = level(kind, src[b + 16 + j]!, id, min);
    out[qs + j] = (q0 & 0xf) | ((q1 & 0xf) << 4);
    bits |= (((q0 >> 4) & 1) << j) | (((q1 >> 4) & 1) << (j + 16));
  }
  if (qh >= 0) out.writeUInt32LE(bits >>> 0, qh);
}

/** Encode `n` floats (a multiple of the block size) as `target` into `out`. */
export function encode(target: EncodeTarget, src: Float32Array, n: number, out: Buffer): void {
  switch (target) {
    case "F32":
      Buffer.from(src.buffer, src.byteOffset, n * 4).copy(out);
      return;
    case "F16":
      for (let i = 0; i < n; i++) out.writeUInt16LE(halfBits(src[i]!), 2 * i);
      return;
    case "BF16":
      for (let i = 0; i < n; i++) out.writeUInt16LE(bf16Bits(src[i]!), 2 * i);
      return;
    case "Q8_0":
      for (let b = 0, o = 0; b < n; b += 32, o += 34) {
        const d = fr(Math.abs(absMax(src, b)) / 127);
        const id = d ? fr(1 / d) : 0;
        out.writeUInt16LE(halfBits(d), o);
        for (let j = 0; j < 32; j++) out[o + 2 + j] = roundAway(fr(src[b + j]! * id)) & 0xff;
      }
      return;
    case "Q4_0":
      for (let b = 0, o = 0; b < n; b += 32, o += 18) {
        const d = fr(absMax(src, b) / -8);
        const id = d ? fr(1 / d) : 0;
        out.writeUInt16LE(halfBits(d), o);
        packHalves(src, b, out, o + 2, -1, Level.Q4_0, id, 0);
      }
      return;
    case "Q5_0":
      // d, the 32 fifth bits (u32), 16 bytes of nibbles; q = trunc(x/d + 16.5), d = max/−16
      for (let b = 0, o = 0; b < n; b += 32, o += 22) {
        const d = fr(absMax(src, b) / -16);
        const id = d ? fr(1 / d) : 0;
        out.writeUInt16LE(halfBits(d), o);
        packHalves(src, b, out, o + 6, o + 2, Level.Q5_0, id, 0);
      }
      return;
    case "Q5_1":
      // d = (max − min)/31 and m = min, the fifth bits, the nibbles; q = trunc((x − min)/d + 0.5)
      for (let b = 0, o = 0; b < n; b += 32, o += 24) {
        let min = Infinity;
        let max = -Infinity;
        for (let j = 0; j < 32; j++) {
          const v = src[b + j]!;
          if (v < min) min = v;
          if (v > max) max = v;
        }
        const d = fr(fr(max - min) / 31);
        const id = d ? fr(1 / d) : 0;
        out.writeUInt16LE(halfBits(d), o);
        out.writeUInt16LE(halfBits(min), o + 2);
        packHalves(src, b, out, o + 8, o + 4, Level.Q5_1, id, min);
      }
      return;
    default:
      encodeK(target, src, n, out);
  }
}
