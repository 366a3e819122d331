// Runner side of reranking: a model whose GGUF says pooling_type rank (a cross-encoder with a
// classifier head) is loaded into node-llama-cpp's ranking context, which scores each
// query-document pair (BOS query EOS SEP document EOS, or the model's rerank template) as a
// probability of relevance.
import type { LlamaModel, LlamaRankingContext } from "node-llama-cpp";
import type { RankResult } from "../backend.js";
import { EngineError, INPUT_TOO_LONG } from "../errors.js";

/** llama.cpp's LLAMA_POOLING_TYPE_RANK. */
const POOLING_RANK = 4;

export function isRankingModel(model: LlamaModel): boolean {
  const md = model.fileInfo.metadata as unknown as Record<string, Record<string, unknown> | undefined>;
  const arch = (md.general as { architecture?: string } | undefined)?.architecture;
  return arch !== undefined && md[arch]?.pooling_type === POOLING_RANK;
}

/** Scores every document; a document longer than the context is scored by its best part
 *  (truncate) or refused. */
export async function rankDocuments(ranker: LlamaRankingContext, query: string, documents: string[], truncate: boolean): Promise<RankResult> {
  let promptEvalCount = 0;
  for (const d of documents) promptEvalCount += Math.min(ranker.calculateInputLength(query, d), ranker.contextSize);
  if (!truncate && documents.some((d) => ranker.calculateInputLength(query, d) >= ranker.contextSize)) throw new EngineError("input_too_long", INPUT_TOO_LONG);
  try {
    const scores = await ranker.rankAll(query, documents, { onOverflow: truncate ? "maxChunk" : "throw" });
    return { scores, promptEvalCount };
  } catch (err) {
    // The query alone leaves no room for any part of a document.
    if (err instanceof Error && /too long|exceed/i.test(err.message)) throw new EngineError("input_too_long", INPUT_TOO_LONG);
    throw err;
  }
}
