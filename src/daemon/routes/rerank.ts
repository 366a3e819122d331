// POST /api/rerank: parse, runRerank (services/rerank.ts, which /v1/rerank calls too), encode.
import { Hono } from "hono";
import { z } from "zod";
import { parseBody } from "../body.js";
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import { nowNs } from "../services/completion.js";
import { parseRerankFields, runRerank } from "../services/rerank.js";
import { requestSignal } from "../services/request.js";
import { jsonResponse } from "../stream.js";

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
