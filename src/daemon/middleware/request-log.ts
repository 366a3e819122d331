// The first middleware: gives the request its id (the client's X-Request-Id when usable, else a
// new one; echoed in the response), runs it inside its request context (so every log line written
// for it carries `request_id`: request-context.ts), and when it ends writes one INFO line (method,
// path, status, model, duration, token counts, request_id) and tells the metrics, once. Never the
// body: prompts stay out of the log unless OLLAMA_DEBUG is set (services/debug-log.ts). For a streamed
// answer (NDJSON or SSE) the line is written when the stream ends, so the duration covers the
// whole answer and the token counts are known; a stream the client abandoned is marked
// `canceled=true`. Scrapes of /metrics are logged at debug level (a scrape every few seconds).
//
// The inference routes report what only they know through hono context variables:
//   c.set("logModel", name)                          as soon as the model name is known
//   c.set("logTokens", { prompt: n, eval: m })       when the final counts are known
// (`logCounts(c, chunk)` does the second for each Ollama response of a stream).
import type { ServerResponse } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { debugTimings } from "../services/debug-log.js";
import { formatDurationMs, type Logger } from "../log.js";
import { NO_OBSERVER, type DaemonObserver } from "../metrics/observer.js";
import { requestIdFor, runInRequest, type RequestContext } from "../request-context.js";
import { routeName } from "../routes/access.js";

export const REQUEST_ID_HEADER = "X-Request-Id";

export interface LogTokens {
  /** Prompt tokens evaluated (prompt_eval_count). */
  prompt?: number;
  /** Tokens generated (eval_count). */
  eval?: number;
}

declare module "hono" {
  interface ContextVariableMap {
    /** The model a request used, for the request log line. */
    logModel: string;
    /** The request's token counts, for the request log line. */
    logTokens: LogTokens;
  }
}

const STREAMED = /^(application\/x-ndjson|text\/event-stream)/i;

/**
 * Records the counts of the final (`done`) Ollama response as `logTokens`; the encoders call
 * it on each response they make (no stream stage of its own: a token costs no extra await).
 */
export function logCounts<T extends { done?: boolean; prompt_eval_count?: number; eval_count?: number }>(c: Context, chunk: T): T {
  if (chunk.done) {
    c.set("logTokens", {
      ...(chunk.prompt_eval_count !== undefined ? { prompt: chunk.prompt_eval_count } : {}),
      ...(chunk.eval_count !== undefined ? { eval: chunk.eval_count } : {}),
    });
  }
  return chunk;
}

function remoteAddress(c: Context): string | undefined {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress;
}

/** The counts of the request's own generations, when the route did not report any. */
function generationTokens(ctx: RequestContext): LogTokens | undefined {
  if (ctx.generations.length === 0) return undefined;
  let prompt = 0;
  let evalCount = 0;
  for (const g of ctx.generations) {
    prompt += g.promptEvalCount;
    evalCount += g.evalCount;
  }
  return { prompt, eval: evalCount };
}

/** The id goes on every answer: set before the handler (streams send their headers themselves)
 *  and again after it (a handler may return a Response of its own). */
function echoId(c: Context, id: string): void {
  try {
    if (!c.res.headers.has(REQUEST_ID_HEADER)) c.res.headers.set(REQUEST_ID_HEADER, id);
  } catch {
    // immutable headers (a proxied response): the id is still in the log
  }
}

export function requestLog(log: Logger, observer: Pick<DaemonObserver, "requestDone"> = NO_OBSERVER): MiddlewareHandler {
  return async (c, next) => {
    const t0 = performance.now();
    const { id, refused } = requestIdFor(c.req.header(REQUEST_ID_HEADER));
    const ctx: RequestContext = { id, generations: [] };
    c.header(REQUEST_ID_HEADER, id);
    await runInRequest(ctx, async () => {
      if (log.level <= -4) {
        log.debug("request started", {
          method: c.req.method,
          path: c.req.path,
          remote: remoteAddress(c),
          agent: c.req.header("user-agent"),
          length: c.req.header("content-length"),
        });
        if (refused !== undefined) {
          log.debug("X-Request-Id not used: it must be 1-128 of A-Z a-z 0-9 . _ ~ : / + = @ -; the request got a new id", { sent: refused });
        }
      }
      await next();
    });
    echoId(c, id);

    let written = false;
    const write = (extra: { canceled?: boolean; error?: string } = {}) => {
      if (written) return;
      written = true;
      const ms = performance.now() - t0;
      const route = routeName(c.req.path);
      const status = c.res.status;
      const tokens = c.get("logTokens") ?? generationTokens(ctx);
      const level = route === "/metrics" && status < 400 ? "debug" : "info";
      log[level]("request", {
        method: c.req.method,
        path: c.req.path,
        status,
        model: c.get("logModel") ?? ctx.model,
        duration: formatDurationMs(ms),
        prompt_tokens: tokens?.prompt,
        eval_tokens: tokens?.eval,
        ...extra,
        request_id: id,
      });
      debugTimings(log, ctx, ms);
      observer.requestDone({
        route,
        method: c.req.method,
        status,
        model: ctx.model,
        seconds: ms / 1000,
        canceled: extra.canceled === true,
        generations: ctx.generations,
      });
    };

    if (!STREAMED.test(c.res.headers.get("content-type") ?? "")) {
      write();
      return;
    }
    // Under @hono/node-server the Node response says when the answer has been sent (or the client
    // left): log then, at no cost per chunk. (Streams are written to it directly: stream.ts.)
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (outgoing) {
      if (outgoing.writableFinished) write();
      else outgoing.once("close", () => write(outgoing.writableFinished ? {} : { canceled: true }));
      return;
    }
    const body = c.res.body;
    if (body === null) {
      write();
      return;
    }
    // Elsewhere (app.request in tests), re-wrap the body so the line is written when the last
    // byte has been handed on. Pull-based
    // with no buffer of its own: the answer is still produced only as fast as the client reads,
    // and a client going away cancels the original stream exactly as before.
    const reader = body.getReader();
    const wrapped = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) {
              controller.close();
              write();
            } else controller.enqueue(value);
          } catch (err) {
            write({ error: err instanceof Error ? err.message : String(err) });
            controller.error(err);
          }
        },
        cancel(reason) {
          write({ canceled: true });
          return reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    c.res = new Response(wrapped, { status: c.res.status, statusText: c.res.statusText, headers: c.res.headers });
  };
}
