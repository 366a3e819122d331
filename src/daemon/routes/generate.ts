// POST /api/generate (reference §1.5): parse, prepareGenerate (services/generate.ts), encode.
import { Hono } from "hono";
import type { GenerateResponse } from "../../api/types.js";
import type { Logprob } from "../../backends/backend.js";
import { completionHandler } from "./completion-route.js";
import type { Deps } from "../deps.js";
import { doneMetrics, type CompletionEvent } from "../services/completion.js";
import { prepareGenerate } from "../services/generate.js";
import { createdAt, withLogprobs } from "../services/request.js";
import { generateSchema } from "../schemas.js";

/** One event's response object. */
function chunk(model: string, withContext: boolean, ev: CompletionEvent, out: GenerateResponse[]): void {
  switch (ev.type) {
    case "content":
      out.push(withLogprobs<GenerateResponse>({ model, created_at: createdAt(), response: ev.text, done: false }, ev.logprobs));
      break;
    case "thinking":
      out.push(withLogprobs<GenerateResponse>({ model, created_at: createdAt(), response: "", thinking: ev.text, done: false }, ev.logprobs));
      break;
    case "tool_calls":
      break; // /api/generate has no tools
    case "done":
      out.push({
        model,
        created_at: createdAt(),
        response: "",
        done: true,
        done_reason: ev.doneReason,
        ...(withContext ? { context: ev.context ?? [] } : {}),
        ...doneMetrics(ev),
      });
      break;
  }
}

async function collect(gen: AsyncIterable<GenerateResponse>): Promise<GenerateResponse> {
  let text = "";
  let thinking = "";
  const logprobs: Logprob[] = [];
  let final: GenerateResponse | undefined;
  for await (const ch of gen) {
    text += ch.response;
    thinking += ch.thinking ?? "";
    logprobs.push(...(ch.logprobs ?? []));
    if (ch.done) final = ch;
  }
  if (!final) throw new Error("generation ended without a final response");
  const { thinking: _t, ...rest } = final;
  return withLogprobs<GenerateResponse>({ ...rest, response: text, ...(thinking ? { thinking } : {}) }, logprobs);
}

export function generateRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post(
    "/api/generate",
    completionHandler(deps, {
      schema: generateSchema,
      prepare: prepareGenerate,
      encoder: (body) => (ev, out) => chunk(body.model, !body.raw, ev, out),
      collect,
    }),
  );
  return app;
}
