// POST /api/chat (reference §1.6): parse, prepareChat (services/chat.ts), encode NDJSON or one reply.
import { Hono } from "hono";
import type { ChatResponse, ToolCall } from "../../api/types.js";
import type { Logprob } from "../../backends/backend.js";
import { completionHandler } from "./completion-route.js";
import type { Deps } from "../deps.js";
import { prepareChat } from "../services/chat.js";
import { doneMetrics, type CompletionEvent } from "../services/completion.js";
import { createdAt, withLogprobs } from "../services/request.js";
import { chatSchema } from "../schemas.js";

/** One event's response object. */
function chunk(model: string, ev: CompletionEvent, out: ChatResponse[]): void {
  const created_at = createdAt();
  switch (ev.type) {
    case "content":
      out.push(withLogprobs<ChatResponse>({ model, created_at, message: { role: "assistant", content: ev.text }, done: false }, ev.logprobs));
      break;
    case "thinking":
      out.push(withLogprobs<ChatResponse>({ model, created_at, message: { role: "assistant", content: "", thinking: ev.text }, done: false }, ev.logprobs));
      break;
    case "tool_calls":
      out.push({ model, created_at, message: { role: "assistant", content: "", tool_calls: ev.calls }, done: false });
      break;
    case "done":
      out.push({ model, created_at, message: { role: "assistant", content: "" }, done: true, done_reason: ev.doneReason, ...doneMetrics(ev) });
      break;
  }
}

async function collect(gen: AsyncIterable<ChatResponse>): Promise<ChatResponse> {
  let text = "";
  let thinking = "";
  const calls: ToolCall[] = [];
  const logprobs: Logprob[] = [];
  let final: ChatResponse | undefined;
  for await (const ch of gen) {
    text += ch.message.content;
    thinking += ch.message.thinking ?? "";
    calls.push(...(ch.message.tool_calls ?? []));
    logprobs.push(...(ch.logprobs ?? []));
    if (ch.done) final = ch;
  }
  if (!final) throw new Error("generation ended without a final response");
  return withLogprobs<ChatResponse>(
    { ...final, message: { role: "assistant", content: text, ...(thinking ? { thinking } : {}), ...(calls.length > 0 ? { tool_calls: calls } : {}) } },
    logprobs,
  );
}

export function chatRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post(
    "/api/chat",
    completionHandler(deps, { schema: chatSchema, prepare: prepareChat, encoder: (body) => (ev, out) => chunk(body.model, ev, out), collect }),
  );
  return app;
}
