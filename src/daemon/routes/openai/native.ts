// From a native /api/chat or /api/generate body (what Ollama's /v1 middleware builds) to a
// running Completion — the same startCompletion, with the same checks and request fields, as the
// /api routes, so /v1 has no generation path of its own.
//
// PROVISIONAL: startChat / startGenerate repeat the preparation steps of routes/chat.ts and
// routes/generate.ts line for line (validation order, capability checks, think, format, tools,
// system prompt, template). When those routes export their preparation, e.g.
//   prepareChat(deps, body, signal, startedAt): Promise<{ completion: Completion } | { reply: object }>
// both bodies here become one call each and this copy goes away.
import { startCompletion, type Completion, type CompletionRequest } from "../../completion.js";
import type { Deps } from "../../deps.js";
import { badRequest } from "../../errors.js";
import { resolveOptions } from "../../options.js";
import { parseFormat } from "../../prompt/format.js";
import { renderSuffix, type RenderMessage } from "../../prompt/render.js";
import { stripHistoryThinking } from "../../prompt/thinking.js";
import { ToolValidationError, validateTools } from "../../prompt/tools.js";
import { chatSchema, generateSchema, type ChatBody, type GenerateBody } from "../../schemas.js";
import {
  checkTopLogprobs,
  fullModelName,
  keepAliveOf,
  rejectImages,
  rejectLogprobs,
  resolveSpec,
  resolveThink,
  templateFor,
  validateThink,
} from "../common.js";

/** Validates the native body with the /api schema itself, so both APIs accept the same things. */
export function nativeChatBody(raw: Record<string, unknown>): ChatBody {
  const r = chatSchema.safeParse(raw);
  if (!r.success) throw badRequest(r.error.issues.map((i) => i.message).join("; "));
  return r.data;
}

export function nativeGenerateBody(raw: Record<string, unknown>): GenerateBody {
  const r = generateSchema.safeParse(raw);
  if (!r.success) throw badRequest(r.error.issues.map((i) => i.message).join("; "));
  return r.data;
}

/** As routes/chat.ts: tool results by tool_name, by tool_call_id (name looked up), or neither. */
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

/** /api/chat's preparation for a non-empty conversation (/v1 refuses empty messages up front). */
export async function startChat(deps: Deps, body: ChatBody, signal: AbortSignal, startedAt: bigint): Promise<Completion> {
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
  if (!spec.capabilities.includes("completion")) throw badRequest(`"${body.model}" does not support chat`);
  if (tools.length > 0 && !spec.capabilities.includes("tools")) throw badRequest(`${fullModelName(spec)} does not support tools`);
  const think = resolveThink(spec, body.model, body.think);
  rejectLogprobs(body.logprobs, body.top_logprobs);
  rejectImages(body.messages.map((m) => m.images));
  const format = parseFormat(body.format);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);

  let messages: RenderMessage[] = [...spec.messages, ...toRender(body.messages)];
  if (body.messages[0]?.role !== "system" && spec.system) messages.unshift({ role: "system", content: spec.system });
  if (spec.config.model_family === "qwen3" || spec.name.model === "deepseek-r1") messages = stripHistoryThinking(messages);

  const template = templateFor(spec);
  const input = { messages, tools: tools.length > 0 ? tools : undefined, think: think.enabled, thinkLevel: think.level, isThinkSet: think.isSet };
  return startCompletion(deps.scheduler, {
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
    formatAfterThinking: true,
  });
}

/** /api/generate's preparation for a non-empty prompt (templated, never raw, no context). */
export async function startGenerate(deps: Deps, body: GenerateBody, signal: AbortSignal, startedAt: bigint): Promise<Completion> {
  checkTopLogprobs(body.top_logprobs);
  validateThink(body.think);
  const spec = await resolveSpec(deps, body.model);
  const keepAliveMs = keepAliveOf(body.keep_alive);
  if (!spec.capabilities.includes("completion")) throw badRequest(`"${body.model}" does not support generate`);
  if (body.suffix && !spec.capabilities.includes("insert")) throw badRequest(`${fullModelName(spec)} does not support insert`);
  const think = resolveThink(spec, body.model, body.think);
  rejectLogprobs(body.logprobs, body.top_logprobs);
  const format = parseFormat(body.format);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);

  const template = templateFor(spec, body.template);
  let prompt: CompletionRequest["prompt"];
  if (body.suffix) prompt = { text: renderSuffix(template, body.prompt, body.suffix) };
  else {
    const messages: RenderMessage[] = [];
    const system = body.system ?? spec.system;
    if (system) messages.push({ role: "system", content: system });
    messages.push(...spec.messages);
    messages.push({ role: "user", content: body.prompt });
    prompt = { template, input: { messages, think: think.enabled, thinkLevel: think.level, isThinkSet: think.isSet } };
  }
  return startCompletion(deps.scheduler, {
    spec,
    options,
    keepAliveMs,
    signal,
    startedAt,
    prompt,
    wantContext: false,
    template: templateFor(spec),
    format,
    think: think.enabled,
    truncate: body.truncate ?? true,
    shift: body.shift ?? true,
    heartbeat: body.stream !== false,
  });
}
