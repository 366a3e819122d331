// Server-sent events as OpenAI streams them: `data: {json}\n\n` per chunk, `data: [DONE]\n\n` at
// the end. Written like the NDJSON streams (stream.ts): generation runs only as fast as the
// client reads, and a client that goes away cancels the producer. An error after the first
// chunk becomes a final `data: {"error":{…}}` event (openai-node throws it as an APIError),
// without [DONE].
import type { Context } from "hono";
import type { Batches } from "../../../backends/batches.js";
import { streamResponse, type StreamFormat } from "../../stream.js";
import { openaiError } from "./errors.js";

const event = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;

const SSE: StreamFormat = {
  contentType: "text/event-stream",
  headers: { "Cache-Control": "no-cache" },
  event,
  end: "data: [DONE]\n\n",
  error: (err) => event(openaiError(err)),
};

export function sseResponse(c: Context, chunks: Batches<object>, onCancel: () => void): Promise<Response> {
  return streamResponse(c, chunks, onCancel, SSE);
}
