// POST /v1/rerank: /api/rerank's work in the shape OpenAI-style clients send other servers
// (Jina, Cohere, llama-server): {model, query, documents, top_n, return_documents} →
// {object: "list", model, results: [{index, relevance_score, document?}], usage}, with OpenAI's
// error shape.
import { Hono } from "hono";
import { z } from "zod";
import { parseBody } from "../../body.js";
import { nowNs } from "../../services/completion.js";
import type { Deps } from "../../deps.js";
import { jsonResponse } from "../../stream.js";
import { parseRerankFields, runRerank } from "../../services/rerank.js";
import { requestSignal } from "../../services/request.js";
import { field, modelOf, requestObject } from "./validate.js";

export function rerankV1Routes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/v1/rerank", async (c) => {
    const startedAt = nowNs();
    const o = requestObject(await parseBody(c, z.unknown()));
    const model = modelOf(o);
    c.set("logModel", model);
    const fields = parseRerankFields(o);
    const returnDocuments = field.boolean(o, "return_documents") ?? false;
    const ac = requestSignal(c.req.raw);
    const out = await runRerank(deps, { model, ...fields, truncate: true, signal: ac.signal, startedAt });
    return jsonResponse({
      object: "list",
      model,
      results: out.results.map((r) => ({ ...r, ...(returnDocuments ? { document: { text: fields.documents[r.index] } } : {}) })),
      usage: { prompt_tokens: out.promptEvalCount, total_tokens: out.promptEvalCount },
    });
  });
  return app;
}
