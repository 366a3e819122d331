// Seeded tensors for the synthetic test models: each tensor's values come from its own PRNG
// stream, seeded by the model's seed and the tensor's name, so a tensor is the same in every model
// that has it (a cut-down draft shares its lower layers with the full model).
import { encodedChunks, type TensorSpec, type WritableType } from "./gguf-writer.js";

/** FNV-1a over a string, mixed with the seed: per-tensor PRNG seed. */
function tensorSeed(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Uniform weights with standard deviation `std` from a mulberry32 stream; optional per-row scale. */
export function randomTensor(
  name: string, dims: number[], type: WritableType, seed: number, std: number,
  rowScale?: (row: number) => number,
): TensorSpec {
  const rowLen = dims[0]!;
  const elements = dims.reduce((a, b) => a * b, 1);
  return {
    name, dims, type,
    data: () => {
      let state = tensorSeed(seed, name);
      const k = (std * Math.sqrt(3) * 2) / 65536; // uniform on [-sqrt(3), sqrt(3)) * std
      return encodedChunks(type, elements, rowLen, (dst, start) => {
        // mulberry32, two 16-bit uniforms per draw (rows have even length, so chunks stay in step);
        // a local copy of the state: much faster than a captured variable in this hot loop
        let st = state;
        const n = dst.length;
        for (let i = 0; i < n; i += 2) {
          st = (st + 0x6d2b79f5) | 0;
          let t = Math.imul(st ^ (st >>> 15), 1 | st);
          t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
          t ^= t >>> 14;
          dst[i] = ((t & 0xffff) - 32767.5) * k;
          dst[i + 1] = ((t >>> 16) - 32767.5) * k;
        }
        state = st;
        if (rowScale) {
          for (let r = 0; r < dst.length / rowLen; r++) {
            const s = rowScale(start / rowLen + r);
            if (s !== 1) for (let j = r * rowLen; j < (r + 1) * rowLen; j++) dst[j] = dst[j]! * s;
          }
        }
      });
    },
  };
}

export function constTensor(name: string, dims: number[], value: number): TensorSpec {
  const elements = dims.reduce((a, b) => a * b, 1);
  return { name, dims, type: "F32", data: () => encodedChunks("F32", elements, dims[0]!, (dst) => dst.fill(value)) };
}
