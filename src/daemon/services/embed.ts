// Embeddings as a service (reference §1.7, §1.8), shared by /api/embed, /api/embeddings and
// /v1/embeddings: input parsing, Ollama's normalisation and `dimensions`, the model lookup with
// the embed wording, and the runner's embed (which fits each input to its context).
//
// Only embedding models embed (GGUF with `<arch>.pooling_type`, capability "embedding"). Classic
// Ollama (≤ v0.12) also returned last-token vectors from completion models; current Ollama runs
// completion models in llama-server without `--embeddings`, which refuses with a 501. ollamats
// refuses up front with a 400 that says why — a deterministic failure clients do not retry.
import type { ModelSpec } from "../../registry/model-spec.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest, toApiError } from "../errors.js";
import { resolveOptions } from "../options.js";
import { nowNs } from "./completion.js";
import { featuresOf, keepAliveOf, requireFeature, resolveSpec } from "./request.js";

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

export interface EmbedCall {
  /** The model name exactly as the client sent it. */
  model: string;
  inputs: string[];
  /** Cut over-long inputs to the context (true) or refuse them with a 400 (false). */
  truncate: boolean;
  /** Raw pooled vectors (legacy /api/embeddings) instead of L2-normalised ones. */
  raw?: boolean;
  dimensions?: number | null;
  /** Answer what the runner refuses as a 500 with its words: the legacy route's contract (Ollama
   *  passes the runner's error on as-is there), where /api/embed says 400. */
  asRunnerFailure?: boolean;
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
  if (!spec.capabilities.includes("embedding")) throw badRequest(`"${model}" does not support embeddings`);
}

/** Resolves the model (404 with Ollama's embed wording), loads it, embeds every input. */
export async function runEmbed(deps: Deps, call: EmbedCall): Promise<EmbedOutcome> {
  const spec = await resolveEmbedSpec(deps, call.model);
  checkEmbedding(spec, call.model);
  requireFeature(featuresOf(deps, spec), "embed");
  const keepAliveMs = keepAliveOf(call.keepAlive);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, call.options ?? undefined);
  const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal: call.signal });
  const loadDurationNs = Math.max(1, Number(nowNs() - call.startedAt));
  try {
    if (call.inputs.length === 0) return { embeddings: [], promptEvalCount: 0, loadDurationNs, totalDurationNs: Math.max(loadDurationNs, Number(nowNs() - call.startedAt)) };
    let result;
    try {
      result = await lease.runner.embed(call.inputs, {
        truncate: call.truncate,
        signal: call.signal,
        options: options.explicit,
        ...(call.raw ? { raw: true } : {}),
        ...(call.dimensions ? { dimensions: call.dimensions } : {}),
      });
    } catch (err) {
      const error = toApiError(err);
      if (call.asRunnerFailure && error.status < 500 && error.code !== "canceled") throw new ApiError("runner_failed", error.message);
      throw error;
    }
    const embeddings = call.raw ? result.embeddings : result.embeddings.map((v) => applyDimensions(normalize(v), call.dimensions));
    // Ollama reports the tokens evaluated; never 0 when something was embedded (clients require it).
    const promptEvalCount = Math.max(result.promptEvalCount, call.inputs.length);
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

