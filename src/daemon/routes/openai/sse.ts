// Server-sent events as OpenAI streams them. Chat and legacy completions: `data: {json}\n\n` per
// chunk, `data: [DONE]\n\n` at the end. The Responses API (and Anthropic's Messages API) names
// every event instead (`event: <type>\ndata: {json}\n\n`) and ends with its own last event, no [DONE].
// Written like the NDJSON streams (stream.ts): generation runs only as fast as the client reads,
// and a client that goes away cancels the producer. An error after the first chunk becomes a
// final `data: {"error":{…}}` event (openai-node throws it as an APIError), without [DONE].
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

/** A named event: `type` is both the SSE event name and a field of the data, as OpenAI sends it. */
export interface NamedEvent {
  type: string;
}

/** Written as an SSE comment, which clients skip: it only keeps a slow start's connection busy. */
export const KEEP_ALIVE: NamedEvent = Object.freeze({ type: "keep-alive" });

const named = (value: object) => {
  const type = "type" in value && typeof value.type === "string" ? value.type : "message";
  return `event: ${type}\ndata: ${JSON.stringify(value)}\n\n`;
};

/** Named events; an error after the first is an `error` event whose data is `errorBody`'s
 *  (OpenAI's shape by default, Anthropic's for /v1/messages) with `type: "error"`. */
export function namedSseResponse(c: Context, events: Batches<NamedEvent>, onCancel: () => void, errorBody: (err: unknown) => object = openaiError): Promise<Response> {
  return streamResponse(c, events, onCancel, {
    contentType: "text/event-stream",
    headers: { "Cache-Control": "no-cache" },
    event: (value) => (value === KEEP_ALIVE ? ": keep-alive\n\n" : named(value)),
    error: (err) => named({ type: "error", ...errorBody(err) }),
  });
}
