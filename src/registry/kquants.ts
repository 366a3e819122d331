// ggml's K-quant formats (Q4_K, Q5_K, Q6_K: 256 weights per block), quantized the way ggml's
// reference quantizers do it without an importance matrix, which is what Ollama runs:
// - Q4_K / Q5_K: eight sub-blocks of 32 weights, each w ≈ d·sc·q − dmin·m with q of 4 or 5 bits;
//   each sub-block's scale and min come from a weighted least-squares fit tried over a grid of
//   nudged scales, then the eight scales and mins are themselves quantized to 6 bits.
// - Q6_K: sixteen sub-blocks of 16 weights, w ≈ d·sc·(q − 32) with q of 6 bits, a symmetric fit
//   tried over ±0.9 of the plain scale; the sub-block scales are int8 against one half-float d.
// Every operation is rounded to float32 in ggml's order (Math.fround), so the bytes are those of
// ggml's quantize_row_q4_K_ref / _q5_K_ref / _q6_K_ref built without FMA contraction (x86-64's
// default); the layouts are ggml's block_q4_K, block_q5_K and block_q6_K.
import { HALF_TABLE, halfBits } from "./ggml-half.js";

const QK_K = 256;

/** Round half to even, as ggml's nearest_int: adding and taking away 1.5·2^52 leaves float64's own
 *  rounding of x to an integer (exact for |x| < 2^51, far beyond any value here). */
const RND = 6755399441055744;
const f = Math.fround;
const F01 = f(0.1);
function rint(x: number): number {
  return x + RND - RND;
}

// scratch, reused block after block (the quantizer is synchronous)
const L = new Uint8Array(QK_K);
const Laux = new Uint8Array(32);
const W = new Float32Array(32);
const XM = new Float32Array(32);
const subScale = new Float32Array(16);
const subMin = new Float32Array(8);
let fitMin = 0;

/**
 * Fit x[off..off+32) ≈ scale·l + min with l in 0..nmax and min ≤ 0 (weights W), writing l to
 * L[off0..]: the min/max fit, then nstep+1 candidate scales (nmax + rmin + rdelta·i over the range)
 * each refit by least squares, keeping the one of least weighted error. Returns the scale; −min is
 * left in `fitMin`. Every operation rounds to float32 (f), in ggml's order.
 */
function fitScaleMin(x: Float32Array, off: number, nmax: number, off0: number, rmin: number, rdelta: number, nstep: number): number {
  let min = x[off]!;
  let max = min;
  let sumW = 0;
  let sumX = 0;
  for (let i = 0; i < 32; i++) {
    const v = x[off + i]!;
    if (v < min) min = v;
    if (v > max) max = v;
    sumW = f(sumW + W[i]!);
    sumX = f(sumX + f(W[i]! * v));
  }
  if (min > 0) min = 0;
  if (max === min) {
    L.fill(0, off0, off0 + 32);
    fitMin = -min;
    return 0;
  }
  // min moves to each better fit's min, and the next candidates are scaled from there (as ggml's)
  let range = f(max - min);
  for (let i = 0; i < 32; i++) XM[i] = f(x[off + i]! - min);
  let iscale = f(nmax / range);
  let scale = f(1 / iscale);
  let bestErr = 0;
  for (let i = 0; i < 32; i++) {
    let l = rint(f(iscale * XM[i]!));
    l = l < 0 ? 0 : l > nmax ? nmax : l;
    L[off0 + i] = l;
    const diff = f(f(f(scale * l) + min) - x[off + i]!);
    bestErr = f(bestErr + f(W[i]! * f(diff * diff)));
  }
  for (let step = 0; step <= nstep; step++) {
    iscale = f(f(f(rmin + f(rdelta * step)) + nmax) / range);
    // The fit depends on the levels alone: levels equal to the last candidate's give its error,
    // which was kept already or lost, so they are not fitted again.
    let same = step > 0;
    for (let i = 0; i < 32; i++) {
      let l = rint(f(iscale * XM[i]!));
      l = l < 0 ? 0 : l > nmax ? nmax : l;
      if (l !== Laux[i]) {
        same = false;
        Laux[i] = l;
      }
    }
    if (same) continue;
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < 32; i++) {
      const l = Laux[i]!;
      const wl = f(W[i]! * l);
      sumL = f(sumL + wl);
      sumL2 = f(sumL2 + f(wl * l));
      sumXL = f(sumXL + f(wl * x[off + i]!));
    }
    const D = f(f(sumW * sumL2) - f(sumL * sumL));
    if (!(D > 0)) continue;
    let s = f(f(f(sumW * sumXL) - f(sumX * sumL)) / D);
    let m = f(f(f(sumL2 * sumX) - f(sumL * sumXL)) / D);
    if (m > 0) {
      m = 0;
      s = f(sumXL / sumL2);
    }
    let err = 0;
    for (let i = 0; i < 32; i++) {
      const diff = f(f(f(s * Laux[i]!) + m) - x[off + i]!);
      err = f(err + f(W[i]! * f(diff * diff)));
    }
    if (err < bestErr) {
      L.set(Laux, off0);
      bestErr = err;
      scale = s;
      min = m;
      range = f(max - min);
      for (let i = 0; i < 32; i++) XM[i] = f(x[off + i]! - min);
    }
  }
  fitMin = -min;
  return scale;
}

/** The 6-bit scale and min of sub-block j from the 12 packed bytes at out[p..] (get_scale_min_k4). */
export function scaleMinK4(j: number, out: Uint8Array, p: number): [number, number] {
  if (j < 4) return [out[p + j]! & 63, out[p + j + 4]! & 63];
  return [(out[p + j + 4]! & 0xf) | ((out[p + j - 4]! >> 6) << 4), (out[p + j + 4]! >> 4) | ((out[p + j]! >> 6) << 4)];
}

/** One Q4_K (bits 4: 144 bytes) or Q5_K (bits 5: 176 bytes) block of x[off..off+256) at out[o..]. */
function encodeScaleMinBlock(bits: 4 | 5, x: Float32Array, off: number, out: Uint8Array, o: number): void {
  const nmax = bits === 4 ? 15 : 31;
  let maxScale = 0;
  let maxMin = 0;
  for (let j = 0; j < 8; j++) {
    const base = off + 32 * j;
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) sumX2 = f(sumX2 + f(x[base + l]! * x[base + l]!));
    const av = f(Math.sqrt(f(sumX2 / 32)));
    for (let l = 0; l < 32; l++) W[l] = f(av + Math.abs(x[base + l]!));
    const s = bits === 4 ? fitScaleMin(x, base, 15, 32 * j, -1, F01, 20) : fitScaleMin(x, base, 31, 32 * j, -0.5, F01, 15);
    subScale[j] = s;
    subMin[j] = fitMin;
    if (s > maxScale) maxScale = s;
    if (fitMin > maxMin) maxMin = fitMin;
  }
  const sp = o + 4; // the 12 packed scale bytes
  out.fill(0, sp, sp + 12);
  const invScale = maxScale > 0 ? f(63 / maxScale) : 0;
  const invMin = maxMin > 0 ? f(63 / maxMin) : 0;
  for (let j = 0; j < 8; j++) {
    const ls = Math.min(63, rint(f(invScale * subScale[j]!)));
    const lm = Math.min(63, rint(f(invMin * subMin[j]!)));
    if (j < 4) {
      out[sp + j] = ls;
      out[sp + j + 4] = lm;
    } else {
      out[sp + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
      out[sp + j - 4]! |= (ls >> 4) << 6;
      out[sp + j]! |= (lm >> 4) << 6;
    }
  }
  const dBits = halfBits(f(maxScale / 63));
  const dminBits = halfBits(f(maxMin / 63));
  out[o] = dBits & 0xff;
  out[o + 1] = dBits >> 8;
  out[o + 2] = dminBits & 0xff;
  out[o + 3] = dminBits >> 8;
  // requantize against the scales as stored
  for (let j = 0; j < 8; j++) {
    const [sc, m] = scaleMinK4(j, out, sp);
    const d = f(HALF_TABLE[dBits]! * sc);
    if (!d) continue;
    const dm = f(HALF_TABLE[dminBits]! * m);
    for (let i = 0; i < 32; i++) L[32 * j + i] = Math.max(0, Math.min(nmax, rint(f(f(x[off + 32 * j + i]! + dm) / d))));
  }
  if (bits === 4) {
    // 32 bytes per 64 weights: low nibbles the first 32, high nibbles the next 32
    for (let j = 0, q = o + 16; j < QK_K; j += 64, q += 32) {
      for (let l = 0; l < 32; l++) out[q + l] = L[j + l]! | (L[j + l + 32]! << 4);
    }
    return;
  }
  // Q5_K: qh (32 bytes) holds each weight's fifth bit, two bit planes per 64 weights
  const qh = o + 16;
  out.fill(0, qh, qh + 32);
  for (let n = 0, ql = o + 48, m1 = 1, m2 = 2; n < QK_K; n += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
    for (let j = 0; j < 32; j++) {
      let l1 = L[n + j]!;
      if (l1 > 15) {
        l1 -= 16;
        out[qh + j]! |= m1;
      }
      let l2 = L[n + j + 32]!;
      if (l2 > 15) {
        l2 -= 16;
        out[qh + j]! |= m2;
      }
      out[ql + j] = l1 | (l2 << 4);
    }
  }
}

const GROUP_MAX_EPS = 1e-15;

/**
 * Symmetric 6-bit fit of x[off..off+16): l in −32..31 written to L[off0..] as l + 32, weighted by
 * x², over the plain scale and 18 nudged ones. Returns the scale (ggml's make_qx_quants, type 1).
 */
function fitSymmetric16(x: Float32Array, off: number, off0: number): number {
  const nmax = 32;
  let max = 0;
  let amax = 0;
  for (let i = 0; i < 16; i++) {
    const v = x[off + i]!;
    if (Math.abs(v) > amax) {
      amax = Math.abs(v);
      max = v;
    }
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0, off0, off0 + 16);
    return 0;
  }
  // the plain scale (is = 0) first, then −9..−1 and 1..9 tenths away from it
  let scale = 0;
  let best = 0;
  let bestIscale = 0;
  for (let k = 0; k <= 18; k++) {
    const is = k === 0 ? 0 : k <= 9 ? k - 10 : k - 9;
    const iscale = f(-f(nmax + f(F01 * is)) / max);
    let sumLX = 0;
    let sumL2 = 0;
    for (let i = 0; i < 16; i++) {
      const v = x[off + i]!;
      let l = rint(f(iscale * v));
      l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
      const w = f(v * v);
      sumLX = f(sumLX + f(f(w * v) * l));
      sumL2 = f(sumL2 + f(f(w * l) * l));
    }
    if (k === 0) {
      scale = sumL2 ? f(sumLX / sumL2) : 0;
      best = f(scale * sumLX);
      bestIscale = iscale;
    } else if (sumL2 > 0 && f(sumLX * sumLX) > f(best * sumL2)) {
      bestIscale = iscale;
      scale = f(sumLX / sumL2);
      best = f(scale * sumLX);
    }
  }
  for (let i = 0; i < 16; i++) {
    const l = rint(f(bestIscale * x[off + i]!));
    L[off0 + i] = nmax + (l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l);
  }
  return scale;
}

/** One Q6_K block (210 bytes: ql[128], qh[64], scales[16], d) of x[off..off+256) at out[o..]. */
function encodeQ6KBlock(x: Float32Array, off: number, out: Uint8Array, o: number): void {
  let maxScale = 0;
  let maxAbs = 0;
  for (let ib = 0; ib < 16; ib++) {
    const s = fitSymmetric16(x, off + 16 * ib, 16 * ib);
    subScale[ib] = s;
    if (Math.abs(s) > maxAbs) {
      maxAbs = Math.abs(s);
      maxScale = s;
    }
  }
  if (maxAbs < GROUP_MAX_EPS) {
    out.fill(0, o, o + 210);
    return;
  }
  const iscale = f(-128 / maxScale);
  const dBits = halfBits(f(1 / iscale));
  out[o + 208] = dBits & 0xff;
  out[o + 209] = dBits >> 8;
  const d0 = HALF_TABLE[dBits]!;
  for (let ib = 0; ib < 16; ib++) {
    const sc = Math.min(127, rint(f(iscale * subScale[ib]!)));
    out[o + 192 + ib] = sc & 0xff;
    const d = f(d0 * sc);
    if (!d) continue;
    for (let i = 0; i < 16; i++) L[16 * ib + i] = 32 + Math.max(-32, Math.min(31, rint(f(x[off + 16 * ib + i]! / d))));
  }
  // per 128 weights: 64 bytes of low nibbles (weights l and l+64, l+32 and l+96), 32 of high bit pairs
  for (let j = 0, ql = o, qh = o + 128; j < QK_K; j += 128, ql += 64, qh += 32) {
    for (let l = 0; l < 32; l++) {
      const a = L[j + l]!;
      const b = L[j + l + 32]!;
      const c = L[j + l + 64]!;
      const e = L[j + l + 96]!;
      out[ql + l] = (a & 0xf) | ((c & 0xf) << 4);
      out[ql + l + 32] = (b & 0xf) | ((e & 0xf) << 4);
      out[qh + l] = (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6);
    }
  }
}

export type KQuantType = "Q4_K" | "Q5_K" | "Q6_K";
export const KQUANT_BLOCK_BYTES: Readonly<Record<KQuantType, number>> = { Q4_K: 144, Q5_K: 176, Q6_K: 210 };

/** Encode `n` floats (a multiple of 256) from `src` as `type` into `out`. */
export function encodeK(type: KQuantType, src: Float32Array, n: number, out: Uint8Array): void {
  const bytes = KQUANT_BLOCK_BYTES[type];
  for (let b = 0, o = 0; b < n; b += QK_K, o += bytes) {
    if (type === "Q6_K") encodeQ6KBlock(src, b, out, o);
    else encodeScaleMinBlock(type === "Q4_K" ? 4 : 5, src, b, out, o);
  }
}
