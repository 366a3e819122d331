// Our block quantizers against ggml's own: scripts/build-ggml-quants-ref.sh compiles ggml-quants.c
// of the llama.cpp commit node-llama-cpp ships, and every block type /api/create writes must come
// out byte for byte the same on weights of several shapes (Gaussian, uniform, all positive, mostly
// zero, with outliers, tiny, constant runs). Then the K-quants decode back close to the input,
// and bfloat16 rounds as ggml's GGML_FP32_TO_BF16.
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encode, type EncodeTarget } from "../../src/registry/ggml-encode.js";
import { bf16Bits } from "../../src/registry/ggml-half.js";
import { KQUANT_BLOCK_BYTES } from "../../src/registry/kquants.js";
import { decodeK } from "../helpers/kquant-decode.js";

const BLOCK_BYTES: Record<string, [number, number]> = {
  Q4_0: [32, 18], Q8_0: [32, 34], Q5_0: [32, 22], Q5_1: [32, 24], Q4_K: [256, 144], Q5_K: [256, 176], Q6_K: [256, 210],
};

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

function weights(kind: string, n: number, seed: number): Float32Array {
  const rnd = seeded(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    switch (kind) {
      case "gauss": x[i] = gauss() * 0.02; break;
      case "uniform": x[i] = rnd() - 0.5; break;
      case "positive": x[i] = rnd() * 3 + 0.1; break;
      case "sparse": x[i] = Math.floor(i / 256) % 3 === 0 ? 0 : rnd() < 0.1 ? gauss() : 0; break;
      case "outliers": x[i] = rnd() < 0.01 ? gauss() * 50 : gauss(); break;
      case "tiny": x[i] = gauss() * 1e-6; break;
      default: x[i] = Math.floor(i / 32) % 2 ? 0.5 : -0.25;
    }
  }
  return x;
}

let ref: string;
let dir: string;
beforeAll(async () => {
  ref = execFileSync("scripts/build-ggml-quants-ref.sh", { encoding: "utf8" }).trim();
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-ggml-ref-"));
}, 120_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("block quantizers write ggml's bytes", () => {
  for (const kind of ["gauss", "uniform", "positive", "sparse", "outliers", "tiny", "constant"]) {
    it(`${kind} weights`, async () => {
      const n = 256 * 128;
      const x = weights(kind, n, kind.length * 7919);
      const input = path.join(dir, `${kind}.f32`);
      await writeFile(input, Buffer.from(x.buffer));
      for (const type of Object.keys(BLOCK_BYTES)) {
        const output = path.join(dir, `${kind}.${type}`);
        execFileSync(ref, [type, input, output]);
        const want = await readFile(output);
        const got = Buffer.alloc(want.length);
        encode(type as EncodeTarget, x, n, got);
        const [, bytes] = BLOCK_BYTES[type]!;
        const differing: number[] = [];
        for (let o = 0; o < want.length; o += bytes) if (!want.subarray(o, o + bytes).equals(got.subarray(o, o + bytes))) differing.push(o / bytes);
        expect({ type, differing: differing.slice(0, 5) }).toEqual({ type, differing: [] });
      }
    });
  }
});

describe("K-quants decode back", () => {
  it("to within each type's error on Gaussian weights; a zero block decodes to zeros", () => {
    const n = 256 * 64;
    const x = weights("gauss", n, 3);
    x.fill(0, 0, 256); // one all-zero block
    const bound = { Q4_K: 0.08, Q5_K: 0.04, Q6_K: 0.02 } as const;
    for (const type of ["Q4_K", "Q5_K", "Q6_K"] as const) {
      const q = Buffer.alloc((n / 256) * KQUANT_BLOCK_BYTES[type]);
      encode(type, x, n, q);
      const y = new Float32Array(n);
      decodeK(type, q, n, y);
      expect(Array.from(y.subarray(0, 256)).every((v) => v === 0)).toBe(true);
      let err = 0;
      let sum = 0;
      for (let i = 0; i < n; i++) {
        err += (y[i]! - x[i]!) ** 2;
        sum += x[i]! ** 2;
      }
      const rel = Math.sqrt(err / sum);
      expect(rel).toBeLessThan(bound[type]);
      expect(rel).toBeGreaterThan(bound[type] / 8); // a lossless-looking result would mean a copied input
    }
  });
});

describe("bfloat16", () => {
  it("rounds to nearest even and keeps NaN a NaN", () => {
    const bits = (u: number) => new Float32Array(new Uint32Array([u]).buffer)[0]!;
    expect(bf16Bits(1)).toBe(0x3f80);
    expect(bf16Bits(-2)).toBe(0xc000);
    expect(bf16Bits(bits(0x3f808000))).toBe(0x3f80); // tie, even stays
    expect(bf16Bits(bits(0x3f818000))).toBe(0x3f82); // tie, odd rounds up
    expect(bf16Bits(bits(0x3f808001))).toBe(0x3f81);
    expect(bf16Bits(Infinity)).toBe(0x7f80);
    expect(bf16Bits(bits(0x7f800001)) & 0x7fc0).toBe(0x7fc0); // quiet NaN
    expect(bf16Bits(bits(0x7f7fffff))).toBe(0x7f80); // the largest float rounds to infinity
  });
});
