// POST /api/generate (reference §1.5).
import { Hono } from "hono";
import type { GenerateResponse } from "../../api/types.js";
import { completionHandler } from "./completion-route.js";
import { doneMetrics, startCompletion, type Completion, type CompletionRequest } from "../completion.js";
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import type { Prepared } from "./chat.js";
import { resolveOptions } from "../options.js";
import { parseFormat } from "../prompt/format.js";
import { renderPrompt, renderSuffix, type RenderMessage } from "../prompt/render.js";
import { generateSchema, type GenerateBody } from "../schemas.js";
import {
  checkTokenIds,
  checkTopLogprobs,
  createdAt,
  fullModelName,
  keepAliveOf,
  rejectImages,
  rejectLogprobs,
  resolveSpec,
  resolveThink,
  templateFor,
  validateThink,
} from "./common.js";

async function* chunks(model: string, c: Completion, withContext: boolean): AsyncIterable<GenerateResponse> {
  for await (const ev of c.events) {
    switch (ev.type) {
      case "content":
        yield { model, created_at: createdAt(), response: ev.text, done: false };
        break;
      case "thinking":
        yield { model, created_at: createdAt(), response: "", thinking: ev.text, done: false };
        break;
      case "tool_calls":
        break; // /api/generate has no tools
      case "done":
        yield {
          model,
          created_at: createdAt(),
          response: "",
          done: true,
          done_reason: ev.doneReason,
          ...(withContext ? { context: ev.context ?? [] } : {}),
          ...doneMetrics(ev),
        };
        break;
    }
  }
}

async function collect(gen: AsyncIterable<GenerateResponse>): Promise<GenerateResponse> {
  let text = "";
  let thinking = "";
  let final: GenerateResponse | undefined;
  for await (const ch of gen) {
    text += ch.response;
    thinking += ch.thinking ?? "";
    if (ch.done) final = ch;
  }
  if (!final) throw new Error("generation ended without a final response");
  const { thinking: _t, ...rest } = final;
  return { ...rest, response: text, ...(thinking ? { thinking } : {}) };
}

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
  rejectLogprobs(body.logprobs, body.top_logprobs);
  rejectImages([body.images]);
  const format = parseFormat(body.format);
  const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);

  if (body.prompt === "" && !body.suffix) {
    const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal });
    lease.release();
    return { kind: "reply", body: { model: body.model, created_at: createdAt(), response: "", done: true, done_reason: "load" } };
  }

  const template = templateFor(spec, body.template);
  const thinkInput = { think: think.enabled, thinkLevel: think.level, isThinkSet: think.isSet };
  let prompt: CompletionRequest["prompt"];
  if (body.raw) prompt = { text: body.prompt };
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
    const rendered = "text" in prompt ? prompt.text : renderPrompt(prompt.template, prompt.input);
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
    template: templateFor(spec),
    format,
    think: think.enabled,
    truncate: body.truncate ?? true,
    shift: body.shift ?? true,
    heartbeat: body.stream !== false,
  });
  return { kind: "completion", completion };
}

export function generateRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post(
    "/api/generate",
    completionHandler(deps, {
      schema: generateSchema,
      prepare: prepareGenerate,
      chunks: (body, completion) => chunks(body.model, completion, !body.raw),
      collect,
    }),
  );
  return app;
}
