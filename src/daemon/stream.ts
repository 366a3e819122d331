// Streamed answers: one encoded event per model event (an NDJSON line for /api, an SSE event for
// /v1), produced only as fast as the client reads (back-pressure). A client that goes away
// cancels the producer; an error after the first event becomes a final error event, as Ollama
// does once the 200 status has been sent.
//
// Events come in batches (batches.ts: all that was ready at once, such as the tokens of one
// upstream read), and each batch's lines go out in one write, never waiting for more.
//
// Under @hono/node-server the events are written straight to the Node response: headers go out
// with the first batch in one write, and each batch is one write, without a web stream and
// hono's reader loop between the generator and the socket. (Given a streamed Response, that
// server first tries to read it whole for a Content-Length and waits a timer tick, ~1 ms,
// before the first event; then it wrote the headers apart and took a few promise hops per
// token.) Elsewhere (app.request in tests) a web stream carries the same bytes.
import type { ServerResponse } from "node:http";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";
import type { Batches } from "../backends/batches.js";
import { errorMessage } from "./errors.js";

/** How a stream's events are written. */
export interface StreamFormat {
  contentType: string;
  headers?: Record<string, string>;
  event(value: object): string;
  /** Written after the last event (SSE's [DONE]); not after an error. */
  end?: string;
  error(err: unknown): string;
}

const NDJSON: StreamFormat = {
  contentType: "application/x-ndjson",
  event: (value) => JSON.stringify(value) + "\n",
  error: (err) => JSON.stringify({ error: errorMessage(err) }) + "\n",
};

const encoder = new TextEncoder();

export function ndjsonResponse(c: Context, batches: Batches<object>, onCancel: () => void): Promise<Response> {
  return streamResponse(c, batches, onCancel, NDJSON);
}

/** A batch's events as one string (one write). */
function encodeBatch(format: StreamFormat, batch: readonly object[]): string {
  let s = "";
  for (const v of batch) s += format.event(v);
  return s;
}

export async function streamResponse(c: Context, batches: Batches<object>, onCancel: () => void, format: StreamFormat): Promise<Response> {
  const it = batches[Symbol.asyncIterator]();
  const headers: Record<string, string> = { "Content-Type": format.contentType, ...format.headers };
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing && !outgoing.headersSent) {
    // No length: Node frames the body itself (chunked for HTTP/1.1, to the close for HTTP/1.0).
    // Headers set so far by middleware (CORS) go out too.
    c.res.headers.forEach((value, key) => {
      if (!(key in headers)) headers[key] = value;
    });
    // The first batch is written before the handler returns, so hono's and the middleware's
    // work on the way out does not come between the first token and the client.
    await writeToNode(outgoing, headers, it, onCancel, format);
    // hono and the request log see a streamed 200 (the sentinel tells @hono/node-server that the
    // answer is already under way).
    const sent = new Response(null, { headers: RESPONSE_ALREADY_SENT.headers });
    sent.headers.set("Content-Type", format.contentType);
    return sent;
  }
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await it.next();
        if (!done) {
          controller.enqueue(encoder.encode(encodeBatch(format, value)));
          return;
        }
        if (format.end) controller.enqueue(encoder.encode(format.end));
        controller.close();
      } catch (err) {
        controller.enqueue(encoder.encode(format.error(err)));
        controller.close();
      }
    },
    async cancel() {
      onCancel();
      await it.return?.();
    },
  });
  return new Response(body, { headers });
}

/** Resolves once the first batch is written (or the stream ended before one); writing goes on. */
function writeToNode(res: ServerResponse, headers: Record<string, string>, it: AsyncIterator<readonly object[]>, onCancel: () => void, format: StreamFormat): Promise<void> {
  res.writeHead(200, headers);
  let gone = false;
  res.once("close", () => {
    if (res.writableFinished) return;
    gone = true;
    onCancel();
    void Promise.resolve(it.return?.()).catch(() => undefined);
  });
  const drained = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      res.on("drain", done);
      res.on("close", done);
    });
  let started!: () => void;
  const first = new Promise<void>((resolve) => (started = resolve));
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await it.next();
        if (gone) return;
        if (done) {
          if (format.end) res.write(format.end);
          break;
        }
        if (value.length === 0) continue;
        const flowing = res.write(encodeBatch(format, value));
        started();
        if (!flowing) await drained();
        if (gone) return;
      }
    } catch (err) {
      if (gone) return;
      res.write(format.error(err));
    }
    res.end();
  })().finally(() => started());
  return first;
}

export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8" },
  });
}
