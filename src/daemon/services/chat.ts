// /api/chat as a service (reference §1.6), shared with /v1/chat/completions: validation,
// model lookup, capability and feature checks, think, format, tools, the conversation, and the
// completion. Routes parse the body, call prepareChat and encode what it returns.
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import { resolveOptions } from "../options.js";
import { parseFormat } from "../prompt/format.js";
import { parseToolChoice, toolCallFormat } from "../prompt/tool-choice.js";
import { type RenderMessage } from "../prompt/render.js";
import { renderOffThread } from "../prompt/render-off-thread.js";
import { answerWrapper } from "../prompt/answer-wrapper.js";
import { harmonyLevel, harmonyTools, HarmonyNames, usesHarmony } from "../prompt/harmony.js";
import { stripHistoryThinking } from "../prompt/thinking.js";
import { ToolValidationError, validateTools } from "../prompt/tools.js";
import type { ChatBody } from "../schemas.js";
import { renderWithRunner, startCompletion, type Prepared } from "./completion.js";
import {
  checkTopLogprobs,
  compileFormat,
  createdAt,
  featuresOf,
  fullModelName,
  keepAliveOf,
  logprobsOf,
  rejectImages,
  rejectLogprobs,
  resolveSpec,
  resolveThink,
  templateFor,
  validateThink,
} from "./request.js";

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

/**
 * Everything /api/chat does before streaming, in Ollama's order: validation (top_logprobs, think,
 * tools), model lookup, unload/load-only replies, capability checks, think/format/options, the
 * conversation (model MESSAGEs and SYSTEM, tool results by id, qwen3/deepseek-r1 history
 * thinking stripped), debug render, and startCompletion. Shared with the /v1 routes.
 * `relaxThink`: a request to think made to a model that cannot is answered without thinking
 * instead of refused (Ollama's relax_thinking, for Anthropic's API: Claude Code asks every
 * model to think).
 */
export async function prepareChat(deps: Deps, request: ChatBody, signal: AbortSignal, startedAt: bigint, opts: { relaxThink?: boolean } = {}): Promise<Prepared> {
  let body = request;
  checkTopLogprobs(body.top_logprobs);
  validateThink(body.think);
  let tools: Array<Record<string, unknown>>;
  try {
    tools = validateTools(body.tools);
  } catch (err) {
    if (err instanceof ToolValidationError) throw badRequest(err.message);
    throw err;
  }
  const toolChoice = parseToolChoice(body.tool_choice);
  if (toolChoice === "none") tools = [];
  if (body.model === "") throw badRequest("model is required");
  const spec = await resolveSpec(deps, body.model);
  if (opts.relaxThink && body.think != null && body.think !== false && !spec.capabilities.includes("thinking")) body = { ...body, think: undefined };
  const keepAliveMs = keepAliveOf(body.keep_alive);
  const unloadReply = { model: body.model, created_at: createdAt(), message: { role: "assistant", content: "" }, done: true };
  if (body.messages.length === 0 && keepAliveMs === 0) {
    await deps.scheduler.expire(spec);
    return { kind: "reply", body: { ...unloadReply, done_reason: "unload" } };
  }
  if (!spec.capabilities.includes("completion")) throw badRequest(`"${body.model}" does not support chat`);
  if (tools.length > 0 && !spec.capabilities.includes("tools")) throw badRequest(`${fullModelName(spec)} does not support tools`);
  const think = resolveThink(spec, body.model, body.think);
  const features = featuresOf(deps, spec);
  rejectLogprobs(features, body.logprobs);
  rejectImages(features, body.messages.map((m) => m.images));
  const format = await compileFormat(deps, spec, parseFormat(body.format));
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);

  if (body.messages.length === 0) {
    const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal });
    lease.release();
    return { kind: "reply", body: { ...unloadReply, done_reason: "load" } };
  }

  let messages: RenderMessage[] = [...spec.messages, ...toRender(body.messages)];
  if (body.messages[0]?.role !== "system" && spec.system) messages.unshift({ role: "system", content: spec.system });
  if (spec.config.model_family === "qwen3" || spec.name.model === "deepseek-r1") messages = stripHistoryThinking(messages);

  // Only a prompt runner's conversation is templated here (and the debug render).
  const template = features.messages ? undefined : templateFor(spec, undefined, tools.length > 0);
  // gpt-oss: the prompt names tools as identifiers, and its answer is read as harmony messages.
  const harmony = template && usesHarmony(spec.config, template) ? { names: new HarmonyNames(), last: messages.at(-1) } : undefined;
  const shownTools = harmony ? harmonyTools(tools, harmony.names) : tools;
  // A call the client must get (tool_choice), unless it asked for a format of its own; an engine
  // that templates the conversation itself is told the choice instead (`mustCall` below).
  const callFormat = !format && template ? await compileFormat(deps, spec, toolCallFormat(toolChoice, tools, template, harmony?.names, spec.config.parser), true) : undefined;
  const input = {
    messages,
    tools: shownTools.length > 0 ? shownTools : undefined,
    think: think.enabled,
    thinkLevel: harmony ? harmonyLevel(think.level) : think.level,
    isThinkSet: think.isSet,
  };
  // An engine that templates the conversation itself gets it as it is, think as the client sent it.
  const sentThink = typeof body.think === "boolean" || typeof body.think === "string" ? { think: body.think } : {};
  const mustCall = tools.length > 0 && toolChoice !== undefined && toolChoice !== "auto" && toolChoice !== "none" ? { toolChoice } : {};
  const conversation = { messages, ...(tools.length > 0 ? { tools } : {}), ...sentThink, ...mustCall };
  if (body._debug_render_only) {
    const rendered = template ? await renderOffThread(template, input) : await renderWithRunner(deps.scheduler, { spec, options, keepAliveMs, signal }, conversation);
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
    prompt: template ? { template, input } : conversation,
    wantContext: false,
    format: format ?? callFormat,
    tools: tools.length > 0 ? tools : undefined,
    think: think.enabled,
    truncate: body.truncate ?? true,
    shift: body.shift ?? true,
    heartbeat: body.stream !== false,
    logprobs: logprobsOf(body),
    // A harmony call is no final answer: its grammar applies from the first token.
    formatAfterThinking: !(harmony && callFormat),
    ...(harmony ? { harmony } : {}),
    ...(template && !harmony ? { wrapper: answerWrapper(template, spec.config.parser) } : {}),
  });
  return { kind: "completion", completion };
}

