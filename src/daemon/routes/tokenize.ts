// POST /api/tokenize {model, content} → {tokens} and POST /api/detokenize {model, tokens} →
// {content}: token budgeting with the model's own tokenizer (not in Ollama). The model is
// loaded (or attached to) like any request, with the request's keep_alive and options; special
// tokens written in the text (e.g. `<|im_start|>`) are parsed as tokens, no BOS is added.
import { Hono } from "hono";
import { parseBody } from "../body.js";
import type { Deps } from "../deps.js";
import { resolveOptions } from "../options.js";
import { detokenizeSchema, tokenizeSchema } from "../schemas.js";
import { jsonResponse } from "../stream.js";
import { checkTokenIds, keepAliveOf, requestSignal, resolveSpec } from "./common.js";
import type { ModelSpec } from "../../registry/model-spec.js";
import type { Runner } from "../../backends/backend.js";

async function withRunner<T>(
  deps: Deps,
  spec: ModelSpec,
  body: { keep_alive?: number | string; options?: Record<string, unknown> },
  raw: Request,
  fn: (r: Runner) => Promise<T>,
): Promise<T> {
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);
  const ac = requestSignal(raw);
  const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs: keepAliveOf(body.keep_alive), signal: ac.signal });
  try {
    return await fn(lease.runner);
  } finally {
    lease.release();
  }
}

export function tokenizeRoutes(deps: Deps): Hono {
  const app = new Hono();

  app.post("/api/tokenize", async (c) => {
    const body = await parseBody(c, tokenizeSchema);
    const spec = await resolveSpec(deps, body.model);
    const tokens = body.content === "" ? [] : await withRunner(deps, spec, body, c.req.raw, (r) => r.tokenize(body.content));
    return jsonResponse({ tokens });
  });

  app.post("/api/detokenize", async (c) => {
    const body = await parseBody(c, detokenizeSchema);
    const spec = await resolveSpec(deps, body.model);
    checkTokenIds(spec, body.tokens);
    const content = body.tokens.length === 0 ? "" : await withRunner(deps, spec, body, c.req.raw, (r) => r.detokenize(body.tokens));
    return jsonResponse({ content });
  });

  return app;
}
