// POST /api/chat (reference §1.6).
import { Hono } from "hono";
import type { ChatResponse, ToolCall } from "../../api/types.js";
import type { Logprob } from "../../backends/backend.js";
import { completionHandler } from "./completion-route.js";
import { doneMetrics, startCompletion, type Completion } from "../completion.js";
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import { resolveOptions } from "../options.js";
import { parseFormat } from "../prompt/format.js";
import { renderPrompt, type RenderMessage } from "../prompt/render.js";
import { stripHistoryThinking } from "../prompt/thinking.js";
import { ToolValidationError, validateTools } from "../prompt/tools.js";
import { chatSchema, type ChatBody } from "../schemas.js";
import {
  checkTopLogprobs,
  createdAt,
  fullModelName,
  keepAliveOf,
  rejectImages,
  logprobsField,
  logprobsOf,
  resolveSpec,
  resolveThink,
  templateFor,
  validateThink,
} from "./common.js";

async function* chunks(model: string, c: Completion): AsyncIterable<ChatResponse> {
  for await (const ev of c.events) {
    const base = { model, created_at: createdAt() };
    switch (ev.type) {
      case "content":
        yield { ...base, message: { role: "assistant", content: ev.text }, done: false, ...logprobsField(ev.logprobs) };
        break;
      case "thinking":
        yield { ...base, message: { role: "assistant", content: "", thinking: ev.text }, done: false, ...logprobsField(ev.logprobs) };
        break;
      case "tool_calls":
        yield { ...base, message: { role: "assistant", content: "", tool_calls: ev.calls }, done: false };
        break;
      case "done":
        yield { ...base, message: { role: "assistant", content: "" }, done: true, done_reason: ev.doneReason, ...doneMetrics(ev) };
        break;
    }
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
  return {
    ...final,
    message: { role: "assistant", content: text, ...(thinking ? { thinking } : {}), ...(calls.length > 0 ? { tool_calls: calls } : {}) },
    ...logprobsField(logprobs),
  };
}

/**
 * The three shapes clients send tool results in: `tool_name` (ollama-js), `tool_call_id` (AI SDK;
 * the name is looked up from the assistant's earlier tool_calls), neither (LangChain).
 */
function toRender(messages: ChatBody["messages"]): RenderMessage[] {
  const names = new Map<string, string>();
  return messages.map((m) => {
    for (const tc of m.tool_calls ?? []) if (tc.id) names.set(tc.id, tc.function.name);
    const toolName = m.tool_name ?? (m.role === "tool" && m.tool_call_id ? names.get(m.tool_call_id) : undefined);
    return {
      role: m.role,
      content: m.content,
      ...(m.thinking ? { thinking: m.thinking } : {}),
      ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
      ...(toolName ? { tool_name: toolName } : {}),
      ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
    };
  });
}

/** What preparing a request leads to: a ready reply (load, unload, debug render) or a completion. */
export type Prepared = { kind: "reply"; body: object } | { kind: "completion"; completion: Completion };

/**
 * Everything /api/chat does before streaming, in Ollama's order: validation (top_logprobs, think,
 * tools), model lookup, unload/load-only replies, capability checks, think/format/options, the
 * conversation (model MESSAGEs and SYSTEM, tool results by id, qwen3/deepseek-r1 history
 * thinking stripped), debug render, and startCompletion. Shared with the /v1 routes.
 */
export async function prepareChat(deps: Deps, body: ChatBody, signal: AbortSignal, startedAt: bigint): Promise<Prepared> {
  checkTopLogprobs(body.top_logprobs);
  validateThink(body.think);
  let tools: Array<Record<string, unknown>>;
  try {
    tools = validateTools(body.tools);
  } catch (err) {
    if (err instanceof ToolValidationError) throw badRequest(err.message);
    throw err;
  }
  if (body.model === "") throw badRequest("model is required");
  const spec = await resolveSpec(deps, body.model);
  const keepAliveMs = keepAliveOf(body.keep_alive);
  const unloadReply = { model: body.model, created_at: createdAt(), message: { role: "assistant", content: "" }, done: true };
  if (body.messages.length === 0 && keepAliveMs === 0) {
    await deps.scheduler.expire(spec);
    return { kind: "reply", body: { ...unloadReply, done_reason: "unload" } };
  }
  if (!spec.capabilities.includes("completion")) throw badRequest(`"${body.model}" does not support chat`);
  if (tools.length > 0 && !spec.capabilities.includes("tools")) throw badRequest(`${fullModelName(spec)} does not support tools`);
  const think = resolveThink(spec, body.model, body.think);
  rejectImages(body.messages.map((m) => m.images));
  const format = parseFormat(body.format);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);

  if (body.messages.length === 0) {
    const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal });
    lease.release();
    return { kind: "reply", body: { ...unloadReply, done_reason: "load" } };
  }

  let messages: RenderMessage[] = [...spec.messages, ...toRender(body.messages)];
  if (body.messages[0]?.role !== "system" && spec.system) messages.unshift({ role: "system", content: spec.system });
  if (spec.config.model_family === "qwen3" || spec.name.model === "deepseek-r1") messages = stripHistoryThinking(messages);

  const template = templateFor(spec);
  const input = {
    messages,
    tools: tools.length > 0 ? tools : undefined,
    think: think.enabled,
    thinkLevel: think.level,
    isThinkSet: think.isSet,
  };
  if (body._debug_render_only) {
    const rendered = renderPrompt(template, input);
    return {
      kind: "reply",
      body: { model: body.model, created_at: createdAt(), message: { role: "", content: "" }, done: false, _debug_info: { rendered_template: rendered } },
    };
  }

  const completion = await startCompletion(deps.scheduler, {
    spec,
    options,
    keepAliveMs,
    signal,
    startedAt,
    prompt: { template, input },
    wantContext: false,
    format,
    tools: tools.length > 0 ? tools : undefined,
    think: think.enabled,
    truncate: body.truncate ?? true,
    shift: body.shift ?? true,
    heartbeat: body.stream !== false,
    logprobs: logprobsOf(body),
    formatAfterThinking: true,
  });
  return { kind: "completion", completion };
}

export function chatRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post(
    "/api/chat",
    completionHandler(deps, { schema: chatSchema, prepare: prepareChat, chunks: (body, completion) => chunks(body.model, completion), collect }),
  );
  return app;
}
