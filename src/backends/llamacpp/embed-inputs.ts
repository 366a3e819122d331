// Embedding inputs fitted to the runner's context on the host side: each input is tokenized
// with the model's own tokenizer and, with truncate, cut to what the context holds (or refused
// with input_too_long), counting the special tokens the engine adds around an input.
import { EngineError, INPUT_TOO_LONG } from "../errors.js";

export interface Tokenizer {
  tokenize(text: string): Promise<number[]>;
  detokenize(tokens: number[]): Promise<string>;
}

/**
 * Tokens the engine adds around an input (BOS/CLS, EOS/SEP), by tokenizer family, as llama.cpp's
 * tokenizer adds them: they count against the context like the text's own tokens.
 */
export function specialTokenAllowance(metadata: Record<string, unknown>): number {
  const family = metadata["tokenizer.ggml.model"];
  const flag = (key: string, dflt: boolean) => (typeof metadata[key] === "boolean" ? (metadata[key] as boolean) : dflt);
  switch (family) {
    case "bert":
      return 2; // [CLS] … [SEP]
    case "t5":
      return 1; // </s>
    case "rwkv":
      return 0;
    default:
      return (flag("tokenizer.ggml.add_bos_token", family === "llama") ? 1 : 0) + (flag("tokenizer.ggml.add_eos_token", false) ? 1 : 0);
  }
}

/** Most text tokens an input may have: the engine needs input + specials < context size. */
export function inputTokenLimit(contextLength: number, allowance: number): number {
  return contextLength - 1 - allowance;
}

export function isInputLimitError(message: string): boolean {
  const m = message.toLowerCase();
  return m.includes("longer than the usable context") || m.includes("context size") || m.includes("context length") || m.includes("too large");
}

/** The inputs as the runner will embed them: cut to `limit` tokens, or input_too_long. */
export async function fitEmbedInputs(t: Tokenizer, inputs: string[], limit: number, truncate: boolean): Promise<string[]> {
  if (limit <= 0) throw new EngineError("input_too_long", "input after truncation exceeds maximum context length");
  const texts: string[] = [];
  for (const text of inputs) {
    let tokens = await t.tokenize(text);
    if (tokens.length <= limit) {
      texts.push(text);
      continue;
    }
    if (!truncate) throw new EngineError("input_too_long", INPUT_TOO_LONG);
    // Detokenising and tokenising again may not give back the same count: shrink until it fits.
    let keep = limit;
    let cut = text;
    for (let i = 0; i < 4 && tokens.length > limit; i++) {
      cut = await t.detokenize(tokens.slice(0, keep));
      const again = await t.tokenize(cut);
      keep -= Math.max(1, again.length - limit);
      tokens = again;
    }
    if (tokens.length > limit) throw new EngineError("input_too_long", "input exceeds maximum context length and cannot be truncated further");
    texts.push(cut);
  }
  return texts;
}
