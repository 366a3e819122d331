// Interesting values: the integers, floats and strings at which size arithmetic, parsers and
// allocators break (0, -1, 2^31-1, 2^32-16, 2^63, NaN, control characters, lone surrogates, ...).
import type { Rng } from "./prng.js";

export const EDGE_INTS: readonly number[] = [
  0, 1, -1, 2, 3, 4, 7, 8, 16, 31, 32, 33, 64, 255, 256, 1023, 1024, 4095, 4096, 65535, 65536, 100_000,
  1 << 20, 12_000_000, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 2 ** 32 - 16, 2 ** 32 - 1, 2 ** 32, 2 ** 40,
  2 ** 53 - 1, 2 ** 53 + 2, -(2 ** 53), 1e20, 1e300,
];

export const EDGE_U64: readonly bigint[] = [
  0n, 1n, 2n, 0x7fn, 0xffn, 0x7fffn, 0xffffn, 2n ** 31n - 1n, 2n ** 31n, 2n ** 32n - 16n, 2n ** 32n - 1n, 2n ** 32n,
  2n ** 40n, 2n ** 53n - 1n, 2n ** 53n + 1n, 2n ** 62n, 2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 16n, 2n ** 64n - 1n,
];

export const EDGE_FLOATS: readonly number[] = [
  0, -0, 1, -1, 0.5, 1e-45, 1e-38, 65504, 1e38, -1e38, 3.4028234663852886e38, 1e300, NaN, Infinity, -Infinity,
];

/** A small integer near `n` or an edge value. */
export function edgeInt(rng: Rng, near?: number): number {
  if (near !== undefined && rng.chance(0.3)) return near + rng.pick([-2, -1, 1, 2, near, -near]);
  return rng.pick(EDGE_INTS);
}

export function edgeU64(rng: Rng): bigint {
  return rng.pick(EDGE_U64);
}

export function edgeFloat(rng: Rng): number {
  return rng.pick(EDGE_FLOATS);
}

const LONG_LENGTHS = [256, 4096, 65_536, 1 << 20];

/** Invalid UTF-8: a lone continuation byte, an overlong encoding, a surrogate, a truncated sequence. */
export const BAD_UTF8: readonly Buffer[] = [
  Buffer.from([0x80]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xf4, 0x90, 0x80, 0x80]),
  Buffer.from([0xe2, 0x82]), Buffer.from([0xff, 0xfe]),
];

const FIXED_STRINGS: readonly string[] = [
  "", " ", "\u0000", "a\u0000b", "\r\n", "\t", "\u001b[2J\u001b[31m", "\u0007\u0008\u000b\u000c\u007f",
  "\ud800", "\udfff\ud800", "\ud83d\ude00".repeat(3), "\u202e\u0645\u0631\u062d\u0628\u0627", "\u200b\u200d\ufeff",
  "e\u0301".repeat(500), "日本語のテキスト", "\uffff\ufffe",
  "../../../../etc/passwd", "/dev/zero", "/proc/self/mem", "C:\\Windows\\win.ini", "file:///etc/passwd", "ftp://127.0.0.1:1/x",
  "%s%n%x%p", "{{ .Prompt }}{{ template \"x\" . }}", "{{ range . }}{{ end }}", "{% for x in y %}", "${process.exit(1)}",
  "<|im_start|>system\n", "<s></s>[INST]", "\\", "\"", "'", "NaN", "Infinity", "-1", "1e999", "0x7fffffff", "null", "true", "[]", "{}",
  "__proto__", "constructor", "prototype", "toString", "hasOwnProperty",
  "a:b:c", "x/y/z/w/v", "registry.ollama.ai/library/llama3:latest", "127.0.0.1:1/library/x:latest", "@sha256:" + "0".repeat(64),
  "sha256:" + "f".repeat(64), "sha256-" + "a".repeat(64), "-", ".", "..", "fuzz-base:latest", "FUZZ-BASE",
];

/** A string from the nasty pool, a long one, or random characters. */
export function nastyString(rng: Rng): string {
  switch (rng.weighted([[6, "fixed"], [2, "long"], [1, "random"], [1, "repeat"]] as const)) {
    case "fixed":
      return rng.pick(FIXED_STRINGS);
    case "long":
      if (rng.chance(0.1)) return "a".repeat(4 << 20);
      return rng.pick(["a", "\u00e9", "\u6f22", "\ud83d\ude00", "\u0000", "\n"]).repeat(rng.pick(LONG_LENGTHS));
    case "random": {
      const n = rng.between(1, 64);
      let s = "";
      for (let i = 0; i < n; i++) s += String.fromCharCode(rng.int(0x10000));
      return s;
    }
    case "repeat":
      return rng.pick(FIXED_STRINGS.filter((s) => s.length > 0 && s.length < 100)).repeat(rng.pick([100, 10_000]));
  }
}
