// POST /v1/messages: Anthropic's Messages API (the Anthropic SDKs, Claude Code with
// ANTHROPIC_BASE_URL pointed here), as Ollama serves it: the request becomes a native /api/chat
// body (translate.ts), runs on the shared chat preparation and completion, and is answered as one
// `message` or as Anthropic's server-sent events (encode.ts), errors in Anthropic's shape.
import { Hono } from "hono";
import { z } from "zod";
import { parseBody } from "../../body.js";
import type { Deps } from "../../deps.js";
import { nowNs } from "../../services/completion.js";
import { requestSignal, resolveSpec } from "../../services/request.js";
import { jsonResponse, streamResponse, type StreamFormat } from "../../stream.js";
import { flatten } from "../../../backends/batches.js";
import { nativeChatBody, startChat } from "../openai/native.js";
import { messageEvents, messageId, messageResponse, type MessageEvent } from "./encode.js";
import { anthropicError, anthropicErrorHandler } from "./errors.js";
import { translateMessagesRequest } from "./translate.js";

const sse = (name: string, value: unknown) => `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`;

const SSE: StreamFormat = {
  contentType: "text/event-stream",
  headers: { "Cache-Control": "no-cache" },
  event: (value) => sse((value as MessageEvent).type, value),
  error: (err) => sse("error", { type: "error", error: anthropicError(err).error }),
};

export function anthropicRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/v1/messages", async (c) => {
    const startedAt = nowNs();
    const t = translateMessagesRequest(await parseBody(c, z.unknown()));
    // Clients such as Claude Code ask every model to think: a model that cannot is answered
    // without thinking instead of refused (Ollama's relax_thinking for this API).
    if (t.native.think !== undefined && t.native.think !== false && !(await resolveSpec(deps, t.model)).capabilities.includes("thinking")) delete t.native.think;
    const body = nativeChatBody(t.native);
    const ac = requestSignal(c.req.raw);
    const started = await startChat(deps, body, ac.signal, startedAt);
    const meta = { id: messageId(), model: t.model, estimatedInputTokens: t.estimatedInputTokens };
    if (started.kind === "debug") return jsonResponse({ id: meta.id, type: "message", role: "assistant", model: t.model, content: [], _debug_info: started.debugInfo });
    if (!t.stream) return jsonResponse(await messageResponse(flatten(started.batches), meta));
    return streamResponse(c, messageEvents(started.batches, meta), () => {
      ac.abort();
      started.cancel();
    }, SSE);
  });
  app.onError(anthropicErrorHandler(deps.log));
  return app;
}
