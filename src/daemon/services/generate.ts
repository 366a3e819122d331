// /api/generate as a service (reference §1.5), shared with /v1/completions: everything before
// the first token, in Ollama's order. Routes parse the body, call prepareGenerate and encode.
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import { resolveOptions } from "../options.js";
import { parseFormat } from "../prompt/format.js";
import { answerWrapper } from "../prompt/answer-wrapper.js";
import { harmonyLevel, HarmonyNames, usesHarmony } from "../prompt/harmony.js";
import { renderSuffix, type RenderMessage } from "../prompt/render.js";
import { renderOffThread } from "../prompt/render-off-thread.js";
import type { GenerateBody } from "../schemas.js";
import { renderWithRunner, startCompletion, type CompletionRequest, type Prepared } from "./completion.js";
import {
  checkTokenIds,
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
 * Everything /api/generate does before streaming, in Ollama's order (see prepareChat).
 * Shared with the /v1 routes.
 */
export async function prepareGenerate(deps: Deps, body: GenerateBody, signal: AbortSignal, startedAt: bigint): Promise<Prepared> {
  checkTopLogprobs(body.top_logprobs);
  validateThink(body.think);
  const spec = await resolveSpec(deps, body.model);
  const keepAliveMs = keepAliveOf(body.keep_alive);
  if (body.prompt === "" && keepAliveMs === 0) {
    await deps.scheduler.expire(spec);
    return { kind: "reply", body: { model: body.model, created_at: createdAt(), response: "", done: true, done_reason: "unload" } };
  }
  if (body.raw && (body.template || body.system || (body.context && body.context.length > 0))) {
    throw badRequest("raw mode does not support template, system, or context");
  }
  if (!spec.capabilities.includes("completion")) throw badRequest(`"${body.model}" does not support generate`);
  if (body.context) checkTokenIds(spec, body.context, "context");
  if (body.suffix && !spec.capabilities.includes("insert")) throw badRequest(`${fullModelName(spec)} does not support insert`);
  const think = resolveThink(spec, body.model, body.think);
  const features = featuresOf(deps, spec);
  rejectLogprobs(features, body.logprobs);
  rejectImages(features, [body.images]);
  const format = await compileFormat(deps, spec, parseFormat(body.format));
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);

  if (body.prompt === "" && !body.suffix) {
    const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal });
    lease.release();
    return { kind: "reply", body: { model: body.model, created_at: createdAt(), response: "", done: true, done_reason: "load" } };
  }

  const toEngine = features.messages && !body.raw && !body.template && !body.suffix;
  const template = toEngine ? undefined : templateFor(spec, body.template);
  // gpt-oss: the answer is read as harmony messages (the model's own template decides, as in Ollama).
  const harmony = !body.raw && !toEngine && usesHarmony(spec.config, templateFor(spec)) ? { names: new HarmonyNames() } : undefined;
  const thinkInput = { think: think.enabled, thinkLevel: harmony ? harmonyLevel(think.level) : think.level, isThinkSet: think.isSet };
  let prompt: CompletionRequest["prompt"];
  if (body.raw) prompt = { text: body.prompt };
  else if (toEngine || !template) {
    // The engine templates the prompt itself: a system message and the prompt as a user turn.
    const system = body.system ?? spec.system;
    const messages: RenderMessage[] = [...(system ? [{ role: "system", content: system }] : []), ...spec.messages, { role: "user", content: body.prompt }];
    const completion = { prompt: body.prompt, ...(system ? { system } : {}), ...(body.context?.length ? { context: body.context } : {}) };
    prompt = { messages, completion, ...(typeof body.think === "boolean" || typeof body.think === "string" ? { think: body.think } : {}) };
  }
  else if (body.suffix) prompt = { text: renderSuffix(template, body.prompt, body.suffix) };
  else {
    const messages: RenderMessage[] = [];
    const system = body.system ?? spec.system;
    if (system) messages.push({ role: "system", content: system });
    if (!body.context?.length) messages.push(...spec.messages);
    messages.push({ role: "user", content: body.prompt });
    prompt = { template, input: { messages, ...thinkInput } };
  }

  if (body._debug_render_only) {
    const rendered =
      "text" in prompt ? prompt.text : "template" in prompt ? await renderOffThread(prompt.template, prompt.input) : await renderWithRunner(deps.scheduler, { spec, options, keepAliveMs, signal }, prompt);
    return { kind: "reply", body: { model: body.model, created_at: createdAt(), response: "", done: false, _debug_info: { rendered_template: rendered } } };
  }

  const completion = await startCompletion(deps.scheduler, {
    spec,
    options,
    keepAliveMs,
    signal,
    startedAt,
    prompt,
    prefixTokens: body.context ?? undefined,
    wantContext: !body.raw,
    ...(toEngine ? {} : { template: templateFor(spec) }),
    format,
    think: think.enabled,
    truncate: body.truncate ?? true,
    shift: body.shift ?? true,
    heartbeat: body.stream !== false,
    logprobs: logprobsOf(body),
    ...(harmony ? { harmony } : {}),
    ...(template && "template" in prompt && !harmony ? { wrapper: answerWrapper(template, spec.config.parser) } : {}),
  });
  return { kind: "completion", completion };
}

