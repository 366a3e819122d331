// Tokenizing text of any length in time that grows with its length. llama.cpp's tokenizers slow
// down with the square of a text's length on long runs (a 64,000-character word of "é" took
// 0.5 s, a 1 MB message minutes, holding the runner and every request queued behind it). A long
// text is therefore tokenized in pieces of at most PIECE_CHARS, cut right before a space that
// follows a letter or digit: no token spans such a cut (a pre-tokenizer starts a word there, and
// SentencePiece marks a word's start with its leading space), and each piece after the first is
// tokenized as a continuation (behind a newline whose tokens are then dropped, so no space is
// added at its start), so the tokens are those of the whole text at once. Only a run of more
// than half a piece without such a space is cut elsewhere (between code points, never inside
// something that looks like a special token); its tokens may then differ at the cut.
//
// The pieces of a text are remembered per model (all but its last): a conversation sent again
// with a turn more (an agent's whole context, every turn; Claude Code's count_tokens), or a
// document asked about again, is cut the same way up to near its old end, so only its last pieces
// are tokenized again (120 KB of text: ~40 ms whole, ~8 ms with its earlier pieces remembered; a
// 1,000-token prompt: 2-4 ms of a request's first token on 2 busy cores, ~0.5 ms remembered).
// For that, texts longer than REUSE_PIECE_CHARS are cut about that often too, but only right
// before a space that follows a letter or digit (the cut no token spans); a text without one
// near there is cut at PIECE_CHARS as above, or not at all when it is shorter.
import type { LlamaModel, Token } from "node-llama-cpp";

/** Texts up to this long are tokenized at once (a few milliseconds at worst), unless a piece
 *  worth remembering can be cut off at a word's end. */
export const PIECE_CHARS = 8192;
/** About how long a remembered piece is: the most of a text sent again that is tokenized again. */
export const REUSE_PIECE_CHARS = 1024;
/** What a cut may follow: the end of a word. Not a special token's last character (`>`, `]`):
 *  SentencePiece adds a space after a special token that it does not add after a newline. */
const WORD_END = /[\p{L}\p{N}]/u;
/** A special token's text (`<|im_start|>`, `<start_of_turn>`) is never longer than this. */
const SPECIAL_TEXT_CHARS = 64;

/** Where the piece starting at `start` ends: before a space that follows a letter or digit, else
 *  at a code point boundary outside a possible special token. */
export function pieceEnd(text: string, start: number, size = PIECE_CHARS): number {
  const limit = start + size;
  if (limit >= text.length) return text.length;
  const cut = lastWordEnd(text, start + size / 2, limit);
  if (cut >= 0) return cut;
  let end = limit;
  // Not inside `<…>` (special tokens are parsed in the text): cut before an unclosed `<`.
  const open = text.lastIndexOf("<", end - 1);
  if (open > end - SPECIAL_TEXT_CHARS && open > start && text.indexOf(">", open) >= end) end = open;
  // Not between the halves of a surrogate pair.
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return end;
}

/** Whether `b` is right before a space that follows a letter or digit: a cut no token spans. */
function wordEndAt(text: string, b: number): boolean {
  return text.charCodeAt(b) === 0x20 && WORD_END.test(text[b - 1]!);
}

/** The last word end after `from` up to `to` (inclusive), or -1. */
function lastWordEnd(text: string, from: number, to: number): number {
  for (let b = to; b > from; b--) if (wordEndAt(text, b)) return b;
  return -1;
}

/**
 * Where the piece starting at `start` ends when pieces are also cut to be remembered: the word
 * end nearest after `start + reuse / 2` from `start + reuse` back, else the first one after it
 * (within `size`), else pieceEnd's cut for `size`. Only the text from `start` to the cut decides
 * it, so a text sent again with more at its end is cut the same way up to near its old end.
 */
export function reusePieceEnd(text: string, start: number, size = PIECE_CHARS, reuse = REUSE_PIECE_CHARS): number {
  const limit = start + reuse;
  if (limit >= text.length) return text.length;
  const cut = lastWordEnd(text, start + reuse / 2, limit);
  if (cut >= 0) return cut;
  const far = Math.min(text.length, start + size);
  for (let b = limit + 1; b < far; b++) if (wordEndAt(text, b)) return b;
  return pieceEnd(text, start, size);
}

/** Text after a newline starts no new text: tokenized behind one, less the newline's tokens
 *  (`anchor`), a piece gets no space a tokenizer adds at the start of a text (SentencePiece's
 *  add_space_prefix). */
const ANCHOR = "\n";

/** The tokens `piece` has in the middle of a text. */
function continuation(model: LlamaModel, piece: string, special: boolean, anchor: readonly Token[]): Token[] {
  const tokens = model.tokenize(ANCHOR + piece, special);
  if (anchor.length > 0 && anchor.every((t, i) => tokens[i] === t)) return tokens.slice(anchor.length);
  return model.tokenize(piece, special, "trimLeadingSpace");
}

/** The most characters of pieces remembered per model (their tokens take ~4× that in bytes). */
export const REMEMBERED_CHARS = 2 * 1024 * 1024;

/** Pieces' tokens, least recently used first out, within a number of characters. */
export class PieceCache {
  private readonly pieces = new Map<string, readonly Token[]>();
  private chars = 0;
  constructor(private readonly limitChars = REMEMBERED_CHARS) {}

  get(key: string): readonly Token[] | undefined {
    const tokens = this.pieces.get(key);
    if (tokens) {
      this.pieces.delete(key);
      this.pieces.set(key, tokens);
    }
    return tokens;
  }

  set(key: string, tokens: readonly Token[]): void {
    if (key.length > this.limitChars || this.pieces.has(key)) return;
    this.pieces.set(key, tokens);
    this.chars += key.length;
    for (const [old] of this.pieces) {
      if (this.chars <= this.limitChars) break;
      this.pieces.delete(old);
      this.chars -= old.length;
    }
  }

  get size(): number {
    return this.pieces.size;
  }
}

const remembered = new WeakMap<LlamaModel, PieceCache>();

/** The piece cache of a model (made on first use, gone with the model). */
function pieceCache(model: LlamaModel): PieceCache {
  let cache = remembered.get(model);
  if (!cache) remembered.set(model, (cache = new PieceCache()));
  return cache;
}

/** `model.tokenize(text, special)`, in pieces when the text is long (`size`) or has a part
 *  worth remembering (`reuse`; tests pass smaller sizes). */
export function tokenizeText(model: LlamaModel, text: string, special = true, size = PIECE_CHARS, reuse = Math.min(size, REUSE_PIECE_CHARS)): Token[] {
  if (text.length <= reuse) return model.tokenize(text, special);
  const out: Token[] = [];
  const cache = pieceCache(model);
  let anchor: readonly Token[] | undefined;
  for (let start = 0; start < text.length; ) {
    const end = reusePieceEnd(text, start, size, reuse);
    const piece = text.slice(start, end);
    // The key says how the piece was tokenized: first in its text or not, specials or not.
    const key = (start === 0 ? "F" : "C") + (special ? "S" : "T") + piece;
    let tokens = end < text.length ? cache.get(key) : undefined;
    if (!tokens) {
      tokens = start === 0 ? model.tokenize(piece, special) : continuation(model, piece, special, (anchor ??= model.tokenize(ANCHOR, special)));
      if (end < text.length) cache.set(key, tokens);
    }
    for (const t of tokens) out.push(t);
    start = end;
  }
  return out;
}
