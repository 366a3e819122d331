// OLLAMA_DEBUG=1, as Ollama does at debug level: the prompt the model gets (after the template),
// the options it runs with, the timings of each completion, and where each request's time went. Never at info: prompts stay out
// of ordinary logs. Nothing here is computed unless the level is on.
import type { GenerateStats } from "../../backends/backend.js";
import { debugEnabled, formatDurationMs, type Logger } from "../log.js";
import type { RequestRunOptions } from "../options.js";
import type { RequestContext } from "../request-context.js";

/** `prompt`: the rendered text; undefined when the runner templates the messages itself. */
export function logCompletionRequest(log: Logger, model: string, o: RequestRunOptions, prompt: string | undefined, messages?: number): void {
  if (!debugEnabled(log)) return;
  log.debug("completion request", {
    model,
    options: { ...o.runner, ...o.sampling, num_predict: o.numPredict, num_keep: o.numKeep, stop: o.stop },
    messages,
    prompt,
  });
}

export function logCompletionTimings(log: Logger, model: string, d: GenerateStats & { loadDurationNs: number; totalDurationNs: number }): void {
  if (!debugEnabled(log)) return;
  const ms = (ns: number) => formatDurationMs(ns / 1e6);
  const rate = (n: number, ns: number) => (ns > 0 ? `${((n * 1e9) / ns).toFixed(2)} tokens/s` : undefined);
  log.debug("completion timings", {
    model,
    done_reason: d.doneReason,
    load_duration: ms(d.loadDurationNs),
    prompt_eval_count: d.promptEvalCount,
    cached_tokens: d.cachedTokens,
    prompt_eval_duration: ms(d.promptEvalDurationNs),
    prompt_eval_rate: rate(d.promptEvalCount, d.promptEvalDurationNs),
    eval_count: d.evalCount,
    eval_duration: ms(d.evalDurationNs),
    eval_rate: rate(d.evalCount, d.evalDurationNs),
    total_duration: ms(d.totalDurationNs),
  });
}

/** One line per request at its end: where its time went. */
export function debugTimings(log: Logger, ctx: RequestContext, totalMs: number): void {
  if (!debugEnabled(log) || (ctx.waitMs === undefined && ctx.generations.length === 0)) return;
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
