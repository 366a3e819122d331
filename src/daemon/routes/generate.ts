// POST /api/generate (reference §1.5).
import { Hono } from "hono";
import type { GenerateResponse } from "../../api/types.js";
import { parseBody } from "../body.js";
import { finalMetrics, nowNs, startCompletion, type Completion } from "../completion.js";
import type { Deps } from "../deps.js";
import { badRequest } from "../errors.js";
import { resolveOptions } from "../options.js";
import { renderPrompt, renderSuffix, type RenderMessage } from "../prompt/render.js";
import { generateSchema, type GenerateBody } from "../schemas.js";
import { jsonResponse, ndjsonResponse } from "../stream.js";
import { checkThink, createdAt, keepAliveOf, requestSignal, resolveSpec, templateFor } from "./common.js";

async function* chunks(model: string, c: Completion, startedAt: bigint, withContext: boolean): AsyncIterable<GenerateResponse> {
  for await (const ev of c.events) {
    if (ev.type === "text") {
      yield { model, created_at: createdAt(), response: ev.text, done: false };
      continue;
    }
    const last: GenerateResponse = {
      model,
      created_at: createdAt(),
      response: "",
      done: true,
      done_reason: ev.doneReason,
      ...(withContext ? { context: ev.context ?? [] } : {}),
      ...finalMetrics(startedAt, c.loadDurationNs, ev),
    };
    yield last;
  }
}

async function collect(gen: AsyncIterable<GenerateResponse>): Promise<GenerateResponse> {
  let text = "";
  let final: GenerateResponse | undefined;
  for await (const ch of gen) {
    text += ch.response;
    if (ch.done) final = ch;
  }
  if (!final) throw new Error("generation ended without a final response");
  return { ...final, response: text };
}

export function generateRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/api/generate", async (c) => {
    const startedAt = nowNs();
    const body: GenerateBody = await parseBody(c, generateSchema);
    const spec = await resolveSpec(deps, body.model);
    if (body.raw && (body.template || body.system || (body.context && body.context.length > 0))) {
      throw badRequest("raw mode does not support template, system, or context");
    }
    const keepAliveMs = keepAliveOf(body.keep_alive);
    if (body.prompt === "" && keepAliveMs === 0) {
      await deps.scheduler.expire(spec);
      return jsonResponse({ model: body.model, created_at: createdAt(), response: "", done: true, done_reason: "unload" });
    }
    if (!spec.capabilities.includes("completion")) throw badRequest(`"${body.model}" does not support generate`);
    checkThink(spec, body.model, body.think);
    const options = resolveOptions({ numCtx: deps.config.contextLength || 4096 }, spec.params, body.options);
    const ac = requestSignal(c.req.raw);

    if (body.prompt === "" && !body.suffix) {
      const lease = await deps.scheduler.acquire({ spec, runner: options.runner, keepAliveMs, signal: ac.signal });
      lease.release();
      return jsonResponse({ model: body.model, created_at: createdAt(), response: "", done: true, done_reason: "load" });
    }

    const template = templateFor(spec, body.template);
    let prompt: Parameters<typeof startCompletion>[1]["prompt"];
    if (body.raw) prompt = { text: body.prompt };
    else if (body.suffix) prompt = { text: renderSuffix(template, body.prompt, body.suffix) };
    else {
      const messages: RenderMessage[] = [];
      const system = body.system ?? spec.system;
      if (system) messages.push({ role: "system", content: system });
      if (!body.context?.length) messages.push(...spec.messages);
      messages.push({ role: "user", content: body.prompt, ...(body.images ? { images: body.images } : {}) });
      prompt = { template, input: { messages } };
    }

    if (body._debug_render_only) {
      const rendered = "text" in prompt ? prompt.text : renderPrompt(prompt.template, prompt.input);
      return jsonResponse({ model: body.model, created_at: createdAt(), response: "", done: false, _debug_info: { rendered_template: rendered } });
    }

    const completion = await startCompletion(deps.scheduler, {
      spec,
      options,
      keepAliveMs,
      signal: ac.signal,
      startedAt,
      prompt,
      prefixTokens: body.context ?? undefined,
      wantContext: !body.raw,
    });
    const gen = chunks(body.model, completion, startedAt, !body.raw);
    if (body.stream === false) return jsonResponse(await collect(gen));
    return ndjsonResponse(gen, () => {
      ac.abort();
      completion.cancel();
    });
  });
  return app;
}
