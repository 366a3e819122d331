// The request shape /api/generate and /api/chat share: validate the body, prepare the completion
// (or an immediate reply such as a load/unload), then answer once (stream: false) or stream NDJSON
// that stops the generation when the client goes away.
import type { Context } from "hono";
import type { z } from "zod";
import { parseBody } from "../body.js";
import { nowNs, type Completion } from "../services/completion.js";
import type { Deps } from "../deps.js";
import { logCounts } from "../middleware/request-log.js";
import { jsonResponse, ndjsonResponse } from "../stream.js";
import type { Prepared } from "../services/completion.js";
import { requestSignal } from "../services/request.js";

/** What logCounts reads from a response object. */
type Counted = { done?: boolean; prompt_eval_count?: number; eval_count?: number };

interface CompletionRoute<S extends z.ZodType, R extends Counted> {
  schema: S;
  prepare: (deps: Deps, body: z.infer<S>, signal: AbortSignal, startedAt: bigint) => Promise<Prepared>;
  /** The route's response objects, one per event. */
  chunks: (body: z.infer<S>, completion: Completion) => AsyncIterable<R>;
  /** The single response of stream: false. */
  collect: (chunks: AsyncIterable<R>) => Promise<R>;
}

export function completionHandler<S extends z.ZodType<{ model: string; stream?: boolean | null }>, R extends Counted>(
  deps: Deps,
  route: CompletionRoute<S, R>,
): (c: Context) => Promise<Response> {
  return async (c) => {
    const startedAt = nowNs();
    const body = await parseBody(c, route.schema);
    c.set("logModel", body.model);
    const ac = requestSignal(c.req.raw);
    const prepared = await route.prepare(deps, body, ac.signal, startedAt);
    if (prepared.kind === "reply") return jsonResponse(prepared.body);
    const { completion } = prepared;
    const gen = logCounts(c, route.chunks(body, completion));
    if (body.stream === false) return jsonResponse(await route.collect(gen));
    return ndjsonResponse(c, gen, () => {
      ac.abort();
      completion.cancel();
    });
  };
}
