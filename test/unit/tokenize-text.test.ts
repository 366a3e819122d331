// Long texts are tokenized in pieces (src/backends/llamacpp/tokenize-text.ts) with the tokens of
// the whole text at once, in the real node-llama-cpp with both generated tokenizer kinds
// (SentencePiece "llama" and byte-level BPE "gpt2"), and in time that grows with the length.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from "node-llama-cpp";
import { makeTestModel, TOKENIZERS } from "../../scripts/make-test-model.js";
import { PIECE_CHARS, PieceCache, pieceEnd, REUSE_PIECE_CHARS, reusePieceEnd, tokenizeText } from "../../src/backends/llamacpp/tokenize-text.js";

let llama: Llama;
const models: LlamaModel[] = [];

beforeAll(async () => {
  llama = await getLlama({ build: "never", gpu: false, maxThreads: 1, logLevel: LlamaLogLevel.error });
}, 60_000);

afterAll(async () => {
  for (const m of models) await m.dispose();
  await llama?.dispose();
});

/** Seeded text of words, punctuation, special tokens, newlines, double spaces and non-ASCII. */
function text(seed: number, words: number): string {
  const pool = ["the", "quick", "brown", "fox", "élan", "naïve", "12345", "<|im_start|>", "<|im_end|>", "hello,world!", "\n\n", "", "code(x)", "=>", "{y}", "😀", "日本語"];
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) & 0x7fffffff);
  return Array.from({ length: words }, () => pool[next() % pool.length]).join(next() % 3 === 0 ? "  " : " ");
}

describe("reusePieceEnd", () => {
  it("cuts at the word end nearest to the reuse size from below, else the first after it, else as pieceEnd", () => {
    const words = "abcdefghi ".repeat(20); // a word end every 10 characters
    expect(reusePieceEnd(words, 0, 1000, 50)).toBe(49);
    expect(reusePieceEnd(words, 49, 1000, 50)).toBe(99);
    const late = `${"x".repeat(120)} tail and more`;
    expect(reusePieceEnd(late, 0, 1000, 50)).toBe(120); // none in 25..50: the first after it
    const none = "y".repeat(300);
    expect(reusePieceEnd(none, 0, 1000, 50)).toBe(300); // none at all, shorter than size: whole
    expect(reusePieceEnd(none, 0, 100, 50)).toBe(pieceEnd(none, 0, 100));
    expect(reusePieceEnd("short", 0, 1000, 50)).toBe(5);
  });
});

describe("pieceEnd", () => {
  it("cuts before a space that follows a letter or digit, in the second half of the piece", () => {
    expect(pieceEnd("aaaaa bbbbbbbbb", 0, 8)).toBe(5);
    expect(pieceEnd("aaaaa  bbbbbbbb", 0, 8)).toBe(5); // before the double space, not inside it
    expect(pieceEnd("aaa bbbbbbbbbbb", 0, 8)).toBe(8); // in the first half: too short a piece
    expect(pieceEnd("xx aaaaa bbbbbbbbb", 3, 8)).toBe(8);
    expect(pieceEnd("short", 0, 8)).toBe(5);
    // Not right after a special token: SentencePiece adds a space there that a newline does not get.
    expect(pieceEnd("x<|a|> bbbbbbbbbb", 0, 12)).toBe(12);
    expect(pieceEnd("日本語語語 bbbbbbbbb", 0, 8)).toBe(5);
  });

  it("without such a space: at the size, but not inside `<…>` nor a surrogate pair", () => {
    expect(pieceEnd("x".repeat(20), 0, 8)).toBe(8);
    expect(pieceEnd("xxxxx<|im_end|>xxxxx", 0, 8)).toBe(5);
    expect(pieceEnd("xxxxxxx😀xxxx", 0, 8)).toBe(7);
    expect(pieceEnd("xxxxx<xxxxxxxxxx", 0, 8)).toBe(8); // a `<` never closed is no special token
  });
});

// SentencePiece as Llama 2 and Mistral files set it up too: a space added before the text.
const KINDS = [...TOKENIZERS.map((tokenizer) => ({ tokenizer, spacePrefix: false })), { tokenizer: "spm" as const, spacePrefix: true }];

describe.each(KINDS)("$tokenizer tokenizer (space prefix: $spacePrefix)", ({ tokenizer, spacePrefix }) => {
  let model: LlamaModel;
  beforeAll(async () => {
    model = await llama.loadModel({ modelPath: await makeTestModel({ shape: "tiny", type: "Q8_0", tokenizer, spacePrefix }) });
    models.push(model);
  }, 120_000);

  it("tokens of a text cut into pieces are the tokens of the whole text", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const t = text(seed, 200 + seed * 37);
      for (const special of [true, false]) {
        expect(tokenizeText(model, t, special, 97 + seed * 13), `seed ${seed}, special ${special}`).toEqual(model.tokenize(t, special));
      }
    }
  });

  it("a text sent again with more at its end: only its last pieces are tokenized again, with the same tokens", () => {
    const size = 500;
    const before = text(7, 3000);
    const after = `${before} ${text(8, 400)}`;
    const pieces = (t: string) => {
      let n = 0;
      for (let start = 0; start < t.length; n++) start = pieceEnd(t, start, size);
      return n;
    };
    const whole = model.tokenize(after, true);
    tokenizeText(model, before, true, size);
    const spy = vi.spyOn(model, "tokenize");
    try {
      expect(tokenizeText(model, after, true, size)).toEqual(whole);
      // the pieces that `before` had whole come from the cache: those after them, its last piece
      // (cut differently now), and the anchor are tokenized
      expect(pieces(after)).toBeGreaterThan(20);
      expect(spy.mock.calls.length).toBeLessThanOrEqual(pieces(after) - pieces(before) + 3);
      // the other way round a cached piece is never taken for a first piece, nor across `special`
      spy.mockClear();
      expect(tokenizeText(model, after, false, size)).toEqual(model.tokenize(after, false));
    } finally {
      spy.mockRestore();
    }
  });

  it("a text over REUSE_PIECE_CHARS is cut at word ends only, with the tokens of the whole text", () => {
    for (let seed = 1; seed <= 30; seed++) {
      const t = text(seed, 150 + seed * 45); // ~1-9 KB
      for (const special of [true, false]) {
        expect(tokenizeText(model, t, special), `seed ${seed}, special ${special}`).toEqual(model.tokenize(t, special));
      }
    }
  });

  it("a prompt asked again with another ending tokenizes only its last piece again", () => {
    const prefix = text(11, 1200);
    expect(prefix.length).toBeGreaterThan(3 * REUSE_PIECE_CHARS);
    expect(prefix.length).toBeLessThan(PIECE_CHARS);
    tokenizeText(model, `${prefix} question water`);
    const again = `${prefix} question river`;
    const spy = vi.spyOn(model, "tokenize");
    try {
      const tokens = tokenizeText(model, again);
      // the last piece, and the newline it is tokenized behind
      expect(spy.mock.calls.length).toBeLessThanOrEqual(3);
      expect(spy.mock.calls.every(([piece]) => String(piece).length < 2 * REUSE_PIECE_CHARS)).toBe(true);
      spy.mockRestore();
      expect(tokens).toEqual(model.tokenize(again, true));
    } finally {
      spy.mockRestore();
    }
  });

  it("a text under PIECE_CHARS without a word end is tokenized whole, as before", () => {
    const t = "日本語のテキスト".repeat(500); // 4,000 characters, no space
    const spy = vi.spyOn(model, "tokenize");
    try {
      const tokens = tokenizeText(model, t);
      expect(spy.mock.calls.length).toBe(1);
      spy.mockRestore();
      expect(tokens).toEqual(model.tokenize(t, true));
    } finally {
      spy.mockRestore();
    }
  });

  // Whole, a 64,000-character run took ~0.5 s and 1 MB minutes (quadratic); in pieces about a
  // second (linear). The test's timeout is the hang guard, not a speed measure.
  it("a megabyte without a space is tokenized (in pieces) and the text survives", { timeout: 120_000 }, () => {
    const long = "é".repeat(1 << 20);
    const tokens = tokenizeText(model, long);
    expect(tokens.length).toBeGreaterThan(1 << 20);
    expect(model.detokenize(tokens)).toBe(long);
  });
});

describe("PieceCache", () => {
  it("keeps the most recently used pieces within its characters", () => {
    const c = new PieceCache(10);
    const t = (n: number) => [n] as unknown as Token[];
    c.set("aaaa", t(1));
    c.set("bbbb", t(2));
    expect(c.get("aaaa")).toEqual(t(1)); // now the most recent
    c.set("cccc", t(3)); // 12 characters: the least recently used ("bbbb") goes
    expect(c.get("bbbb")).toBeUndefined();
    expect(c.get("aaaa")).toEqual(t(1));
    expect(c.get("cccc")).toEqual(t(3));
    c.set("x".repeat(11), t(4)); // larger than the whole cache: not kept
    expect(c.size).toBe(2);
  });
});
