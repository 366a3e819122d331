// Reranking as a service, shared by /api/rerank and /v1/rerank: the relevance of documents to a
// query from a reranking model (a GGUF with pooling_type rank: a cross-encoder with a classifier
// head; the runner scores each pair). Ollama has no reranking; the request follows what clients
// send other servers (Cohere, Jina, llama-server, Ollama's own draft): query, documents (strings
// or {text}), top_n; results sorted by relevance_score, each with its document's index.
import type { Deps } from "../deps.js";
import { ApiError, badRequest, toApiError } from "../errors.js";
import { resolveOptions } from "../options.js";
import { nowNs } from "./completion.js";
import { resolveEmbedSpec } from "./embed.js";
import { featuresOf, keepAliveOf, requireFeature } from "./request.js";

export interface RerankCall {
  model: string;
  query: string;
  documents: string[];
  /** How many results to return, the most relevant first (absent: all). */
  topN?: number;
  /** Document longer than the context: scored by its best part (true) or refused (false). */
  truncate: boolean;
  keepAlive?: number | string;
  options?: Record<string, unknown> | null;
  signal: AbortSignal;
  startedAt: bigint;
}

export interface RerankResult {
  index: number;
  relevance_score: number;
}

export interface RerankOutcome {
  results: RerankResult[];
  promptEvalCount: number;
  loadDurationNs: number;
  totalDurationNs: number;
}

/** The request's fields checked, with messages that say what to send instead. */
export function parseRerankFields(body: { query?: unknown; documents?: unknown; top_n?: unknown }): { query: string; documents: string[]; topN?: number } {
  if (typeof body.query !== "string") throw badRequest("query is required: the text to rank the documents against");
  if (!Array.isArray(body.documents)) throw badRequest("documents is required: an array of strings (or of objects with a text field) to rank");
  const documents = body.documents.map((d, i) => {
    if (typeof d === "string") return d;
    if (typeof d === "object" && d !== null && typeof (d as { text?: unknown }).text === "string") return (d as { text: string }).text;
    throw badRequest(`documents[${i}] must be a string or an object with a text field`);
  });
  const topN = body.top_n;
  if (topN !== undefined && topN !== null && (typeof topN !== "number" || !Number.isInteger(topN) || topN < 0)) {
    throw badRequest("top_n must be a non-negative integer (0 or absent: every document)");
  }
  return { query: body.query, documents, ...(typeof topN === "number" && topN > 0 ? { topN } : {}) };
}

export async function runRerank(deps: Deps, call: RerankCall): Promise<RerankOutcome> {
  const spec = await resolveEmbedSpec(deps, call.model);
  requireFeature(featuresOf(deps, spec), "rank");
  const keepAliveMs = keepAliveOf(call.keepAlive);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, call.options ?? undefined);
  const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal: call.signal });
  const loadDurationNs = Math.max(1, Number(nowNs() - call.startedAt));
  try {
    let scores: number[] = [];
    let promptEvalCount = 0;
    if (call.documents.length > 0) {
      const runner = lease.runner;
      if (!runner.rank) throw new ApiError("internal", "this runner cannot rerank");
      try {
        ({ scores, promptEvalCount } = await runner.rank(call.query, call.documents, call.truncate, call.signal));
      } catch (err) {
        throw toApiError(err);
      }
    }
    const results = scores
      .map((relevance_score, index) => ({ index, relevance_score }))
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
      .slice(0, call.topN ?? scores.length);
    return { results, promptEvalCount, loadDurationNs, totalDurationNs: Math.max(loadDurationNs + 1, Number(nowNs() - call.startedAt)) };
  } finally {
    lease.release();
  }
}

