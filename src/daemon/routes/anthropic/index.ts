// POST /v1/messages (and /v1/messages/count_tokens, count-tokens.ts): Anthropic's Messages API
// (the Anthropic SDKs, Claude Code with ANTHROPIC_BASE_URL pointed here), as Ollama serves it: the request becomes a native /api/chat
// body (translate.ts), runs on the shared chat preparation and completion, and is answered as one
// `message` or as Anthropic's server-sent events (encode.ts), errors in Anthropic's shape.
import { Hono } from "hono";
import { z } from "zod";
import { parseBody } from "../../body.js";
import type { Deps } from "../../deps.js";
import { nowNs } from "../../services/completion.js";
import { requestSignal } from "../../services/request.js";
import { jsonResponse } from "../../stream.js";
import { flatten } from "../../../backends/batches.js";
import { startNativeChat } from "../openai/native.js";
import { namedSseResponse } from "../openai/sse.js";
import { messageEvents, messageId, messageResponse } from "./encode.js";
import { anthropicError, anthropicErrorHandler } from "./errors.js";
import { countTokens } from "./count-tokens.js";
import { translateMessagesRequest } from "./translate.js";

/** Clients such as Claude Code ask every model to think: a model that cannot is answered
 *  without thinking instead of refused (Ollama's relax_thinking for this API). */
const RELAX = { relaxThink: true };

export function anthropicRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/v1/messages", async (c) => {
    const startedAt = nowNs();
    const t = translateMessagesRequest(await parseBody(c, z.unknown()));
    const { started, ac } = await startNativeChat(deps, c, t.native, startedAt, RELAX);
    const meta = { id: messageId(), model: t.model, estimatedInputTokens: t.estimatedInputTokens };
    if (started.kind === "debug") return jsonResponse({ id: meta.id, type: "message", role: "assistant", model: t.model, content: [], _debug_info: started.debugInfo });
    if (!t.stream) return jsonResponse(await messageResponse(flatten(started.batches), meta));
    return namedSseResponse(
      c,
      messageEvents(started.batches, meta),
      () => {
        ac.abort();
        started.cancel();
      },
      (err) => ({ error: anthropicError(err).error }),
    );
  });
  app.post("/v1/messages/count_tokens", async (c) => {
    const startedAt = nowNs();
    const t = translateMessagesRequest(await parseBody(c, z.unknown()), true);
    const render = async (native: Record<string, unknown>) => (await startNativeChat(deps, c, native, startedAt, RELAX)).started;
    return c.json({ input_tokens: await countTokens(deps, t, render, requestSignal(c.req.raw).signal) });
  });
  app.onError(anthropicErrorHandler(deps.log));
  return app;
}
