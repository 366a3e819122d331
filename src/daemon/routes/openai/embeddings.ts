// POST /v1/embeddings (reference §1.15): /api/embed's work (normalised, truncated to the context)
// in OpenAI's list shape; `encoding_format: "base64"` (the openai SDK's default) is the vector
// as little-endian float32 bytes.
import { Hono } from "hono";
import { z } from "zod";
import { parseBody } from "../../body.js";
import { nowNs } from "../../services/completion.js";
import type { Deps } from "../../deps.js";
import { badRequest } from "../../errors.js";
import { jsonResponse } from "../../stream.js";
import { requestSignal } from "../../services/request.js";
import { parseEmbedInput, runEmbed } from "../../services/embed.js";
import { field, modelOf, requestObject } from "./validate.js";

export function float32Base64(vec: number[]): string {
  const buf = Buffer.alloc(vec.length * 4);
  vec.forEach((v, i) => buf.writeFloatLE(v, i * 4));
  return buf.toString("base64");
}

export interface EmbeddingsTranslation {
  model: string;
  inputs: string[];
  dimensions?: number;
  base64: boolean;
}

export function translateEmbeddingsRequest(body: unknown): EmbeddingsTranslation {
  const o = requestObject(body);
  const model = modelOf(o);
  const format = field.string(o, "encoding_format");
  if (format !== undefined && format !== "" && !["float", "base64"].includes(format.toLowerCase())) {
    throw badRequest(`Invalid value for 'encoding_format' = ${format}. Supported values: ['float', 'base64'].`);
  }
  const input = o.input;
  if (input === undefined || input === null || (Array.isArray(input) && input.length === 0)) throw badRequest("invalid input");
  const inputs = input === "" ? [""] : parseEmbedInput(input);
  const dimensions = field.integer(o, "dimensions");
  return { model, inputs, ...(dimensions !== undefined ? { dimensions } : {}), base64: format?.toLowerCase() === "base64" };
}

export function embeddingRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/v1/embeddings", async (c) => {
    const startedAt = nowNs();
    const t = translateEmbeddingsRequest(await parseBody(c, z.unknown()));
    const ac = requestSignal(c.req.raw);
    const out = await runEmbed(deps, { model: t.model, inputs: t.inputs, truncate: true, dimensions: t.dimensions, signal: ac.signal, startedAt });
    return jsonResponse({
      object: "list",
      data: out.embeddings.map((e, index) => ({ object: "embedding", embedding: t.base64 ? float32Base64(e) : e, index })),
      model: t.model,
      usage: { prompt_tokens: out.promptEvalCount, total_tokens: out.promptEvalCount },
    });
  });
  return app;
}
