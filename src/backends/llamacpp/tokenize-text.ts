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
import type { LlamaModel, Token } from "node-llama-cpp";

/** Texts up to this long are tokenized at once (a few milliseconds at worst). */
export const PIECE_CHARS = 8192;
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
  for (let b = limit; b > start + size / 2; b--) {
    if (text.charCodeAt(b) === 0x20 && WORD_END.test(text[b - 1]!)) return b;
  }
  let end = limit;
  // Not inside `<…>` (special tokens are parsed in the text): cut before an unclosed `<`.
  const open = text.lastIndexOf("<", end - 1);
  if (open > end - SPECIAL_TEXT_CHARS && open > start && text.indexOf(">", open) >= end) end = open;
  // Not between the halves of a surrogate pair.
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return end;
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

/** `model.tokenize(text, special)`, in pieces when the text is long. */
export function tokenizeText(model: LlamaModel, text: string, special = true, size = PIECE_CHARS): Token[] {
  if (text.length <= size) return model.tokenize(text, special);
  const out: Token[] = [];
  const anchor = model.tokenize(ANCHOR, special);
  for (let start = 0; start < text.length; ) {
    const end = pieceEnd(text, start, size);
    const piece = text.slice(start, end);
    const tokens = start === 0 ? model.tokenize(piece, special) : continuation(model, piece, special, anchor);
    for (const t of tokens) out.push(t);
    start = end;
  }
  return out;
}
