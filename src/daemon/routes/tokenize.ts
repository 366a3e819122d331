// POST /api/tokenize {model, content} → {tokens} and POST /api/detokenize {model, tokens} →
// {content}: parse, call services/tokenize.ts, encode.
import { Hono } from "hono";
import { parseBody } from "../body.js";
import type { Deps } from "../deps.js";
import { requestSignal } from "../services/request.js";
import { detokenize, tokenize } from "../services/tokenize.js";
import { detokenizeSchema, tokenizeSchema } from "../schemas.js";
import { jsonResponse } from "../stream.js";

export function tokenizeRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/api/tokenize", async (c) => {
    const body = await parseBody(c, tokenizeSchema);
    return jsonResponse({ tokens: await tokenize(deps, body, requestSignal(c.req.raw).signal) });
  });
  app.post("/api/detokenize", async (c) => {
    const body = await parseBody(c, detokenizeSchema);
    return jsonResponse({ content: await detokenize(deps, body, requestSignal(c.req.raw).signal) });
  });
  return app;
}
