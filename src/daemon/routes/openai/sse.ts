// Server-sent events as OpenAI streams them: `data: {json}\n\n` per chunk, `data: [DONE]\n\n` at
// the end. Pull-based like the NDJSON encoder: generation runs only as fast as the client reads,
// and a client that goes away cancels the producer. An error after the first chunk becomes a
// final `data: {"error":{…}}` event (openai-node throws it as an APIError), without [DONE].
import { ApiError, errorMessage } from "../../errors.js";
import { openaiError } from "./errors.js";

const encoder = new TextEncoder();
const event = (value: unknown) => encoder.encode(`data: ${JSON.stringify(value)}\n\n`);

export function sseResponse(chunks: AsyncIterable<object>, onCancel: () => void): Response {
  const it = chunks[Symbol.asyncIterator]();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await it.next();
        if (!done) {
          controller.enqueue(event(value));
          return;
        }
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      } catch (err) {
        controller.enqueue(event(openaiError(err instanceof ApiError ? err.status : 500, errorMessage(err))));
        controller.close();
      }
    },
    async cancel() {
      onCancel();
      await it.return?.();
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Transfer-Encoding": "chunked" } });
}
