// The request shape /api/generate and /api/chat share: validate the body, prepare the completion
// (or an immediate reply such as a load/unload), then answer once (stream: false) or stream NDJSON
// that stops the generation when the client goes away. The route encodes one event at a time;
// its responses travel in the completion's batches (one write per batch).
import type { Context } from "hono";
import type { z } from "zod";
import { parseBody } from "../body.js";
import { encodeBatches, flatten } from "../../backends/batches.js";
import { nowNs, type CompletionEvent } from "../services/completion.js";
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
  /** A request's encoder: appends the response objects of one event to `out`. */
  encoder: (body: z.infer<S>) => (ev: CompletionEvent, out: R[]) => void;
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
    const encode = route.encoder(body);
    const chunks = encodeBatches(completion.batches, (ev: CompletionEvent, out: R[]) => {
      const from = out.length;
      encode(ev, out);
      for (let i = from; i < out.length; i++) logCounts(c, out[i] as R);
    });
    if (body.stream === false) return jsonResponse(await route.collect(flatten(chunks)));
    return ndjsonResponse(c, chunks, () => {
      ac.abort();
      completion.cancel();
    });
  };
}
