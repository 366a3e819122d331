// From a native /api/chat or /api/generate body (what Ollama's /v1 middleware builds) to the
// completion's event stream: the very preparation the /api routes run (prepareChat /
// prepareGenerate: validation, capability checks, think, format, tools, template,
// startCompletion), so /v1 has no generation path of its own.
import type { Context } from "hono";
import { badRequest } from "../../errors.js";
import type { Deps } from "../../deps.js";
import { chatSchema, generateSchema, type ChatBody, type GenerateBody } from "../../schemas.js";
import { prepareChat } from "../../services/chat.js";
import type { Prepared } from "../../services/completion.js";
import { prepareGenerate } from "../../services/generate.js";
import { requestSignal } from "../../services/request.js";
import type { Batches } from "../../../backends/batches.js";
import { completionBatches, type CompletionEvent } from "./events.js";

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

export type Started =
  | { kind: "events"; batches: Batches<CompletionEvent>; cancel: () => void }
  /** `_debug_render_only`: the rendered prompt, nothing generated. */
  | { kind: "debug"; debugInfo: unknown };

/** A ready native reply (an empty prompt only loads the model: done_reason "load") as events. */
async function* replyEvents(body: Record<string, unknown>): Batches<CompletionEvent> {
  const message = body.message as { content?: unknown } | undefined;
  const text = typeof body.response === "string" ? body.response : typeof message?.content === "string" ? message.content : "";
  const doneReason = (typeof body.done_reason === "string" ? body.done_reason : "stop") as "stop";
  const done: CompletionEvent = { type: "done", doneReason, promptEvalCount: 0, promptEvalDurationNs: 0, evalCount: 0, evalDurationNs: 0 };
  yield text ? [{ type: "content", text }, done] : [done];
}

export function fromPrepared(p: Prepared): Started {
  if (p.kind === "completion") return { kind: "events", batches: completionBatches(p.completion), cancel: () => p.completion.cancel() };
  const body = p.body as Record<string, unknown>;
  if ("_debug_info" in body) return { kind: "debug", debugInfo: body._debug_info };
  return { kind: "events", batches: replyEvents(body), cancel: () => undefined };
}

export async function startChat(deps: Deps, body: ChatBody, signal: AbortSignal, startedAt: bigint, opts: { relaxThink?: boolean } = {}): Promise<Started> {
  return fromPrepared(await prepareChat(deps, body, signal, startedAt, opts));
}

export async function startGenerate(deps: Deps, body: GenerateBody, signal: AbortSignal, startedAt: bigint): Promise<Started> {
  return fromPrepared(await prepareGenerate(deps, body, signal, startedAt));
}

/** A /v1 chat-shaped route's start (chat completions, responses, messages): its native body
 *  validated and prepared, and the controller that stops it when the client leaves. */
export async function startNativeChat(deps: Deps, c: Context, native: Record<string, unknown>, startedAt: bigint, opts: { relaxThink?: boolean } = {}): Promise<{ started: Started; ac: AbortController }> {
  const body = nativeChatBody(native);
  const ac = requestSignal(c.req.raw);
  return { started: await startChat(deps, body, ac.signal, startedAt, opts), ac };
}
