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

/**
 * A stream's lines that come faster than one per this many ms are written together. A write to
 * a socket costs the daemon ~100-200 µs on a small VM (the syscall, and waking the client), so a
 * stream at thousands of tokens a second (a small model on a fast engine) spent half a core on
 * writes alone; grouping what comes within 1 ms halves that, and no person or program notices a
 * token 1 ms late. A stream at reading speed never waits: its tokens are tens of ms apart.
 */
const COALESCE_MS = 1;

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
  // Lines that come within COALESCE_MS of the last write wait for the rest of that interval and
  // go out together (see COALESCE_MS); the first line, and any after a pause, go out at once.
  let pending = "";
  let lastWrite = -Infinity;
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pending === "" || gone) return;
    const text = pending;
    pending = "";
    res.write(text);
    // The interval starts once the write is done: lines that came while it ran wait for the next.
    lastWrite = performance.now();
  };
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await it.next();
        if (gone) return;
        if (done) {
          pending += format.end ?? ""; // with what is still waiting, in one write
          flush();
          break;
        }
        if (value.length === 0) continue;
        pending += encodeBatch(format, value);
        const since = performance.now() - lastWrite;
        if (since >= COALESCE_MS) flush();
        else timer ??= setTimeout(flush, COALESCE_MS - since);
        started();
        if (res.writableNeedDrain) await drained();
        if (gone) return;
      }
    } catch (err) {
      if (gone) return;
      pending += format.error(err);
      flush();
    }
    res.end();
  })().finally(() => {
    if (timer) clearTimeout(timer);
    started();
  });
  return first;
}

export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8" },
  });
}
