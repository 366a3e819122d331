// The shared middle of /api/generate and /api/chat: acquire a runner (scheduler), fit the
// conversation into the context, run the generation, release the runner when it ends.
import type { RunnerEvent, GenerateStats } from "../backends/backend.js";
import type { ModelSpec } from "../registry/model-spec.js";
import type { Metrics } from "../api/types.js";
import type { RequestRunOptions } from "./options.js";
import type { Lease, Scheduler } from "./scheduler/scheduler.js";
import { renderPrompt, type PromptTemplate, type RenderInput } from "./prompt/render.js";

export interface CompletionRequest {
  spec: ModelSpec;
  options: RequestRunOptions;
  keepAliveMs: number | undefined;
  signal: AbortSignal;
  startedAt: bigint;
  /** A ready prompt (raw mode, suffix) or a conversation to render and fit into num_ctx. */
  prompt: { text: string } | { template: PromptTemplate; input: RenderInput };
  prefixTokens?: number[];
  wantContext: boolean;
}

export interface Completion {
  loadDurationNs: number;
  events: AsyncIterable<RunnerEvent>;
  /** Releases the runner even if the events were never read (client gone before the first). */
  cancel(): void;
}

export function nowNs(): bigint {
  return process.hrtime.bigint();
}

export function finalMetrics(startedAt: bigint, loadDurationNs: number, s: GenerateStats): Required<Metrics> {
  return {
    total_duration: Number(nowNs() - startedAt),
    load_duration: loadDurationNs,
    prompt_eval_count: s.promptEvalCount,
    prompt_eval_duration: s.promptEvalDurationNs,
    eval_count: s.evalCount,
    eval_duration: s.evalDurationNs,
  };
}

/**
 * Drops the oldest non-system messages until the prompt fits num_ctx, always keeping system
 * messages and the last message (Ollama's `truncate`). Tokenizes only when the byte length
 * says it might not fit: a token never covers less than one byte.
 */
async function fitConversation(lease: Lease, template: PromptTemplate, input: RenderInput, numCtx: number): Promise<string> {
  let messages = input.messages;
  for (;;) {
    const text = renderPrompt(template, { ...input, messages });
    if (Buffer.byteLength(text) + 2 < numCtx) return text;
    const tokens = await lease.runner.tokenize(text);
    if (tokens.length < numCtx) return text;
    const drop = messages.findIndex((m, i) => m.role !== "system" && i < messages.length - 1);
    if (drop === -1) return text; // the runner cuts the prompt itself (context shift)
    messages = messages.filter((_, i) => i !== drop);
  }
}

export async function startCompletion(scheduler: Scheduler, req: CompletionRequest): Promise<Completion> {
  const lease = await scheduler.acquire({
    spec: req.spec,
    runner: req.options.runner,
    keepAliveMs: req.keepAliveMs,
    signal: req.signal,
  });
  const loadDurationNs = Number(nowNs() - req.startedAt);
  let prompt: string;
  try {
    prompt =
      "text" in req.prompt
        ? req.prompt.text
        : await fitConversation(lease, req.prompt.template, req.prompt.input, lease.runner.info.contextLength);
  } catch (err) {
    lease.release();
    throw err;
  }
  const o = req.options;
  const source = lease.runner.generate(
    {
      prompt,
      prefixTokens: req.prefixTokens,
      sampling: o.sampling,
      numPredict: o.numPredict,
      stop: o.stop,
      wantContext: req.wantContext,
    },
    req.signal,
  );
  async function* events(): AsyncIterable<RunnerEvent> {
    try {
      yield* source;
    } finally {
      lease.release();
    }
  }
  return { loadDurationNs, events: events(), cancel: () => lease.release() };
}
