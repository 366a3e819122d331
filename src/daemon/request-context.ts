// The request that a piece of daemon code runs for. The request-log middleware runs each request
// inside its context (AsyncLocalStorage), so every log line written on its behalf, by any module,
// carries its id without that id being passed down, and the few facts the request's metrics need
// (the model it resolved, its generations' timings) are noted where they are known and read once
// when the request ends.
//
// Work that outlives a request (a runner process and its IPC channel, a keep-alive timer, a crash
// watcher) must be started `detached`, or it would keep the id of the request that started it.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

/** What one generation of a request measured (from the completion's done event). */
export interface GenerationRecord {
  /** Handler start → the runner's first event: queueing, loading and prompt evaluation. */
  firstTokenNs: number;
  promptEvalCount: number;
  promptEvalDurationNs: number;
  evalCount: number;
  evalDurationNs: number;
  /** Prompt tokens taken from a cache instead of being evaluated. */
  cachedTokens: number;
  /** Speculative decoding: tokens proposed and checked, and those accepted (0 without it). */
  draftTokens: number;
  draftAccepted: number;
}

export interface RequestContext {
  readonly id: string;
  /** The model the request resolved to (its short name), once the scheduler has it. */
  model?: string;
  /** How long the request waited for its runner (queueing and loading), ms. */
  waitMs?: number;
  /** Generations that ran to their end (usually one). */
  readonly generations: GenerationRecord[];
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The request id a client may choose: what tracing systems send (UUIDs, hex, base64), no quotes or spaces. */
const CLIENT_ID = /^[A-Za-z0-9._~:/+=@-]{1,128}$/;

/** The client's X-Request-Id when it is usable; otherwise a new one (a UUID). */
export function requestIdFor(header: string | undefined): { id: string; refused?: string } {
  if (header !== undefined && CLIENT_ID.test(header)) return { id: header };
  return { id: randomUUID(), ...(header !== undefined ? { refused: header.slice(0, 64) } : {}) };
}

export function runInRequest<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** Runs fn, and whatever it starts, outside any request. */
export function detached<T>(fn: () => T): T {
  return storage.exit(fn);
}

/** The fields every log line of the current request carries. */
export function requestLogFields(): Record<string, unknown> | undefined {
  const ctx = storage.getStore();
  return ctx ? { request_id: ctx.id } : undefined;
}

export function noteModel(name: string): void {
  const ctx = storage.getStore();
  if (ctx) ctx.model = name;
}

export function noteWait(ms: number): void {
  const ctx = storage.getStore();
  if (ctx) ctx.waitMs = ms;
}

/** ctx: the request, when the caller took it at its start (a stream may be read from elsewhere). */
export function noteGeneration(g: GenerationRecord, ctx: RequestContext | undefined = storage.getStore()): void {
  ctx?.generations.push(g);
}
