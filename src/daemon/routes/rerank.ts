// POST /api/rerank: the relevance of documents to a query from a reranking model (a GGUF with
// pooling_type rank: a cross-encoder with a classifier head, run through node-llama-cpp's
// ranking context). Ollama has no reranking; the request and result follow what its clients
// send other servers (Cohere, Jina, llama-server, Ollama's own draft): model, query, documents
// (strings or {text}), top_n, return_documents; results sorted by relevance_score, each with the
// document's index. `runRerank` is also what /v1/rerank calls.
import { Hono } from "hono";
import { z } from "zod";
import { RANK_INPUT_TOO_LONG } from "../../backends/backend.js";
import { parseBody } from "../body.js";
import { nowNs } from "../completion.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest, errorMessage } from "../errors.js";
import { resolveOptions } from "../options.js";
import { jsonResponse } from "../stream.js";
import { isRankingModel, keepAliveOf, requestSignal } from "./common.js";
import { resolveEmbedSpec } from "./embed.js";

const keepAlive = z.union([z.number(), z.string()]).optional();
export const rerankSchema = z.object({
  model: z.string().default(""),
  query: z.unknown().optional(),
  documents: z.unknown().optional(),
  top_n: z.unknown().optional(),
  return_documents: z.boolean().nullish(),
  truncate: z.boolean().nullish(),
  keep_alive: keepAlive,
  options: z.record(z.string(), z.unknown()).nullish(),
});

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
  if (!isRankingModel(spec)) {
    throw badRequest(`"${call.model}" does not support reranking: it needs a reranking model (a GGUF with pooling_type rank)`);
  }
  const keepAliveMs = keepAliveOf(call.keepAlive);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, call.options ?? undefined);
  const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal: call.signal });
  const loadDurationNs = Math.max(1, Number(nowNs() - call.startedAt));
  try {
    let scores: number[] = [];
    let promptEvalCount = 0;
    if (call.documents.length > 0) {
      const runner = lease.runner;
      if (!runner.rank) throw new ApiError(500, "this backend cannot rerank");
      try {
        ({ scores, promptEvalCount } = await runner.rank(call.query, call.documents, call.truncate));
      } catch (err) {
        if (errorMessage(err) === RANK_INPUT_TOO_LONG) throw badRequest(RANK_INPUT_TOO_LONG);
        throw new ApiError(500, errorMessage(err));
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

export function rerankRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/api/rerank", async (c) => {
    const startedAt = nowNs();
    const body = await parseBody(c, rerankSchema);
    c.set("logModel", body.model);
    if (body.model === "") throw badRequest("model is required");
    const fields = parseRerankFields(body);
    const ac = requestSignal(c.req.raw);
    const out = await runRerank(deps, {
      model: body.model,
      ...fields,
      truncate: body.truncate ?? true,
      keepAlive: body.keep_alive,
      options: body.options,
      signal: ac.signal,
      startedAt,
    });
    return jsonResponse({
      model: body.model,
      results: out.results.map((r) => ({ ...r, ...(body.return_documents ? { document: { text: fields.documents[r.index] } } : {}) })),
      total_duration: out.totalDurationNs,
      load_duration: out.loadDurationNs,
      prompt_eval_count: out.promptEvalCount,
    });
  });
  return app;
}
