// The shared middle of /api/generate, /api/chat and the /v1 routes: acquire a runner
// (scheduler), fit the conversation into the context, run the generation, turn the runner's text
// into one event stream (content / thinking / tool_calls / done) that every encoder consumes, and
// release the runner when the stream ends or the client goes away.
//
// A runner that templates conversations itself (features.messages: a remote engine) gets the
// messages, tools and think, and yields thinking and tool calls itself; any other gets the
// rendered prompt, and its text is parsed here.
//
// Errors that happen before the first token (load failures, a prompt that does not fit, a schema
// the engine refuses) are thrown from startCompletion, so the route answers with the
// real status. Only when that start takes longer than the heartbeat threshold (30 s; a slow load)
// does a streamed response commit early: it then yields empty content events (heartbeats) every
// 10 s until the first token, so clients with 5-minute timeouts never give up on a slow load.
import type { CompiledFormat, GenerateJob, GenerateStats, JobMessage, Logprob, MessagesJob, RunnerEvent } from "../../backends/backend.js";
import { EngineError } from "../../backends/errors.js";
import type { Metrics, ToolCall } from "../../api/types.js";
import type { ModelSpec } from "../../registry/model-spec.js";
import { ApiError, toApiError } from "../errors.js";
import type { RequestRunOptions } from "../options.js";
import { type PromptTemplate, type RenderInput, type RenderMessage } from "../prompt/render.js";
import { renderOffThread, warmRenderer } from "../prompt/render-off-thread.js";
import { fitConversation } from "../prompt/fit-conversation.js";
import { finalMessageStart, HarmonyParser, type HarmonyNames, type HarmonyPrefill } from "../prompt/harmony.js";
import { ThinkingParser, thinkingTags } from "../prompt/thinking.js";
import { WrapperFilter } from "../prompt/answer-wrapper.js";
import { toolDialect } from "../prompt/tool-dialect.js";
import { toolCallParser, type ToolSpec, type ToolStreamParser } from "../prompt/tool-markup.js";
import { toolCallId } from "../prompt/tools.js";
import type { Lease, Scheduler } from "../scheduler/scheduler.js";
import { logCompletionRequest, logCompletionTimings } from "./debug-log.js";
import { currentRequest, noteGeneration } from "../request-context.js";
import { flatten, type Batches } from "../../backends/batches.js";

/** What a completion yields, in order; `done` is always last. */
export type CompletionEvent =
  | { type: "content"; text: string; logprobs?: Logprob[] }
  | { type: "thinking"; text: string; logprobs?: Logprob[] }
  | { type: "tool_calls"; calls: ToolCall[] }
  | CompletionDone;

/**
 * The final event. An empty `content` event (text "") is a heartbeat: encoders must still send
 * it as a chunk (it is what keeps a client waiting on a slow load).
 */
export interface CompletionDone extends GenerateStats {
  type: "done";
  /** Handler start → runner acquired (includes queueing and loading), ns. */
  loadDurationNs: number;
  /** Handler start → done, ns. */
  totalDurationNs: number;
}

export interface CompletionRequest {
  spec: ModelSpec;
  options: RequestRunOptions;
  keepAliveMs: number | undefined;
  signal: AbortSignal;
  startedAt: bigint;
  /**
   * A ready prompt (raw mode, suffix), a conversation to render and fit into num_ctx, or a
   * conversation for a runner that templates it itself (features.messages).
   */
  prompt:
    | { text: string }
    | { template: PromptTemplate; input: RenderInput }
    | Pick<MessagesJob, "messages" | "tools" | "think" | "toolChoice" | "completion">;
  prefixTokens?: number[];
  wantContext: boolean;
  /** Template whose thinking/tool tags apply when `prompt` is ready text (default: none). */
  template?: PromptTemplate;
  /** Structured output, compiled by the model's backend. */
  format?: CompiledFormat;
  /** Chat request tools: tool calls are parsed out of the output. */
  tools?: ToolSpec[];
  /** Thinking is on (resolved `think`): text between the template's tags becomes `thinking`. */
  think?: boolean;
  /** Ollama's `truncate` (default true): drop old messages, cut a prompt that does not fit. */
  truncate?: boolean;
  /** Ollama's `shift` (default true): context shift instead of an error / stopping at num_ctx. */
  shift?: boolean;
  /** The response is streamed: a slow start commits early and sends heartbeats. */
  heartbeat?: boolean;
  /** Chat on a thinking model: `format` applies only once thinking ends (Ollama's restart). */
  formatAfterThinking?: boolean;
  /** The output is harmony messages (gpt-oss): read by the harmony parser instead of the
   *  template's thinking and tool-call tags; `last` is an assistant message the prompt continues. */
  harmony?: { names: HarmonyNames; last?: HarmonyPrefill };
  /** Log probabilities of the output, with this many alternatives per token (0..20). */
  logprobs?: number;
  /** Tokens the model wraps its answers in (Command R's <|START_RESPONSE|>), dropped from the content. */
  wrapper?: readonly string[];
}

/** What preparing a request leads to: a ready reply (load, unload, debug render) or a completion. */
export type Prepared = { kind: "reply"; body: object } | { kind: "completion"; completion: Completion };

export interface Completion {
  /** Set once the runner is acquired (0 until then). */
  loadDurationNs: number;
  /** The events as they come, all that arrived together in one step (what streams read). */
  batches: Batches<CompletionEvent>;
  /** The same events one by one (read either this or `batches`, not both). */
  events: AsyncIterable<CompletionEvent>;
  /** Releases the runner even if the events were never read (client gone before the first). */
  cancel(): void;
}

/**
 * `_debug_render_only` for a runner that templates conversations itself: the engine renders it
 * (a 400 where it cannot).
 */
export async function renderWithRunner(
  scheduler: Scheduler,
  req: Pick<CompletionRequest, "spec" | "options" | "keepAliveMs" | "signal">,
  input: Pick<MessagesJob, "messages" | "tools" | "think" | "completion">,
): Promise<string> {
  const lease = await scheduler.acquire({ spec: req.spec, runner: req.options.runner, keepAliveMs: req.keepAliveMs, signal: req.signal });
  try {
    if (!lease.runner.render) throw new ApiError("unsupported", "_debug_render_only is not supported by this backend: it does not show its prompts");
    return await lease.runner.render(input, req.signal);
  } catch (err) {
    throw toApiError(err);
  } finally {
    lease.release();
  }
}

export function nowNs(): bigint {
  return process.hrtime.bigint();
}

/** The six final-chunk metrics of a done event (integer nanoseconds and counts). */
export function doneMetrics(d: CompletionDone): Required<Metrics> {
  return {
    total_duration: d.totalDurationNs,
    load_duration: d.loadDurationNs,
    prompt_eval_count: d.promptEvalCount,
    prompt_eval_duration: d.promptEvalDurationNs,
    eval_count: d.evalCount,
    eval_duration: d.evalDurationNs,
  };
}

function envMs(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}

/** Internal knobs (tests use short values): start of heartbeats, and their interval. */
export function heartbeatTimings(): { afterMs: number; everyMs: number } {
  return { afterMs: envMs("OLLAMATS_HEARTBEAT_MS", 30_000), everyMs: Math.max(1, envMs("OLLAMATS_HEARTBEAT_INTERVAL_MS", 10_000)) };
}

/**
 * The conversation's prompt, its oldest non-system messages dropped until it fits num_ctx when
 * `truncate` (fit-conversation.ts). Tokenizes only when the byte length says it might not fit: a
 * token never covers less than one byte.
 */
async function fitPrompt(lease: Lease, template: PromptTemplate, input: RenderInput, numCtx: number, truncate: boolean): Promise<string> {
  const render = (messages: RenderMessage[]) => renderOffThread(template, { ...input, messages });
  if (!truncate) return render(input.messages);
  // +1: the runner adds BOS; a prompt must leave a token of room to generate.
  const fits = async (text: string) => Buffer.byteLength(text) + 2 < numCtx || (await lease.runner.tokenize(text)).length + 1 < numCtx;
  return fitConversation(input.messages, render, fits);
}

/** Engine errors get their status from the one error table (daemon/errors.ts). */
function mapRunnerError(err: unknown): unknown {
  return err instanceof EngineError ? toApiError(err) : err;
}

/**
 * Appends the events one runner text event became, its log probabilities on the first content or
 * thinking event, or on an empty content event of their own when a parser holds the text back
 * (as Ollama sends them while a tool call is still being parsed).
 */
/** The reader of the model's tool calls, when the request offers tools; without tools, only for
 *  a model that addresses every message (functionary's recipient line is markup, not the answer). */
function toolParser(template: PromptTemplate, parser: string | undefined, tools: readonly ToolSpec[]): ToolStreamParser | undefined {
  if (tools.length > 0) return toolCallParser(toolDialect(template, parser), tools);
  if (template.kind !== "jinja") return undefined;
  const dialect = toolDialect(template, parser);
  return dialect.kind === "recipient" ? toolCallParser(dialect, []) : undefined;
}

function pushWithLogprobs(out: CompletionEvent[], events: CompletionEvent[], logprobs: Logprob[] | undefined): void {
  if (!logprobs || logprobs.length === 0) return void out.push(...events);
  const i = events.findIndex((e) => e.type === "content" || e.type === "thinking");
  if (i === -1) return void out.push({ type: "content", text: "", logprobs }, ...events);
  out.push(...events.map((e, k) => (k === i ? { ...e, logprobs } : e)));
}

/**
 * One runner generation, read through an iterator so its first events can be awaited early; in
 * batches where the runner has them (generateBatches), else one event a step.
 */
class Generation {
  private readonly it: AsyncIterator<RunnerEvent | RunnerEvent[]>;
  private closed = false;
  constructor(lease: Lease, job: GenerateJob, signal: AbortSignal) {
    const r = lease.runner;
    this.it = (r.generateBatches ? r.generateBatches(job, signal) : r.generate(job, signal))[Symbol.asyncIterator]();
  }
  async next(): Promise<readonly RunnerEvent[] | undefined> {
    try {
      const r = await this.it.next();
      return r.done ? undefined : Array.isArray(r.value) ? r.value : [r.value];
    } catch (err) {
      throw mapRunnerError(err);
    }
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.it.return?.(undefined);
  }
}

interface Started {
  lease: Lease;
  prompt: string;
  template: PromptTemplate | undefined;
  first: readonly RunnerEvent[] | undefined;
  /** Handler start → the runner's first event, ns. */
  firstTokenNs: number;
  deferFormat: boolean;
}

export async function startCompletion(scheduler: Scheduler, req: CompletionRequest): Promise<Completion> {
  const o = req.options;
  const conversation = "messages" in req.prompt ? req.prompt : undefined;
  const template = "template" in req.prompt ? req.prompt.template : conversation ? undefined : req.template;
  const tags = req.think && template ? thinkingTags(template) : { open: "", close: "" };
  const thinks = tags.open !== "" && tags.close !== "";
  // Harmony thinks whatever `think` says; `think: false` only makes the format apply at once (Ollama).
  const deferFormat = !!(req.format && req.formatAfterThinking && (thinks || (req.harmony && req.think)));

  const request = currentRequest();
  const requestId = request?.id;
  const common = (format: CompiledFormat | undefined) => ({
    sampling: o.sampling,
    options: o.explicit,
    numPredict: o.numPredict,
    stop: o.stop,
    wantContext: req.wantContext,
    ...(format ? { format } : {}),
    shift: req.shift ?? true,
    truncate: req.truncate ?? true,
    numKeep: o.numKeep,
    ...(req.logprobs !== undefined ? { logprobs: req.logprobs } : {}),
    ...(requestId !== undefined ? { requestId } : {}),
  });
  const job = (prompt: string, format: CompiledFormat | undefined, prefixTokens?: number[]): GenerateJob => ({
    prompt,
    prefixTokens,
    ...common(format),
  });

  let cancelled = false;
  let lease: Lease | undefined;
  let gen: Generation | undefined;
  const completion: Completion = {
    loadDurationNs: 0,
    batches: undefined as unknown as Batches<CompletionEvent>,
    events: undefined as unknown as AsyncIterable<CompletionEvent>,
    cancel: () => {
      cancelled = true;
      void gen?.close().catch(() => undefined);
      lease?.release();
    },
  };

  // the prompt renders in a worker thread: it starts while the model loads
  if ("template" in req.prompt) warmRenderer();
  const prelude = (async (): Promise<Started> => {
    const l = await scheduler.acquire({ spec: req.spec, runner: o.runner, keepAliveMs: req.keepAliveMs, signal: req.signal });
    lease = l;
    completion.loadDurationNs = Number(nowNs() - req.startedAt);
    if (cancelled) {
      l.release();
      throw new ApiError("canceled", "request canceled");
    }
    try {
      let prompt = "";
      if (conversation) {
        const { messages, tools, think, toolChoice, completion: asCompletion } = conversation;
        const job: MessagesJob = {
          messages,
          ...(tools ? { tools } : {}),
          ...(think !== undefined ? { think } : {}),
          ...(toolChoice ? { toolChoice } : {}),
          ...(asCompletion ? { completion: asCompletion } : {}),
          ...common(req.format),
        };
        logCompletionRequest(scheduler.log, req.spec.shortName, o, undefined, messages.length);
        gen = new Generation(l, job, req.signal);
      } else {
        prompt =
          "text" in req.prompt
            ? req.prompt.text
            : await fitPrompt(l, (req.prompt as { template: PromptTemplate }).template, (req.prompt as { input: RenderInput }).input, l.runner.info.contextLength, req.truncate ?? true);
        logCompletionRequest(scheduler.log, req.spec.shortName, o, prompt);
        gen = new Generation(l, job(prompt, deferFormat ? undefined : req.format, req.prefixTokens), req.signal);
      }
      const first = await gen.next();
      return { lease: l, prompt, template, first, firstTokenNs: Number(nowNs() - req.startedAt), deferFormat };
    } catch (err) {
      await gen?.close().catch(() => undefined);
      l.release();
      throw err;
    }
  })();

  const { afterMs, everyMs } = heartbeatTimings();
  let started: Started | undefined;
  if (req.heartbeat) {
    prelude.catch(() => undefined); // awaited by events() if the race below is lost
    // A threshold of 0 means a heartbeat first, always (not a race with a zero-delay timer).
    if (afterMs > 0) {
      const timer = new Promise<"slow">((resolve) => {
        const t = setTimeout(() => resolve("slow"), afterMs);
        t.unref();
        void prelude.then(() => clearTimeout(t), () => clearTimeout(t));
      });
      const winner = await Promise.race([prelude, timer]);
      if (winner !== "slow") started = winner;
    }
  } else {
    started = await prelude;
  }

  async function* batches(): AsyncGenerator<CompletionEvent[]> {
    try {
      let s = started;
      while (!s) {
        yield [{ type: "content", text: "" }];
        const tick = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), everyMs).unref());
        s = await Promise.race([prelude, tick]);
      }
      yield* run(s);
    } finally {
      await gen?.close().catch(() => undefined);
      lease?.release();
    }
  }

  /** The runner's batches as completion events: one batch out per batch in (empty ones dropped). */
  async function* run(s: Started): AsyncGenerator<CompletionEvent[]> {
    const harmony = req.harmony ? new HarmonyParser(req.harmony.names, req.harmony.last) : undefined;
    const thinking = thinks && !harmony ? new ThinkingParser(tags) : undefined;
    if (thinking && s.prompt.trimEnd().endsWith(tags.open)) thinking.add(tags.open);
    const unwrap = req.wrapper && req.wrapper.length > 0 ? new WrapperFilter(req.wrapper) : undefined;
    const tools = s.template && !harmony ? toolParser(s.template, req.spec.config?.parser, req.tools ?? []) : undefined;
    let deferring = s.deferFormat;
    let raw = ""; // the text generated so far, for the format restart

    function content(out: CompletionEvent[], text: string, final: boolean): void {
      if (!tools) {
        if (text) out.push({ type: "content", text });
        return;
      }
      const step = tools.add(text);
      const end = final ? tools.flush() : { calls: [], content: "" };
      const c = step.content + end.content;
      const calls = [...step.calls, ...end.calls];
      if (c) out.push({ type: "content", text: c });
      if (calls.length > 0) out.push({ type: "tool_calls", calls });
    }

    let batch = s.first;
    for (;;) {
      if (!batch) throw new Error("generation ended without a final response");
      const out: CompletionEvent[] = [];
      let restart = false;
      for (const ev of batch) {
        if (ev.type === "content" || ev.type === "thinking") {
          // The runner's event is already a completion event: passed on, not copied.
          if (ev.text || ev.logprobs) out.push(ev);
        } else if (ev.type === "tool_calls") {
          out.push(ev);
        } else if (ev.type === "text") {
          raw += ev.text;
          let text = ev.text;
          const evs: CompletionEvent[] = [];
          const split = harmony ?? thinking;
          if (split) {
            const step = split.add(text);
            if (step.thinking) evs.push({ type: "thinking", text: step.thinking });
            text = step.content;
          }
          if (unwrap) text = unwrap.add(text);
          if (deferring && text !== "") {
            pushWithLogprobs(out, evs, ev.logprobs);
            restart = true;
            break;
          }
          content(evs, text, false);
          pushWithLogprobs(out, evs, ev.logprobs);
        } else {
          const rest = thinking?.flush();
          if (rest?.thinking) out.push({ type: "thinking", text: rest.thinking });
          const restContent = unwrap ? unwrap.add(rest?.content ?? "") + unwrap.flush() : (rest?.content ?? "");
          content(out, restContent, true);
          const calls = harmony?.finish().map((c) => ({ id: toolCallId(), ...c })) ?? [];
          if (calls.length > 0) out.push({ type: "tool_calls", calls });
          const { type: _t, ...stats } = ev;
          // Once per request, for its metrics and its debug timings (request-context.ts).
          noteGeneration(
            {
              firstTokenNs: s.firstTokenNs,
              promptEvalCount: stats.promptEvalCount,
              promptEvalDurationNs: stats.promptEvalDurationNs,
              evalCount: stats.evalCount,
              evalDurationNs: stats.evalDurationNs,
              cachedTokens: stats.cachedTokens ?? 0,
              draftTokens: stats.draftTokens ?? 0,
              draftAccepted: stats.draftAccepted ?? 0,
            },
            request,
          );
          const done: CompletionDone = { ...stats, type: "done", loadDurationNs: completion.loadDurationNs, totalDurationNs: Number(nowNs() - req.startedAt) };
          logCompletionTimings(scheduler.log, req.spec.shortName, done);
          out.push(done);
          yield out;
          return;
        }
      }
      if (out.length > 0) yield out;
      if (restart) {
        // Thinking is over: generate again from the prompt plus the thinking, constrained (the
        // rest of this generation's batch is dropped with it).
        deferring = false;
        const cut = harmony ? finalMessageStart(raw) : raw.indexOf(tags.close);
        const prefix = cut === -1 ? "" : raw.slice(0, harmony ? cut : cut + tags.close.length);
        await gen?.close();
        const next = new Generation(s.lease, job(s.prompt + prefix, req.format), req.signal);
        gen = next;
        batch = await next.next();
        continue;
      }
      batch = await (gen as Generation).next();
    }
  }

  completion.batches = batches();
  completion.events = flatten(completion.batches);
  return completion;
}
