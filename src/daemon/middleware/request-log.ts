// One INFO line per request: method, path, status, model, duration and token counts. Never the
// body: prompts stay out of the log unless OLLAMA_DEBUG is set (and then only where a route logs
// them at debug level). For a streamed answer (NDJSON or SSE) the line is written when the stream
// ends, so the duration covers the whole answer and the token counts are known; a stream the
// client abandoned is marked `canceled=true`.
//
// The inference routes report what only they know through hono context variables:
//   c.set("logModel", name)                          as soon as the model name is known
//   c.set("logTokens", { prompt: n, eval: m })       when the final counts are known
// (`logCounts(c, chunks)` does the second for a stream of Ollama responses).
import type { ServerResponse } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { formatDurationMs, type Logger } from "../log.js";

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
 * Passes a stream of Ollama responses through unchanged and records the counts of the final
 * (`done`) one as `logTokens`: `const gen = logCounts(c, chunks(...))`.
 */
export async function* logCounts<T extends { done?: boolean; prompt_eval_count?: number; eval_count?: number }>(
  c: Context,
  gen: AsyncIterable<T>,
): AsyncIterable<T> {
  for await (const chunk of gen) {
    if (chunk.done) {
      c.set("logTokens", {
        ...(chunk.prompt_eval_count !== undefined ? { prompt: chunk.prompt_eval_count } : {}),
        ...(chunk.eval_count !== undefined ? { eval: chunk.eval_count } : {}),
      });
    }
    yield chunk;
  }
}

function remoteAddress(c: Context): string | undefined {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress;
}

export function requestLog(log: Logger): MiddlewareHandler {
  return async (c, next) => {
    const t0 = performance.now();
    if (log.level <= -4) {
      log.debug("request started", {
        method: c.req.method,
        path: c.req.path,
        remote: remoteAddress(c),
        agent: c.req.header("user-agent"),
        length: c.req.header("content-length"),
      });
    }
    await next();

    let written = false;
    const write = (extra: Record<string, unknown> = {}) => {
      if (written) return;
      written = true;
      const tokens = c.get("logTokens");
      log.info("request", {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        model: c.get("logModel"),
        duration: formatDurationMs(performance.now() - t0),
        prompt_tokens: tokens?.prompt,
        eval_tokens: tokens?.eval,
        ...extra,
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
