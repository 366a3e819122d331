// SPM-style ("llama") vocabulary for the synthetic test models written by make-test-model.ts.
//
// Layout (ids):
//   0 <unk> (type 2 = unknown), 1 <s>, 2 </s>, 3 <|im_start|>, 4 <|im_end|> (type 3 = control)
//   5..260  <0x00>..<0xFF> byte-fallback tokens (type 6)
//   261..   pieces (type 1 = normal): single characters, English words with and without the
//           "▁" (U+2581, SPM space) prefix, suffixes, and every prefix of each of those (so that
//           llama.cpp's SPM bigram merging can always reach the whole word), then pronounceable
//           filler pseudo-words up to the requested vocabulary size.
// Scores are descending (-1, -2, ...) in insertion order, so more common pieces merge first.
// `buildVocab(size, specials)` puts other special tokens (another chat format's) in ids 0.. instead.
//
// `buildBpeVocab` is the byte-level BPE ("gpt2") counterpart over the same words: byte characters,
// pieces with merges, special tokens last (Llama 3's layout).

export const SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"] as const;
export const UNK_ID = 0;
export const BOS_ID = 1;
export const EOS_TEXT_ID = 2; // "</s>": present, but NOT the eos id (see EOS_ID)
export const IM_START_ID = 3;
export const IM_END_ID = 4;
/** tokenizer.ggml.eos_token_id: <|im_end|>, so that ChatML turns end on the eos token. */
export const EOS_ID = IM_END_ID;
export const FIRST_BYTE_ID = SPECIAL_TOKENS.length; // 5
export const FIRST_PIECE_ID = FIRST_BYTE_ID + 256; // 261

export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

const SPACE = "\u2581";

// Roughly frequency-ordered common English words.
const WORDS = (
  "user assistant system the of and to a in is it you that he was for on are with as I his they be at one have this from " +
  "or had by hot word but what some we can out other were all there when up use your how said an each " +
  "she which do their time if will way about many then them write would like so these her long make " +
  "thing see him two has look more day could go come did number sound no most people my over know " +
  "water than call first who may down side been now find any new work part take get place made live " +
  "where after back little only round man year came show every good me give our under name very " +
  "through just form sentence great think say help low line differ turn cause much mean before move " +
  "right boy old too same tell does set three want air well also play small end put home read hand " +
  "port large spell add even land here must big high such follow act why ask men change went light " +
  "kind off need house picture try us again animal point mother world near build self earth father " +
  "head stand own page should country found answer school grow study still learn plant cover food sun " +
  "four between state keep eye never last let thought city tree cross farm hard start might story saw " +
  "far sea draw left late run while press close night real life few north open seem together next " +
  "white children begin got walk example ease paper group always music those both mark often letter " +
  "until mile river car feet care second book carry took science eat room friend began idea fish " +
  "mountain stop once base hear horse cut sure watch color face wood main enough plain girl usual " +
  "young ready above ever red list though feel talk bird soon body dog family direct pose leave song " +
  "measure door product black short numeral class wind question happen complete ship area half rock " +
  "order fire south problem piece told knew pass since top whole king space heard best hour better " +
  "true during hundred five remember step early hold west ground interest reach fast verb sing listen " +
  "six table travel less morning ten simple several vowel toward war lay against pattern slow center " +
  "love person money serve appear road map rain rule govern pull cold notice voice unit power town " +
  "fine certain fly fall lead cry dark machine note wait plan figure star box noun field rest correct " +
  "able pound done beauty drive stood contain front teach week final gave green oh quick develop ocean " +
  "warm free minute strong special mind behind clear tail produce fact street inch multiply nothing " +
  "course stay wheel full force blue object decide surface deep moon island foot system busy test " +
  "record boat common gold possible plane stead dry wonder laugh thousand ago ran check game shape " +
  "equate hi miss brought heat snow tire bring yes distant fill east paint language among model " +
  "token server request response stream chat hello data file memory"
).split(" ");

const SUFFIXES = ["s", "es", "ed", "ing", "er", "est", "ly", "tion", "ment", "ness", "able", "al", "ful", "less", "ity", "ive", "ous", "y"];

const PUNCT = ".,!?'\":;-()[]{}/*+=<>#&%$@_~`|\\^";

const SYL_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "st", "th", "tr"];
const SYL_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "oo", "ou", "ie"];
const SYL_CODAS = ["", "n", "r", "s", "t", "l", "m", "nd", "st", "ck"];

export interface Vocab {
  tokens: string[];
  scores: number[];
  types: number[];
}

/** Builds a vocabulary of exactly `size` tokens (size must be at least 600). Deterministic.
 *  `specials` are the first ids (the first is the unknown token, the rest control tokens); the
 *  default is SPECIAL_TOKENS, ChatML's. */
export function buildVocab(size: number, specials: readonly string[] = SPECIAL_TOKENS): Vocab {
  if (!Number.isInteger(size) || size < 600) throw new Error(`vocab size ${size} too small (min 600)`);
  const tokens: string[] = [...specials];
  const types: number[] = specials.map((_, i) => (i === UNK_ID ? TOKEN_TYPE.unknown : TOKEN_TYPE.control));
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(TOKEN_TYPE.byte);
  }
  const seen = new Set(tokens);
  const add = (piece: string): boolean => {
    if (tokens.length >= size || seen.has(piece)) return false;
    // every prefix first, so the SPM bigram merge can always grow the leftmost symbol to the piece
    const chars = [...piece];
    for (let n = 2; n < chars.length; n++) add(chars.slice(0, n).join(""));
    if (tokens.length >= size || seen.has(piece)) return false;
    seen.add(piece);
    tokens.push(piece);
    types.push(TOKEN_TYPE.normal);
    return true;
  };
  addPieces(SPACE, add, () => tokens.length >= size);
  if (tokens.length !== size) throw new Error(`vocab builder produced ${tokens.length} tokens, wanted ${size}`);
  const firstPiece = specials.length + 256;
  const scores = tokens.map((_, i) => (i < firstPiece ? 0 : -(i - firstPiece + 1)));
  return { tokens, scores, types };
}

/** Offers every piece, in the vocabulary's order, to `add` (which returns false once full or
 *  when the piece is taken); `space` is the tokenizer's word-initial space symbol. */
function addPieces(space: string, add: (piece: string) => boolean, full: () => boolean): void {
  add(space);
  for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" + PUNCT) add(c);
  for (const c of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") add(space + c);
  const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);
  for (let i = 0; i < WORDS.length; i++) {
    const w = WORDS[i]!;
    add(space + w);
    if (i < 120) add(w); // common words also appear without a leading space (after "\n")
    if (i < 60) add(space + cap(w));
  }
  for (const s of SUFFIXES) add(s);
  for (const w of WORDS) add(cap(w));
  // filler pseudo-words: onset+vowel+coda syllables, 1..3 of them, enumerated in a fixed order
  for (let len = 1; len <= 3; len++) {
    const sylCount = SYL_ONSETS.length * SYL_VOWELS.length * SYL_CODAS.length;
    const total = sylCount ** len;
    // a fixed stride coprime with `total` spreads the filler over the whole syllable space
    const stride = 7919;
    for (let k = 0; k < total; k++) {
      if (full()) return;
      let idx = (k * stride) % total;
      let word = "";
      for (let s = 0; s < len; s++) {
        const syl = idx % sylCount;
        idx = Math.floor(idx / sylCount);
        word += SYL_ONSETS[syl % SYL_ONSETS.length]! +
          SYL_VOWELS[Math.floor(syl / SYL_ONSETS.length) % SYL_VOWELS.length]! +
          SYL_CODAS[Math.floor(syl / (SYL_ONSETS.length * SYL_VOWELS.length))]!;
      }
      add(space + word);
    }
  }
}

/** GPT-2's byte-to-character table (bytes_to_unicode): printable bytes stand for themselves, the
 *  rest are shifted to U+0100 and up (space is "Ġ", newline "Ċ"). */
export function byteLevelChars(): string[] {
  const chars: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars.push(String.fromCharCode(printable ? b : next++));
  }
  return chars;
}

export interface BpeVocab {
  tokens: string[];
  types: number[];
  merges: string[];
  /** Ids of the special tokens, by text. */
  special: Map<string, number>;
}

/**
 * A byte-level BPE vocabulary ("gpt2" tokenizer, as Llama 3, Qwen and GPT-2 ship): the 256 byte
 * characters first, then the same words as the SPM vocabulary with "Ġ" for a leading space, each
 * reachable by merging its prefix with its last character (every prefix is a token, every such
 * merge is listed, in vocabulary order = merge rank), and the `specials` (control tokens) last,
 * as in Llama 3. Exactly `size` tokens. Deterministic.
 */
export function buildBpeVocab(size: number, specials: readonly string[]): BpeVocab {
  if (!Number.isInteger(size) || size < 600) throw new Error(`vocab size ${size} too small (min 600)`);
  const bytes = byteLevelChars();
  const ascii = (s: string) => [...Buffer.from(s, "utf8")].map((b) => bytes[b]!).join("");
  const room = size - specials.length;
  const tokens: string[] = [...bytes];
  const merges: string[] = [];
  const seen = new Set(tokens);
  const add = (text: string): boolean => {
    const piece = ascii(text);
    if (tokens.length >= room || seen.has(piece)) return false;
    const chars = [...piece];
    // every prefix first, each one merge longer than the last
    for (let n = 2; n <= chars.length && tokens.length < room; n++) {
      const prefix = chars.slice(0, n).join("");
      if (seen.has(prefix)) continue;
      seen.add(prefix);
      tokens.push(prefix);
      merges.push(`${chars.slice(0, n - 1).join("")} ${chars[n - 1]}`);
    }
    return true;
  };
  add("\n\n");
  addPieces(" ", add, () => tokens.length >= room);
  if (tokens.length !== room) throw new Error(`vocab builder produced ${tokens.length} tokens, wanted ${room}`);
  const types: number[] = tokens.map(() => TOKEN_TYPE.normal);
  const special = new Map<string, number>();
  for (const s of specials) {
    special.set(s, tokens.length);
    tokens.push(s);
    types.push(TOKEN_TYPE.control);
  }
  return { tokens, types, merges, special };
}

/** BERT's special tokens at their ids in bert-base-uncased's vocab.txt (the defaults llama.cpp
 *  assumes for a "bert" tokenizer when the GGUF names none). */
export const WORDPIECE_IDS = { pad: 0, unk: 100, cls: 101, sep: 102, mask: 103 } as const;

/**
 * A WordPiece vocabulary as llama.cpp's BERT converter stores it ("phantom space"): a piece that
 * starts a word carries "▁", a continuation ("##ing" in vocab.txt) is stored bare, [BRACKETED]
 * tokens stay as they are. Layout as bert-base-uncased: [PAD] 0, [unused0..98] 1–99, [UNK] 100,
 * [CLS] 101, [SEP] 102, [MASK] 103, then every lowercase letter, digit and punctuation mark in both
 * forms (so any ASCII word can be spelled), then the words, suffixes and filler. Exactly `size`.
 */
export function buildWordPieceVocab(size: number): Vocab {
  if (!Number.isInteger(size) || size < 600) throw new Error(`vocab size ${size} too small (min 600)`);
  const tokens: string[] = ["[PAD]", ...Array.from({ length: 99 }, (_, i) => `[unused${i}]`), "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
  const types: number[] = tokens.map((t, i) => (i === WORDPIECE_IDS.unk ? TOKEN_TYPE.unknown : t.startsWith("[unused") ? TOKEN_TYPE.unused : TOKEN_TYPE.control));
  const seen = new Set(tokens);
  const add = (piece: string): boolean => {
    // uncased: the tokenizer lowercases its input, so an uppercase piece could never match
    if (tokens.length >= size || seen.has(piece) || piece !== piece.toLowerCase()) return false;
    seen.add(piece);
    tokens.push(piece);
    types.push(TOKEN_TYPE.normal);
    return true;
  };
  // punctuation is always a word of its own
  for (const c of PUNCT) add(SPACE + c);
  addPieces(SPACE, add, () => tokens.length >= size);
  if (tokens.length !== size) throw new Error(`vocab builder produced ${tokens.length} tokens, wanted ${size}`);
  return { tokens, scores: tokens.map(() => 0), types };
}
