// Worker thread of render-off-thread.ts: renders conversations with their templates off the
// daemon's event loop. It keeps its own parsed templates (render.ts's bounded caches), keyed by
// source, as the daemon's thread does.
import { parentPort } from "node:worker_threads";
import { ApiError } from "../errors.js";
import { renderPrompt, selectTemplate, type RenderInput } from "./render.js";

/** A template as its source: what the worker parses (or finds parsed) on its side. */
export type TemplateSource = { kind: "go"; source: string } | { kind: "jinja"; source: string; bos: string; eos: string };

export interface RenderRequest {
  id: number;
  template: TemplateSource;
  input: RenderInput;
}

export type RenderReply = { id: number; text: string } | { id: number; error: { code: ApiError["code"]; message: string } };

parentPort?.on("message", (req: RenderRequest) => {
  let reply: RenderReply;
  try {
    const t = req.template;
    const template = t.kind === "go" ? selectTemplate(t.source, undefined, "", "") : selectTemplate(undefined, t.source, t.bos, t.eos);
    reply = { id: req.id, text: renderPrompt(template, req.input) };
  } catch (err) {
    const e = err instanceof ApiError ? err : new ApiError("internal", err instanceof Error ? err.message : String(err));
    reply = { id: req.id, error: { code: e.code, message: e.message } };
  }
  parentPort?.postMessage(reply);
});
