// What OLLAMA_DEBUG adds to the log, in one place: a request's rendered prompt and resolved
// options, a load's full memory plan, and a request's time per phase. Prompt text is written
// only here and only at debug level: never at info (docs/operations.md).
import type { Placement } from "../backends/backend.js";
import { formatDurationMs, type Logger } from "./log.js";
import type { RequestRunOptions } from "./options.js";
import { currentRequest, type RequestContext } from "./request-context.js";

const DEBUG = -4;

/** Option names as Ollama spells them (numCtx → num_ctx, topK → top_k). */
function ollamaNames(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]));
}

/** The current request's logger when it writes debug lines. */
function debugLog(): Logger | undefined {
  const log = currentRequest()?.log;
  return log && log.level <= DEBUG ? log : undefined;
}

/** The prompt the runner evaluates (after the template and the context fit), and the options. */
export function debugCompletion(prompt: string, options: RequestRunOptions): void {
  const log = debugLog();
  if (!log) return;
  log.debug("completion request", {
    options: ollamaNames({ ...options.runner, ...options.sampling, numPredict: options.numPredict, numKeep: options.numKeep, stop: options.stop }),
    prompt_bytes: Buffer.byteLength(prompt),
  });
  log.debug("rendered prompt", { prompt });
}

/** Everything the backend planned for a load (the info line "loading …" has the summary). */
export function debugLoadPlan(log: Logger, model: string, placement: Placement): void {
  if (log.level > DEBUG) return;
  const { describe: _summary, ...plan } = placement;
  log.debug("load plan", { model, ...ollamaNames(plan) });
}

/** One line per request at its end: where its time went. */
export function debugTimings(log: Logger, ctx: RequestContext, totalMs: number): void {
  if (log.level > DEBUG || (ctx.waitMs === undefined && ctx.generations.length === 0)) return;
  const fields: Record<string, unknown> = { request_id: ctx.id, model: ctx.model, total: formatDurationMs(totalMs) };
  if (ctx.waitMs !== undefined) fields.wait = formatDurationMs(ctx.waitMs);
  ctx.generations.forEach((g, i) => {
    const p = ctx.generations.length > 1 ? `${i + 1}.` : "";
    fields[`${p}first_token`] = formatDurationMs(g.firstTokenNs / 1e6);
    fields[`${p}prompt_eval`] = formatDurationMs(g.promptEvalDurationNs / 1e6);
    fields[`${p}eval`] = formatDurationMs(g.evalDurationNs / 1e6);
  });
  log.debug("request timings", fields);
}
