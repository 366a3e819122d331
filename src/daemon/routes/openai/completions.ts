// POST /v1/completions (reference §1.15): a native /api/generate body (templated, as in Ollama),
// the shared completion, encoded as text_completion objects or chunks.
import { Hono } from "hono";
import { z } from "zod";
import { parseBody } from "../../body.js";
import { nowNs } from "../../services/completion.js";
import type { Deps } from "../../deps.js";
import { badRequest } from "../../errors.js";
import { jsonResponse } from "../../stream.js";
import { requestSignal } from "../../services/request.js";
import { finishReason, newId, usageOf } from "./encode.js";
import type { Logprob } from "../../../backends/backend.js";
import { encodeBatches, flatten, type Batches } from "../../../backends/batches.js";
import type { CompletionEvent } from "./events.js";
import { completionLogprobs } from "./logprobs.js";
import { nativeGenerateBody, startGenerate } from "./native.js";
import { sseResponse } from "./sse.js";
import { aboveMaximum, belowMinimum, field, invalidType, modelOf, requestObject, stopList } from "./validate.js";

export interface CompletionTranslation {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  native: Record<string, unknown>;
}

/** `prompt`: a string, or an array holding exactly one string (several prompts are one choice each in OpenAI). */
function promptOf(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (Array.isArray(v)) {
    if (v.length === 1 && typeof v[0] === "string") return v[0];
    if (v.every((s) => typeof s === "string")) throw badRequest("only one prompt is supported per request");
  }
  throw invalidType("prompt", "a string", v);
}

export function translateCompletionRequest(body: unknown): CompletionTranslation {
  const o = requestObject(body);
  const model = modelOf(o);
  const prompt = promptOf(o.prompt);
  const suffix = field.string(o, "suffix");
  const options: Record<string, unknown> = {};
  options.temperature = field.number(o, "temperature") ?? 1.0;
  const topP = field.number(o, "top_p");
  options.top_p = topP === undefined || topP === 0 ? 1.0 : topP; // Ollama: 0 → 1.0
  options.frequency_penalty = field.number(o, "frequency_penalty") ?? 0;
  options.presence_penalty = field.number(o, "presence_penalty") ?? 0;
  const maxTokens = field.integer(o, "max_tokens");
  if (maxTokens !== undefined) options.num_predict = maxTokens;
  const seed = field.integer(o, "seed");
  if (seed !== undefined) options.seed = seed;
  const stop = stopList(o);
  if (stop) options.stop = stop;
  const n = field.integer(o, "n");
  if (n !== undefined && n < 1) throw belowMinimum("n", 1, n);
  if (n !== undefined && n > 1) throw badRequest("n > 1 is not supported: only one choice is generated");
  const bestOf = field.integer(o, "best_of");
  if (bestOf !== undefined && bestOf > 1) throw badRequest("best_of > 1 is not supported: only one choice is generated");
  if (field.boolean(o, "echo")) throw badRequest("echo is not supported");
  const logprobs = field.integer(o, "logprobs");
  if (logprobs !== undefined && logprobs > 5) throw aboveMaximum("logprobs", 5, logprobs);
  if (logprobs !== undefined && logprobs < 0) throw belowMinimum("logprobs", 0, logprobs);
  const stream = field.boolean(o, "stream") ?? false;
  const so = field.object(o, "stream_options");
  const includeUsage = (so && field.boolean(so, "include_usage", "stream_options.include_usage")) ?? false;
  const native: Record<string, unknown> = {
    model,
    prompt,
    ...(suffix ? { suffix } : {}),
    stream,
    options,
    ...(logprobs ? { logprobs: true, top_logprobs: logprobs } : {}),
    ...(o._debug_render_only === true ? { _debug_render_only: true } : {}),
  };
  return { model, stream, includeUsage, native };
}

interface Meta {
  id: string;
  created: number;
  model: string;
}

const choice = (text: string, finish: string | null, logprobs: object | null = null) => ({ text, index: 0, logprobs, finish_reason: finish });

export async function textCompletion(events: AsyncIterable<CompletionEvent>, meta: Meta): Promise<object> {
  let text = "";
  const logprobs: Logprob[] = [];
  for await (const ev of events) {
    if (ev.type === "content") {
      text += ev.text;
      logprobs.push(...(ev.logprobs ?? []));
    } else if (ev.type === "done") {
      return {
        id: meta.id,
        object: "text_completion",
        created: meta.created,
        model: meta.model,
        system_fingerprint: "fp_ollama",
        choices: [choice(text, finishReason(ev.doneReason, false), completionLogprobs(logprobs, 0))],
        usage: usageOf(ev),
      };
    }
  }
  throw new Error("generation ended without a final response");
}

export function textChunks(events: Batches<CompletionEvent>, meta: Meta, includeUsage: boolean): Batches<object> {
  const base = { id: meta.id, object: "text_completion", created: meta.created, model: meta.model, system_fingerprint: "fp_ollama" };
  const usageNull = includeUsage ? { usage: null } : {};
  let offset = 0;
  const step = (ev: CompletionEvent, out: object[]): boolean => {
    if (ev.type === "content") {
      out.push({ ...base, choices: [choice(ev.text, null, completionLogprobs(ev.logprobs, offset))], ...usageNull }); // "" is a heartbeat
      offset += (ev.logprobs ?? []).reduce((n, l) => n + l.token.length, 0);
    } else if (ev.type === "done") {
      out.push({ ...base, choices: [choice("", finishReason(ev.doneReason, false))], ...usageNull });
      if (includeUsage) out.push({ ...base, choices: [], usage: usageOf(ev) });
      return true;
    }
    return false;
  };
  return encodeBatches(events, step, true);
}

export function completionRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/v1/completions", async (c) => {
    const startedAt = nowNs();
    const t = translateCompletionRequest(await parseBody(c, z.unknown()));
    const body = nativeGenerateBody(t.native);
    const ac = requestSignal(c.req.raw);
    const started = await startGenerate(deps, body, ac.signal, startedAt);
    const meta = { id: newId("cmpl"), created: Math.floor(Date.now() / 1000), model: t.model };
    if (started.kind === "debug") {
      return jsonResponse({
        id: meta.id,
        object: "text_completion",
        created: meta.created,
        model: meta.model,
        system_fingerprint: "fp_ollama",
        choices: [choice("", null)],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        _debug_info: started.debugInfo,
      });
    }
    if (!t.stream) return jsonResponse(await textCompletion(flatten(started.batches), meta));
    return sseResponse(c, textChunks(started.batches, meta, t.includeUsage), () => {
      ac.abort();
      started.cancel();
    });
  });
  return app;
}
