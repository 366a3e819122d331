// POST /api/chat (reference §1.6).
import { Hono } from "hono";
import type { ChatResponse } from "../../api/types.js";
import { parseBody } from "../body.js";
import { finalMetrics, nowNs, startCompletion, type Completion } from "../completion.js";
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import { resolveOptions } from "../options.js";
import { renderPrompt, type RenderMessage } from "../prompt/render.js";
import { chatSchema, type ChatBody } from "../schemas.js";
import { jsonResponse, ndjsonResponse } from "../stream.js";
import { checkThink, createdAt, keepAliveOf, requestSignal, resolveSpec, templateFor } from "./common.js";

async function* chunks(model: string, c: Completion, startedAt: bigint): AsyncIterable<ChatResponse> {
  for await (const ev of c.events) {
    if (ev.type === "text") {
      yield { model, created_at: createdAt(), message: { role: "assistant", content: ev.text }, done: false };
      continue;
    }
    yield {
      model,
      created_at: createdAt(),
      message: { role: "assistant", content: "" },
      done: true,
      done_reason: ev.doneReason,
      ...finalMetrics(startedAt, c.loadDurationNs, ev),
    };
  }
}

async function collect(gen: AsyncIterable<ChatResponse>): Promise<ChatResponse> {
  let text = "";
  let final: ChatResponse | undefined;
  for await (const ch of gen) {
    text += ch.message.content;
    if (ch.done) final = ch;
  }
  if (!final) throw new Error("generation ended without a final response");
  return { ...final, message: { role: "assistant", content: text } };
}

function toRender(m: ChatBody["messages"][number]): RenderMessage {
  return {
    role: m.role,
    content: m.content,
    ...(m.thinking ? { thinking: m.thinking } : {}),
    ...(m.images ? { images: m.images } : {}),
    ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
    ...(m.tool_name ? { tool_name: m.tool_name } : {}),
    ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
  };
}

export function chatRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/api/chat", async (c) => {
    const startedAt = nowNs();
    const body: ChatBody = await parseBody(c, chatSchema);
    if (body.model === "") throw badRequest("model is required");
    const spec = await resolveSpec(deps, body.model);
    const keepAliveMs = keepAliveOf(body.keep_alive);
    const unloadReply = { model: body.model, created_at: createdAt(), message: { role: "assistant", content: "" }, done: true };
    if (body.messages.length === 0 && keepAliveMs === 0) {
      await deps.scheduler.expire(spec);
      return jsonResponse({ ...unloadReply, done_reason: "unload" });
    }
    if (!spec.capabilities.includes("completion")) throw badRequest(`"${body.model}" does not support chat`);
    if (body.tools && body.tools.length > 0 && !spec.capabilities.includes("tools")) {
      throw badRequest(`${spec.manifest.name.host}/${spec.manifest.name.namespace}/${spec.shortName} does not support tools`);
    }
    checkThink(spec, body.model, body.think);
    const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);
    const ac = requestSignal(c.req.raw);

    if (body.messages.length === 0) {
      const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal: ac.signal });
      lease.release();
      return jsonResponse({ ...unloadReply, done_reason: "load" });
    }

    const messages: RenderMessage[] = [...spec.messages, ...body.messages.map(toRender)];
    if (body.messages[0]?.role !== "system" && spec.system) messages.unshift({ role: "system", content: spec.system });

    const template = templateFor(spec);
    const input = { messages, tools: body.tools ?? undefined };
    if (body._debug_render_only) {
      const rendered = renderPrompt(template, input);
      return jsonResponse({ model: body.model, created_at: createdAt(), message: { role: "", content: "" }, done: false, _debug_info: { rendered_template: rendered } });
    }

    const completion = await startCompletion(deps.scheduler, {
      spec,
      options,
      keepAliveMs,
      signal: ac.signal,
      startedAt,
      prompt: { template, input },
      wantContext: false,
    });
    const gen = chunks(body.model, completion, startedAt);
    if (body.stream === false) return jsonResponse(await collect(gen));
    return ndjsonResponse(gen, () => {
      ac.abort();
      completion.cancel();
    });
  });
  return app;
}
