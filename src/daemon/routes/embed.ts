// POST /api/embed and the legacy POST /api/embeddings (reference §1.7, §1.8); `runEmbed` is also
// what /v1/embeddings calls.
//
// Only embedding models embed (GGUF with `<arch>.pooling_type`, capability "embedding"). Classic
// Ollama (≤ v0.12) also returned last-token vectors from completion models; current Ollama runs
// completion models in llama-server without `--embeddings`, which refuses with a 501. ollamats
// refuses up front with a 400 that says why — a deterministic failure clients do not retry.
import { Hono } from "hono";
import { z } from "zod";
import type { ModelSpec } from "../../registry/model-spec.js";
import { parseBody } from "../body.js";
import { nowNs } from "../completion.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest, errorMessage } from "../errors.js";
import { resolveOptions } from "../options.js";
import { jsonResponse } from "../stream.js";
import { isRankingModel, keepAliveOf, requestSignal, resolveSpec } from "./common.js";

const keepAlive = z.union([z.number(), z.string()]).optional();
const options = z.record(z.string(), z.unknown()).nullish();

export const embedSchema = z.object({
  model: z.string().default(""),
  input: z.unknown().optional(),
  truncate: z.boolean().nullish(),
  dimensions: z.number().int().nullish(),
  keep_alive: keepAlive,
  options,
});

export const embeddingsSchema = z.object({
  model: z.string().default(""),
  prompt: z.string().nullish(),
  keep_alive: keepAlive,
  options,
});

export const INPUT_TOO_LONG = "the input length exceeds the context length";

/** `input` as Ollama reads it: a string (empty → nothing), an array of strings, or absent. */
export function parseEmbedInput(input: unknown): string[] {
  if (input === undefined || input === null) return [];
  if (typeof input === "string") return input.length > 0 ? [input] : [];
  if (Array.isArray(input)) {
    if (!input.every((v) => typeof v === "string")) throw badRequest("invalid input type");
    return input as string[];
  }
  throw badRequest("invalid input type");
}

/** L2 normalisation with Ollama's floor of 1e-12 on the norm; NaN or Inf is an error. */
export function normalize(vec: number[]): number[] {
  let sum = 0;
  for (const v of vec) {
    if (!Number.isFinite(v)) throw badRequest("embedding contains NaN or Inf values");
    sum += v * v;
  }
  const scale = 1 / Math.max(Math.sqrt(sum), 1e-12);
  return vec.map((v) => v * scale);
}

/** `dimensions` smaller than the vector truncates it and normalises again; otherwise a no-op. */
export function applyDimensions(vec: number[], dimensions: number | null | undefined): number[] {
  if (!dimensions || dimensions <= 0 || dimensions >= vec.length) return vec;
  return normalize(vec.slice(0, dimensions));
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

function isInputLimitError(message: string): boolean {
  const m = message.toLowerCase();
  return m.includes("longer than the usable context") || m.includes("context size") || m.includes("context length") || m.includes("too large");
}

export interface EmbedCall {
  /** The model name exactly as the client sent it. */
  model: string;
  inputs: string[];
  /** Cut over-long inputs to the context (true) or refuse them with a 400 (false). */
  truncate: boolean;
  /** Raw pooled vectors (legacy /api/embeddings) instead of L2-normalised ones. */
  raw?: boolean;
  dimensions?: number | null;
  keepAlive?: number | string;
  options?: Record<string, unknown> | null;
  signal: AbortSignal;
  startedAt: bigint;
}

export interface EmbedOutcome {
  embeddings: number[][];
  promptEvalCount: number;
  loadDurationNs: number;
  totalDurationNs: number;
}

function checkEmbedding(spec: ModelSpec, model: string): void {
  if (isRankingModel(spec)) throw badRequest(`"${model}" does not support embeddings: it is a reranking model (use /api/rerank)`);
  if (!spec.capabilities.includes("embedding")) throw badRequest(`"${model}" does not support embeddings`);
}

/** Resolves the model (404 with Ollama's embed wording), loads it, embeds every input. */
export async function runEmbed(deps: Deps, call: EmbedCall): Promise<EmbedOutcome> {
  const spec = await resolveEmbedSpec(deps, call.model);
  checkEmbedding(spec, call.model);
  const keepAliveMs = keepAliveOf(call.keepAlive);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, call.options ?? undefined);
  const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal: call.signal });
  const loadDurationNs = Math.max(1, Number(nowNs() - call.startedAt));
  try {
    if (call.inputs.length === 0) return { embeddings: [], promptEvalCount: 0, loadDurationNs, totalDurationNs: Math.max(loadDurationNs, Number(nowNs() - call.startedAt)) };
    const runner = lease.runner;
    const allowance = specialTokenAllowance(spec.gguf.metadata);
    const limit = inputTokenLimit(runner.info.contextLength, allowance);
    if (limit <= 0) throw badRequest("input after truncation exceeds maximum context length");
    const texts: string[] = [];
    for (const text of call.inputs) {
      let tokens = await runner.tokenize(text);
      if (tokens.length <= limit) {
        texts.push(text);
        continue;
      }
      if (!call.truncate) throw badRequest(INPUT_TOO_LONG);
      // Detokenising and tokenising again may not give back the same count: shrink until it fits.
      let keep = limit;
      let cut = text;
      for (let i = 0; i < 4 && tokens.length > limit; i++) {
        cut = await runner.detokenize(tokens.slice(0, keep));
        const again = await runner.tokenize(cut);
        keep -= Math.max(1, again.length - limit);
        tokens = again;
      }
      if (tokens.length > limit) throw badRequest("input exceeds maximum context length and cannot be truncated further");
      texts.push(cut);
    }
    let result;
    try {
      result = await runner.embed(texts);
    } catch (err) {
      if (isInputLimitError(errorMessage(err))) throw badRequest(INPUT_TOO_LONG);
      throw new ApiError(500, errorMessage(err));
    }
    const embeddings = call.raw ? result.embeddings : result.embeddings.map((v) => applyDimensions(normalize(v), call.dimensions));
    // Ollama reports the tokens evaluated; never 0 when something was embedded (clients require it).
    const promptEvalCount = Math.max(result.promptEvalCount, texts.length);
    return { embeddings, promptEvalCount, loadDurationNs, totalDurationNs: Math.max(loadDurationNs + 1, Number(nowNs() - call.startedAt)) };
  } finally {
    lease.release();
  }
}

/** The model, with the scheduler's 404 wording for a name that is not installed. */
export async function resolveEmbedSpec(deps: Deps, model: string): Promise<ModelSpec> {
  try {
    return await resolveSpec(deps, model);
  } catch (err) {
    // A well-formed name that is not installed: Ollama's scheduler wording.
    if (err instanceof ApiError && err.status === 404 && model !== "") {
      throw new ApiError(404, `model "${model}" not found, try pulling it first`);
    }
    throw err;
  }
}

export function embedRoutes(deps: Deps): Hono {
  const app = new Hono();

  app.post("/api/embed", async (c) => {
    const startedAt = nowNs();
    const body = await parseBody(c, embedSchema);
    const inputs = parseEmbedInput(body.input);
    const ac = requestSignal(c.req.raw);
    const out = await runEmbed(deps, {
      model: body.model,
      inputs,
      truncate: body.truncate ?? true,
      dimensions: body.dimensions,
      keepAlive: body.keep_alive,
      options: body.options,
      signal: ac.signal,
      startedAt,
    });
    if (inputs.length === 0) return jsonResponse({ model: body.model, embeddings: [] });
    return jsonResponse({
      model: body.model,
      embeddings: out.embeddings,
      total_duration: out.totalDurationNs,
      load_duration: out.loadDurationNs,
      prompt_eval_count: out.promptEvalCount,
    });
  });

  app.post("/api/embeddings", async (c) => {
    const startedAt = nowNs();
    const body = await parseBody(c, embeddingsSchema);
    if (body.model === "") throw badRequest("model is required");
    const prompt = body.prompt ?? "";
    const ac = requestSignal(c.req.raw);
    const out = await runEmbed(deps, {
      model: body.model,
      inputs: prompt === "" ? [] : [prompt],
      truncate: false,
      raw: true,
      keepAlive: body.keep_alive,
      options: body.options,
      signal: ac.signal,
      startedAt,
    });
    return jsonResponse({ embedding: out.embeddings[0] ?? [] });
  });

  return app;
}
