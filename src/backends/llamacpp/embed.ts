// Runner side of embeddings: raw pooled vectors (the daemon normalises for /api/embed) and the
// number of tokens evaluated, BOS/EOS included, as llama-server reports it to Ollama.
import type { LlamaEmbeddingContext, LlamaModel, Token } from "node-llama-cpp";
import type { EmbedResult } from "../backend.js";
import { tokenizeText } from "./tokenize-text.js";

/**
 * Options for `model.createEmbeddingContext`. The whole input must fit in one batch: pooling
 * (mean, cls, last) only sees the tokens of the batch it runs on, so with node-llama-cpp's default
 * batch of 512 an input of 600 tokens is embedded from its last 88 tokens alone.
 */
export function embeddingContextOptions(contextSize: number, threads: number): { contextSize: number; batchSize: number; threads: number } {
  return { contextSize, batchSize: contextSize, threads };
}

/**
 * Embeds each input in turn. Special tokens in the text are parsed (as llama-server does); an
 * empty input embeds the BOS token alone, so `[""]` gets a real vector as in Ollama, not `[]`.
 */
export async function embedInputs(model: LlamaModel, context: LlamaEmbeddingContext, inputs: string[]): Promise<EmbedResult> {
  const embeddings: number[][] = [];
  let promptEvalCount = 0;
  for (const text of inputs) {
    let tokens: Token[] = tokenizeText(model, text);
    if (tokens.length === 0 && model.tokens.bos !== null) tokens = [model.tokens.bos];
    if (tokens.length === 0) throw new Error("cannot embed an empty input: the model has no BOS token");
    promptEvalCount += context.calculateInputLength(tokens);
    const e = await context.getEmbeddingFor(tokens);
    embeddings.push([...e.vector]);
  }
  return { embeddings, promptEvalCount };
}

/** The tokens `context` adds around an input, as it adds them (the vocabulary's own rules, which
 *  the GGUF's add_bos/add_eos flags and tokenizer type only partly say). */
export function inputSpecials(model: LlamaModel, context: LlamaEmbeddingContext): number | undefined {
  const probe = model.tokenize("hello world");
  // a copy: the count is taken by adding the tokens to the list it is given
  return probe.length === 0 ? undefined : context.calculateInputLength([...probe]) - probe.length;
}
