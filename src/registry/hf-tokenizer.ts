// The tokenizer of a Hugging Face model directory as GGUF metadata, as Ollama's converter builds
// it (convert/tokenizer.go): a SentencePiece `tokenizer.model` when there is one ("llama"
// vocabulary: pieces, scores, types), else `tokenizer.json`'s byte-level BPE ("gpt2": tokens by
// id, merges, the pre-tokenizer named from its Split patterns); special tokens and the chat
// template from `tokenizer_config.json`, extra end-of-sequence ids from `generation_config.json`;
// or `tokenizer.json`'s WordPiece (BERT's, "bert").
import { createHash } from "node:crypto";
import { kv, type KvEntry } from "./gguf-write.js";

export class TokenizerError extends Error {
  override name = "TokenizerError";
}

const TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

/** The files of the directory the tokenizer is read from (already parsed JSON, raw protobuf). */
export interface TokenizerFiles {
  tokenizerJson?: unknown;
  tokenizerModel?: Buffer;
  tokenizerConfig?: unknown;
  generationConfig?: unknown;
  addedTokensJson?: unknown;
  /** chat_template.jinja: where transformers ≥ 4.50 saves the template (it wins, as in llama.cpp's converter). */
  chatTemplateJinja?: string;
  /** chat_template.json: {"chat_template": …}, the processor's file. */
  chatTemplateJson?: unknown;
}

interface Vocabulary {
  model: "llama" | "gpt2" | "bert";
  tokens: string[];
  scores: number[];
  types: number[];
  merges: string[];
  pre: string;
  /** SentencePiece's normalizer_spec.add_dummy_prefix (a leading space before the text). */
  addSpacePrefix?: boolean;
}

type Json = Record<string, unknown>;
/** `v` when it is a JSON object (not an array, not null). */
export const obj = (v: unknown): Json | undefined => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined);

// ---- SentencePiece model (protobuf) ----------------------------------------------------------

/** Read a protobuf varint at p; returns [value, next]. */
function varint(b: Buffer, p: number): [number, number] {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 10; i++) {
    if (p >= b.length) throw new TokenizerError("tokenizer.model: truncated");
    const byte = b[p++]!;
    v += (byte & 0x7f) * mul;
    if (!(byte & 0x80)) return [v, p];
    mul *= 128;
  }
  throw new TokenizerError("tokenizer.model: bad varint");
}

/** Each field of a protobuf message in b[start, end): (field, wire type, value or [from, to)). */
function* fields(b: Buffer, start: number, end: number): Generator<{ field: number; wire: number; value: number; from: number; to: number }> {
  let p = start;
  while (p < end) {
    const [key, q] = varint(b, p);
    p = q;
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) {
      const [v, r] = varint(b, p);
      p = r;
      yield { field, wire, value: v, from: 0, to: 0 };
    } else if (wire === 1) {
      p += 8;
      yield { field, wire, value: 0, from: p - 8, to: p };
    } else if (wire === 2) {
      const [len, r] = varint(b, p);
      if (r + len > end) throw new TokenizerError("tokenizer.model: truncated");
      p = r + len;
      yield { field, wire, value: len, from: r, to: p };
    } else if (wire === 5) {
      p += 4;
      yield { field, wire, value: 0, from: p - 4, to: p };
    } else {
      throw new TokenizerError(`tokenizer.model: unsupported protobuf wire type ${wire}`);
    }
    if (p > end) throw new TokenizerError("tokenizer.model: truncated");
  }
}

function sentencePiece(model: Buffer): Vocabulary {
  const v: Vocabulary = { model: "llama", tokens: [], scores: [], types: [], merges: [], pre: "default" };
  for (const f of fields(model, 0, model.length)) {
    if (f.field === 3 && f.wire === 2) {
      // ModelProto.normalizer_spec: add_dummy_prefix (field 3) defaults to true
      v.addSpacePrefix = true;
      for (const g of fields(model, f.from, f.to)) if (g.field === 3 && g.wire === 0) v.addSpacePrefix = g.value !== 0;
    }
    if (f.field !== 1 || f.wire !== 2) continue; // ModelProto.pieces
    let piece = "";
    let score = 0;
    let type = TYPE.normal as number;
    for (const g of fields(model, f.from, f.to)) {
      if (g.field === 1 && g.wire === 2) piece = model.toString("utf8", g.from, g.to);
      else if (g.field === 2 && g.wire === 5) score = model.readFloatLE(g.from);
      else if (g.field === 3 && g.wire === 0) type = g.value;
    }
    push(v, piece, score, type >= 1 && type <= 6 ? type : TYPE.normal);
  }
  if (v.tokens.length === 0) throw new TokenizerError("tokenizer.model: no pieces (not a SentencePiece model?)");
  return v;
}

// ---- tokenizer.json ----------------------------------------------------------------------------

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

function addedTokens(tj: Json | undefined): AddedToken[] {
  const list = Array.isArray(tj?.added_tokens) ? (tj.added_tokens as unknown[]) : [];
  const out: AddedToken[] = [];
  for (const a of list) {
    const t = obj(a);
    if (t && Number.isSafeInteger(t.id) && (t.id as number) >= 0 && typeof t.content === "string") out.push({ id: t.id as number, content: t.content, special: t.special === true });
  }
  return out;
}

/** Ollama's names for the pre-tokenizers it recognizes, by sha256 of their Split regexes. */
const PRE_BY_DIGEST: Readonly<Record<string, string>> = {
  d98f9631be1e9607a9848c26c1f9eac1aa9fc21ac6ba82a2fc0741af9780a48f: "llama-bpe",
  "03df5c5863ad70781dcfdef491ead25140f895fe8010964be0daefe27be32b02": "deepseek-llm",
  "21cde974d587f0d54dc8d56b183cc1e6239600172035c68fbd6d4b9f8da0576e": "deepseek-coder",
  "1ff7f41064896984db5d1bb6ff64fa4bc29007d08c1b439e505b7392777a319e": "qwen2",
};

function preTokenizer(tj: Json): string {
  const pre = obj(tj.pre_tokenizer);
  const list = Array.isArray(pre?.pretokenizers) ? (pre.pretokenizers as unknown[]) : [];
  const h = createHash("sha256");
  for (const p of list) {
    const o = obj(p);
    const regex = obj(o?.pattern)?.Regex;
    if (o?.type === "Split" && typeof regex === "string" && regex !== "") h.update(regex);
  }
  return PRE_BY_DIGEST[h.digest("hex")] ?? "default";
}

/** tokenizer.json's model.vocab with the added tokens over it, by id; a hole in the ids gets an
 *  unused placeholder, so the ids after it stay in place. */
function tokensById(vocab: Json, added: AddedToken[]): Array<{ content: string; type: number }> {
  const byId = new Map<number, { content: string; type: number }>();
  for (const [content, id] of Object.entries(vocab)) {
    if (!Number.isSafeInteger(id) || (id as number) < 0) throw new TokenizerError(`tokenizer.json: token ${JSON.stringify(content)} has an invalid id`);
    byId.set(id as number, { content, type: TYPE.normal });
  }
  for (const a of added) byId.set(a.id, { content: a.content, type: a.special ? TYPE.control : TYPE.userDefined });
  const count = byId.size === 0 ? 0 : Math.max(...byId.keys()) + 1;
  if (count > 4_000_000) throw new TokenizerError(`tokenizer.json: token id ${count - 1} is out of range`);
  return Array.from({ length: count }, (_, id) => byId.get(id) ?? { content: `[UNUSED${id}]`, type: TYPE.unused });
}

function byteLevelBpe(tj: Json, added: AddedToken[]): Vocabulary {
  const model = obj(tj.model);
  if (model?.type !== "BPE") throw new TokenizerError(`tokenizer.json: a ${String(model?.type ?? "missing")} model; ollamats converts byte-level BPE and WordPiece tokenizers (or a SentencePiece tokenizer.model)`);
  const vocab = obj(model.vocab);
  if (!vocab) throw new TokenizerError("tokenizer.json: model.vocab is missing");
  if (model.byte_fallback === true) {
    throw new TokenizerError("tokenizer.json: a SentencePiece-style BPE (byte fallback) without its tokenizer.model; add tokenizer.model to the directory");
  }
  const v: Vocabulary = { model: "gpt2", tokens: [], scores: [], types: [], merges: [], pre: preTokenizer(tj) };
  tokensById(vocab, added).forEach((t, id) => push(v, t.content, id, t.type));
  const merges = Array.isArray(model.merges) ? (model.merges as unknown[]) : [];
  for (const m of merges) {
    if (typeof m === "string") v.merges.push(m);
    else if (Array.isArray(m) && m.length === 2 && m.every((x) => typeof x === "string")) v.merges.push(m.join(" "));
    else throw new TokenizerError("tokenizer.json: could not parse the merges (expected strings or pairs of strings)");
  }
  return v;
}

/**
 * BERT's WordPiece vocabulary as llama.cpp keeps it ("bert", "phantom space"): a piece that starts
 * a word gets "▁" in front, a continuation loses its "##", special ([CLS], [SEP], …) and unused
 * tokens stay as they are. llama.cpp's tokenizer lowercases and splits on punctuation itself.
 */
function wordPiece(tj: Json, added: AddedToken[]): Vocabulary {
  const model = obj(tj.model)!;
  const vocab = obj(model.vocab);
  if (!vocab) throw new TokenizerError("tokenizer.json: model.vocab is missing");
  const prefix = typeof model.continuing_subword_prefix === "string" && model.continuing_subword_prefix !== "" ? model.continuing_subword_prefix : "##";
  const v: Vocabulary = { model: "bert", tokens: [], scores: [], types: [], merges: [], pre: "default" };
  tokensById(vocab, added).forEach((t, id) => {
    const kept = t.type === TYPE.control || t.type === TYPE.unused || /^\[.*\]$/.test(t.content);
    push(v, kept ? t.content : t.content.startsWith(prefix) ? t.content.slice(prefix.length) : `\u2581${t.content}`, id, t.type);
  });
  if (v.tokens.length === 0) throw new TokenizerError("tokenizer.json: model.vocab is empty");
  return v;
}

/**
 * BERT's tokenizer_config names [CLS] and [SEP] but no bos/eos: llama.cpp's converter makes [CLS]
 * the start-of-text token (added to every input) and [SEP] the end, as the engine expects; a
 * directory without tokenizer_config.json names them in tokenizer.json's post-processor.
 */
function bertSpecials(tc: Json | undefined, tj: Json): Json {
  const post = obj(tj.post_processor);
  const fromPost = (k: string) => (Array.isArray(post?.[k]) && typeof (post[k] as unknown[])[0] === "string" ? ((post[k] as unknown[])[0] as string) : undefined);
  const cls = tc?.cls_token ?? fromPost("cls") ?? "[CLS]";
  const sep = tc?.sep_token ?? fromPost("sep") ?? "[SEP]";
  const unk = tc?.unk_token ?? obj(tj.model)?.unk_token;
  return { ...tc, cls_token: cls, sep_token: sep, unk_token: unk, bos_token: tc?.bos_token ?? cls, eos_token: tc?.eos_token ?? sep, add_bos_token: tc?.add_bos_token ?? true };
}

// ---- special tokens and template ---------------------------------------------------------------

/** Ollama's key for each special token type (an upstream typo included). */
const SPECIAL_KEYS: ReadonlyArray<[string, string]> = [
  ["bos", "bos"],
  ["eos", "eos"],
  ["unk", "unknown"],
  ["sep", "seperator"],
  ["pad", "padding"],
  ["cls", "cls"],
  ["mask", "mask"],
];

/** The chat templates by name ("default" is tokenizer.chat_template): tokenizer_config.json's
 *  chat_template (a string or a list of named ones), then chat_template.json's, then
 *  chat_template.jinja, each later one replacing the default, as llama.cpp's converter reads them. */
function chatTemplates(tc: Json | undefined, f: TokenizerFiles): Map<string, string> {
  const out = new Map<string, string>();
  const take = (t: unknown, file: string) => {
    if (t === undefined) return;
    if (typeof t === "string") out.set("default", t);
    else if (Array.isArray(t)) {
      for (const e of t) {
        const name = obj(e)?.name;
        const template = obj(e)?.template;
        if (typeof name === "string" && /^[\w.-]{1,64}$/.test(name) && typeof template === "string") out.set(name, template);
      }
    } else throw new TokenizerError(`${file}: invalid chat_template`);
  };
  take(tc?.chat_template, "tokenizer_config.json");
  if (f.chatTemplateJson !== undefined) take(obj(f.chatTemplateJson as Json)?.chat_template, "chat_template.json");
  if (f.chatTemplateJinja !== undefined) out.set("default", f.chatTemplateJinja);
  return out;
}

function push(v: Vocabulary, token: string, score: number, type: number): void {
  v.tokens.push(token);
  v.scores.push(score);
  v.types.push(type);
}

/** Tokens added after a SentencePiece model was trained (added_tokens.json, tokenizer.json), at their ids. */
function addTokens(v: Vocabulary, added: AddedToken[], addedTokensJson: unknown): void {
  const extra = new Map<number, AddedToken>();
  for (const [content, id] of Object.entries(obj(addedTokensJson) ?? {})) if (Number.isSafeInteger(id)) extra.set(id as number, { id: id as number, content, special: false });
  for (const a of added) extra.set(a.id, a);
  for (const a of [...extra.values()].sort((x, y) => x.id - y.id)) {
    if (a.id < v.tokens.length) {
      if (a.special && v.types[a.id] === TYPE.normal) v.types[a.id] = TYPE.control;
      continue;
    }
    while (v.tokens.length < a.id) push(v, `[PAD${v.tokens.length}]`, -1, TYPE.userDefined);
    push(v, a.content, -1, a.special ? TYPE.control : TYPE.userDefined);
  }
}

/**
 * GGUF tokenizer metadata for the directory's tokenizer files; a vocabulary smaller than the
 * model's `vocabSize` (config.json) is padded with placeholder tokens, as Ollama does.
 */
export function tokenizerKvs(f: TokenizerFiles, vocabSize?: number, family: FamilyTokens = {}): { kvs: KvEntry[]; vocabSize: number } {
  const tj = obj(f.tokenizerJson);
  const added = addedTokens(tj);
  let v: Vocabulary;
  if (f.tokenizerModel) {
    v = sentencePiece(f.tokenizerModel);
    addTokens(v, added, f.addedTokensJson);
  } else if (tj) {
    v = obj(tj.model)?.type === "WordPiece" ? wordPiece(tj, added) : byteLevelBpe(tj, added);
  } else {
    throw new TokenizerError("no tokenizer: the directory needs tokenizer.json or tokenizer.model");
  }

  if (vocabSize !== undefined && vocabSize > 4_000_000) throw new TokenizerError(`config.json: vocab_size ${vocabSize} is out of range`);
  for (let i = 0; vocabSize !== undefined && v.tokens.length < vocabSize; i++) push(v, `[PAD${i}]`, -1, TYPE.userDefined);
  const kvs: KvEntry[] = [
    kv.str("tokenizer.ggml.model", v.model),
    kv.str("tokenizer.ggml.pre", v.pre),
    kv.strs("tokenizer.ggml.tokens", v.tokens),
    kv.f32s("tokenizer.ggml.scores", v.scores),
    kv.i32s("tokenizer.ggml.token_type", v.types),
  ];
  if (v.merges.length > 0) kvs.push(kv.strs("tokenizer.ggml.merges", v.merges));
  const spacePrefix = family.spacePrefix ?? v.addSpacePrefix;
  if (spacePrefix !== undefined) kvs.push(kv.bool("tokenizer.ggml.add_space_prefix", spacePrefix));
  const tc = v.model === "bert" && tj ? bertSpecials(obj(f.tokenizerConfig), tj) : obj(f.tokenizerConfig);
  const templates = chatTemplates(tc, f);
  const named = [...templates.keys()].filter((n) => n !== "default");
  if (templates.get("default")) kvs.push(kv.str("tokenizer.chat_template", templates.get("default")!));
  // the others (Command R's and Hermes' "tool_use", "rag") as llama.cpp's converter writes them
  for (const n of named) kvs.push(kv.str(`tokenizer.chat_template.${n}`, templates.get(n)!));
  if (named.length > 0) kvs.push(kv.strs("tokenizer.chat_templates", named));

  const idOf = new Map<string, number>();
  for (const a of added) idOf.set(a.content, a.id);
  // then special pieces, then any piece: a special token named by its text is found wherever it is
  for (let i = v.tokens.length - 1; i >= 0; i--) if (v.types[i] !== TYPE.normal && !idOf.has(v.tokens[i]!)) idOf.set(v.tokens[i]!, i);
  for (let i = v.tokens.length - 1; i >= 0; i--) if (!idOf.has(v.tokens[i]!) && v.types[i] === TYPE.normal) idOf.set(v.tokens[i]!, i);
  const gen = obj(f.generationConfig);
  for (const [type, key] of SPECIAL_KEYS) {
    const raw = tc?.[`${type}_token`];
    const content = typeof raw === "string" ? raw : typeof obj(raw)?.content === "string" ? (obj(raw)!.content as string) : undefined;
    const id = content === undefined ? undefined : idOf.get(content);
    if (id === undefined) continue;
    kvs.push(kv.bool(`tokenizer.ggml.add_${key}_token`, tc?.[`add_${type}_token`] === true));
    kvs.push(kv.u32(`tokenizer.ggml.${key}_token_id`, id));
    const ids = gen?.[`${type}_token_id`];
    if (Array.isArray(ids) && ids.length > 0 && ids.every((x) => Number.isSafeInteger(x) && x >= 0 && x < v.tokens.length)) kvs.push(kv.i32s(`tokenizer.ggml.${key}_token_ids`, ids as number[]));
  }
  for (const [key, text] of Object.entries(family.named ?? {})) {
    const id = idOf.get(text);
    if (id !== undefined) kvs.push(kv.u32(`tokenizer.ggml.${key}_token_id`, id));
  }
  return { kvs, vocabSize: v.tokens.length };
}

/** What a model family's converter sets beyond the tokenizer files (llama.cpp's set_vocab). */
export interface FamilyTokens {
  /** tokenizer.ggml.add_space_prefix, whatever tokenizer.model says. */
  spacePrefix?: boolean;
  /** `tokenizer.ggml.<key>_token_id` for the token with this text, when the vocabulary has it. */
  named?: Record<string, string>;
}
