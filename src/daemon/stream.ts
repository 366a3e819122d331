// Streamed answers: one encoded event per model event (an NDJSON line for /api, an SSE event for
// /v1), produced only as fast as the client reads (back-pressure). A client that goes away
// cancels the producer; an error after the first event becomes a final error event, as Ollama
// does once the 200 status has been sent.
//
// Events come in batches (batches.ts: all that was ready at once, such as the tokens of one
// upstream read); each line goes out in a write of its own, a millisecond apart at most (PACE_MS).
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
  /** The stream's final event (NDJSON's `done: true` line). */
  isFinal?(value: object): boolean;
  error(err: unknown): string;
}

const NDJSON: StreamFormat = {
  contentType: "application/x-ndjson",
  event: (value) => JSON.stringify(value) + "\n",
  error: (err) => JSON.stringify({ error: errorMessage(err) }) + "\n",
  isFinal: (value) => (value as { done?: unknown }).done === true,
};

const encoder = new TextEncoder();

/**
 * A stream's lines go out one write each, at most one per this many ms. Clients take every piece a
 * read gives for one JSON line (genkitx-ollama parses each as JSON), so two lines in one read
 * failed their streams: all of them on a fast small model, and one in five on a 1B one, where
 * the last token and the final line came together. Ollama writes and flushes line by line; a
 * line a millisecond is far above reading speed (tokens are tens of ms apart) and caps only a
 * toy model's stream, at ~1,000 lines a second.
 */
const PACE_MS = 1;
/** The final line waits longer after the one before: it follows the last token at once, and the
 *  two read together were the 1B model's failures. */
const FINAL_PACE_MS = 3;
/** Lines that may wait their turn before the producer is held back. */
const PACED_MAX = 64;

export function ndjsonResponse(c: Context, batches: Batches<object>, onCancel: () => void): Promise<Response> {
  return streamResponse(c, batches, onCancel, NDJSON);
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
          for (const v of value) controller.enqueue(encoder.encode(format.event(v)));
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
  // Each line is a write of its own, at most one per PACE_MS (see PACE_MS); the first line, and
  // any after a pause, go out at once.
  const pending: string[] = [];
  let last = false; // the final line is the last of `pending`
  let lastWrite = -Infinity;
  let timer: NodeJS.Timeout | null = null;
  let emptied: (() => void) | null = null;
  const pump = () => {
    timer = null;
    if (gone) {
      pending.length = 0;
    } else if (pending.length > 0) {
      const wait = (last && pending.length === 1 ? FINAL_PACE_MS : PACE_MS) - (performance.now() - lastWrite);
      if (wait > 0) {
        timer = setTimeout(pump, wait);
        return;
      }
      res.write(pending.shift()!);
      lastWrite = performance.now();
      if (pending.length > 0) {
        timer = setTimeout(pump, last && pending.length === 1 ? FINAL_PACE_MS : PACE_MS);
        return;
      }
    }
    emptied?.();
  };
  const send = (lines: string[]) => {
    pending.push(...lines);
    if (!timer) pump();
  };
  /** Resolves once fewer than `most` lines wait (the producer waits on a client that reads slowly). */
  const below = (most: number) =>
    pending.length < most || gone
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          emptied = () => {
            if (pending.length >= most && !gone) return;
            emptied = null;
            resolve();
          };
        });
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await it.next();
        if (gone) return;
        if (done) {
          if (format.end) {
            last = true;
            send([format.end]);
          }
          break;
        }
        if (value.length === 0) continue;
        if (format.isFinal && value.some((v) => format.isFinal!(v))) last = true;
        send(value.map((v) => format.event(v)));
        started();
        await below(PACED_MAX);
        if (res.writableNeedDrain) await drained();
        if (gone) return;
      }
    } catch (err) {
      if (gone) return;
      send([format.error(err)]);
    }
    await below(1);
    if (!gone) res.end();
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
