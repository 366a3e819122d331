// Log probabilities of generated tokens from node-llama-cpp's per-token metadata
// (`evaluateWithMetadata`: the chosen token's probability and the candidates', after the
// sampling chain: the model's distribution when greedy, the one sampled from otherwise). Each
// token's text is decoded with the tokens before it (so an SPM leading space stays), and its
// bytes are the token's own bytes even when it holds only part of a UTF-8 character.
import type { LlamaModel, Token } from "node-llama-cpp";
import type { Logprob, TokenLogprob } from "../backend.js";

/** GPT-2's byte-level BPE alphabet back to bytes: printable bytes stand for themselves, the
 *  others were moved to U+0100 and up in order. */
function byteLevelDecoder(): Map<number, number> {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const map = new Map<number, number>();
  let next = 0x100;
  for (let b = 0; b < 256; b++) map.set(printable(b) ? b : next++, b);
  return map;
}
let byteLevel: Map<number, number> | undefined;

/** The vocabulary's text of a token (node-llama-cpp keeps it on its native model). */
function vocabText(model: LlamaModel, token: Token): string | undefined {
  const native = (model as unknown as { _model?: { getTokenString?: (t: number) => string | undefined } })._model;
  return native?.getTokenString?.(token);
}

/** The bytes of a token whose decoded text is not whole UTF-8 (a byte token, part of a BPE char). */
function partialBytes(model: LlamaModel, token: Token): number[] | undefined {
  const raw = vocabText(model, token);
  if (raw === undefined) return undefined;
  const hex = /^<0x([0-9A-Fa-f]{2})>$/.exec(raw);
  if (hex) return [parseInt(hex[1]!, 16)];
  if (model.vocabularyType !== "bpe") return undefined;
  byteLevel ??= byteLevelDecoder();
  const out: number[] = [];
  for (const ch of raw) {
    const b = byteLevel.get(ch.codePointAt(0)!);
    if (b === undefined) return undefined;
    out.push(b);
  }
  return out;
}

/** Probability 0 has no logarithm: OpenAI's floor. */
const logOf = (p: number) => (p > 0 ? Math.log(p) : -9999);

function entry(model: LlamaModel, token: Token, probability: number, before: readonly Token[]): TokenLogprob {
  const text = model.detokenize([token], false, before as Token[]);
  const bytes = (text.includes("\uFFFD") ? partialBytes(model, token) : undefined) ?? [...Buffer.from(text, "utf8")];
  return { token: text, logprob: logOf(probability), bytes };
}

/** One generated token's entry; `top` alternatives (0: none) from the candidates' probabilities. */
export function tokenLogprob(
  model: LlamaModel,
  token: Token,
  confidence: number | undefined,
  probabilities: Map<Token, number> | undefined,
  top: number,
  before: readonly Token[],
): Logprob {
  const p = confidence ?? probabilities?.get(token) ?? 0;
  const out: Logprob = entry(model, token, p, before);
  if (top > 0 && probabilities) {
    const alternatives: TokenLogprob[] = [];
    // The map is sorted by probability, highest first.
    for (const [t, q] of probabilities) {
      if (alternatives.length >= top) break;
      alternatives.push(entry(model, t, q, before));
    }
    out.top_logprobs = alternatives;
  }
  return out;
}
