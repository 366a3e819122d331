// POST /api/embed and the legacy POST /api/embeddings (reference §1.7, §1.8): parse, runEmbed
// (services/embed.ts, which /v1/embeddings calls too), encode.
import { Hono } from "hono";
import { z } from "zod";
import { parseBody } from "../body.js";
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import { nowNs } from "../services/completion.js";
import { parseEmbedInput, runEmbed } from "../services/embed.js";
import { requestSignal } from "../services/request.js";
import { jsonResponse } from "../stream.js";

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
      asRunnerFailure: true,
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
