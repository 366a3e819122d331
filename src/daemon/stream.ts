// NDJSON encoder: one JSON object per line, pulled from the producer only as fast as the client
// reads (back-pressure). A client that goes away cancels the producer; an error after the first
// line becomes a final {"error": …} line, as Ollama does once the 200 status has been sent.
import { errorMessage } from "./errors.js";

const encoder = new TextEncoder();

/**
 * Transfer-Encoding is said outright: without it @hono/node-server first tries to read the whole
 * body to send a Content-Length, and on a stream that waits a timer tick (~1 ms measured) before
 * the headers and the first chunk go out — time to first token the client sees.
 */
const STREAM_HEADERS = { "Content-Type": "application/x-ndjson", "Transfer-Encoding": "chunked" };

export function ndjsonResponse(events: AsyncIterable<object>, onCancel: () => void): Response {
  const it = events[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await it.next();
        if (done) controller.close();
        else controller.enqueue(encoder.encode(JSON.stringify(value) + "\n"));
      } catch (err) {
        controller.enqueue(encoder.encode(JSON.stringify({ error: errorMessage(err) }) + "\n"));
        controller.close();
      }
    },
    async cancel() {
      onCancel();
      await it.return?.();
    },
  });
  return new Response(body, { headers: STREAM_HEADERS });
}

export function jsonResponse(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8" },
  });
}
