// OpenAI's /v1 as an upstream: vLLM, SGLang, llama-server, TGI, LM Studio. Chat and completions
// streamed as SSE with usage in the last chunk (`stream_options.include_usage`), thinking from
// `reasoning_content` (vLLM, llama-server) or `reasoning`, tool calls assembled from their
// streamed deltas, `format` as `response_format` plus vLLM's `guided_json`, think as the chat
// template's `enable_thinking` (or `reasoning_effort` for a level). Tokenize and health live at
// the server's root (`/tokenize`, `/health`: vLLM and llama-server), not under /v1.
import { isPromptJob, type EmbedOptions, type EmbedResult, type GenerateJob, type GenerateStats, type JobMessage, type RunnerEvent, type StructuredOutput } from "../backend.js";
import type { ToolCall } from "../../api/types.js";
import { EngineError } from "../errors.js";
import { badAnswer, isObj, nowNs, num, parseLine, type Dialect, type HttpCall, type Json, type StreamReader } from "./dialect.js";
import { MAX_LINE_CHARS } from "../../http/lines.js";

/** Tool-call ids a conversation lacks are made up in order, so results can name their call. */
function openaiMessages(messages: JobMessage[]): Json[] {
  const pending: string[] = [];
  let n = 0;
  return messages.map((m) => {
    if (m.role === "assistant" && m.tool_calls?.length) {
      const calls = m.tool_calls.map((tc) => {
        const id = tc.id ?? `call_${n++}`;
        pending.push(id);
        const args = typeof tc.function.arguments === "string" ? tc.function.arguments : JSON.stringify(tc.function.arguments ?? {});
        return { id, type: "function", function: { name: tc.function.name, arguments: args } };
      });
      return { role: "assistant", content: m.content === "" ? null : m.content, tool_calls: calls };
    }
    if (m.role === "tool") return { role: "tool", content: m.content, tool_call_id: m.tool_call_id ?? pending.shift() ?? `call_${n++}` };
    return { role: m.role, content: m.content };
  });
}

function responseFormat(f: StructuredOutput): Json {
  if (f.kind === "json") return { response_format: { type: "json_object" } };
  return { response_format: { type: "json_schema", json_schema: { name: "format", schema: f.schema, strict: true } }, guided_json: f.schema };
}

/** Ollama's option names → OpenAI's (and the engines' extensions); only what was set is sent,
 *  so the upstream's own defaults (vLLM's generation_config) hold for the rest. */
const OPTION_FIELDS: Record<string, string[]> = {
  temperature: ["temperature"],
  top_p: ["top_p"],
  top_k: ["top_k"],
  min_p: ["min_p"],
  presence_penalty: ["presence_penalty"],
  frequency_penalty: ["frequency_penalty"],
  // vLLM and SGLang call it repetition_penalty, llama-server repeat_penalty.
  repeat_penalty: ["repetition_penalty", "repeat_penalty"],
  num_predict: ["max_tokens"],
  stop: ["stop"],
  seed: ["seed"],
};

function samplingFields(options: Record<string, unknown>): Json {
  const out: Json = {};
  for (const [k, names] of Object.entries(OPTION_FIELDS)) {
    const v = options[k];
    if (v === undefined) continue;
    if ((k === "num_predict" || k === "seed") && typeof v === "number" && v < 0) continue; // Ollama's "unlimited" / "random"
    if (k === "stop" && Array.isArray(v) && v.length === 0) continue;
    for (const n of names) out[n] = v;
  }
  return out;
}

/** What one answer's tool calls may hold in all (names and arguments), and how many calls: an
 *  upstream that streams arguments without end is cut off there, not followed until memory ends. */
const MAX_TOOL_CALL_CHARS = MAX_LINE_CHARS;
const MAX_TOOL_CALLS = 1024;

/** A `tool_calls` delta list folded into calls by index (ids and names come first, arguments in pieces). */
class ToolCallAssembler {
  private readonly calls = new Map<number, { id?: string; name: string; args: string }>();
  private chars = 0;
  add(deltas: unknown[]): void {
    for (const d of deltas) {
      if (!isObj(d)) continue;
      const index = num(d.index) ?? this.calls.size;
      const c = this.calls.get(index) ?? { name: "", args: "" };
      if (typeof d.id === "string") c.id = d.id;
      const fn = isObj(d.function) ? d.function : {};
      const before = c.name.length + c.args.length;
      if (typeof fn.name === "string") c.name += fn.name;
      if (typeof fn.arguments === "string") c.args += fn.arguments;
      else if (isObj(fn.arguments)) c.args = JSON.stringify(fn.arguments);
      this.chars += c.name.length + c.args.length - before;
      this.calls.set(index, c);
      if (this.chars > MAX_TOOL_CALL_CHARS) throw badAnswer(`tool calls of more than ${MAX_TOOL_CALL_CHARS} characters`);
      if (this.calls.size > MAX_TOOL_CALLS) throw badAnswer(`more than ${MAX_TOOL_CALLS} tool calls in one answer`);
    }
  }
  take(): ToolCall[] {
    const out = [...this.calls.entries()].sort((a, b) => a[0] - b[0]).map(([i, c]) => {
      let args: Record<string, unknown> = {};
      try {
        const parsed: unknown = c.args.trim() === "" ? {} : JSON.parse(c.args);
        if (isObj(parsed)) args = parsed;
      } catch {
        throw badAnswer(`tool call arguments are not JSON: ${c.args.slice(0, 80)}`);
      }
      return { ...(c.id ? { id: c.id } : {}), function: { index: i, name: c.name, arguments: args } };
    });
    this.calls.clear();
    this.chars = 0;
    return out;
  }
  get size(): number {
    return this.calls.size;
  }
}

export class OpenAIDialect implements Dialect {
  /** The server root (`http://h:8000`) for the endpoints vLLM and llama-server keep there. */
  private readonly root: string;

  constructor(private readonly base: string) {
    this.root = base.replace(/\/v1$/, "");
  }

  generate(job: GenerateJob, model: string): HttpCall {
    const body: Json = {
      model,
      stream: true,
      stream_options: { include_usage: true },
      ...samplingFields(job.options ?? {}),
      ...(job.format ? responseFormat(job.format.value as StructuredOutput) : {}),
    };
    if (isPromptJob(job)) return { url: `${this.base}/completions`, body: { ...body, prompt: job.prompt } };
    const think =
      job.think === undefined ? {} : typeof job.think === "boolean" ? { chat_template_kwargs: { enable_thinking: job.think } } : { reasoning_effort: job.think, chat_template_kwargs: { enable_thinking: true } };
    return {
      url: `${this.base}/chat/completions`,
      body: {
        ...body,
        messages: openaiMessages(job.messages),
        ...(job.tools?.length ? { tools: job.tools } : {}),
        ...(job.toolChoice ? { tool_choice: job.toolChoice === "required" ? "required" : { type: "function", function: { name: job.toolChoice.name } } } : {}),
        ...think,
      },
    };
  }

  reader(startedAt: bigint): StreamReader {
    return new OpenAIReader(startedAt);
  }

  embed(inputs: string[], model: string, opts: Omit<EmbedOptions, "signal">): HttpCall {
    return { url: `${this.base}/embeddings`, body: { model, input: inputs, encoding_format: "float", ...(opts.dimensions ? { dimensions: opts.dimensions } : {}) } };
  }

  embedResult(json: unknown): EmbedResult {
    if (!isObj(json) || !Array.isArray(json.data)) throw badAnswer("no embeddings");
    const data = [...(json.data as Json[])].sort((a, b) => (num(a.index) ?? 0) - (num(b.index) ?? 0));
    const usage = isObj(json.usage) ? json.usage : {};
    return { embeddings: data.map((d) => d.embedding as number[]), promptEvalCount: num(usage.prompt_tokens) ?? 0 };
  }

  tokenize(text: string, model: string): HttpCall {
    // vLLM reads model + prompt, llama-server content; both take add_special_tokens.
    return { url: `${this.root}/tokenize`, body: { model, prompt: text, content: text, add_special_tokens: false } };
  }

  tokens(json: unknown): number[] {
    if (!isObj(json) || !Array.isArray(json.tokens)) throw badAnswer("no tokens");
    // llama-server may answer {id, piece} objects when asked for pieces.
    return json.tokens.map((t) => (isObj(t) ? (num(t.id) ?? 0) : (t as number)));
  }

  detokenize(tokens: number[], model: string): HttpCall {
    return { url: `${this.root}/detokenize`, body: { model, tokens } };
  }

  text(json: unknown): string {
    if (isObj(json) && typeof json.prompt === "string") return json.prompt; // vLLM
    if (isObj(json) && typeof json.content === "string") return json.content; // llama-server
    throw badAnswer("no text");
  }

  health(): string[] {
    return [`${this.root}/health`, `${this.base}/models`];
  }
}

/** OpenAI's SSE: `data: {chunk}` lines, usage in the last chunk, then `data: [DONE]`. */
class OpenAIReader implements StreamReader {
  finished = false;
  private readonly tools = new ToolCallAssembler();
  private finish: string | undefined;
  private usage: Json | undefined;
  private timings: Json | undefined;
  private firstAt: bigint | undefined;
  private pieces = 0;

  constructor(private readonly startedAt: bigint) {}

  read(lines: readonly string[], out: RunnerEvent[]): void {
    for (const line of lines) {
      if (this.finished) return;
      if (!line.startsWith("data:")) continue; // SSE comments, event names, keep-alives
      const data = line.slice(5).trim();
      if (data === "[DONE]") {
        this.end(out);
        return;
      }
      const j = parseLine(data);
      if (j.error !== undefined) {
        const e = j.error;
        throw new EngineError("runner_failed", typeof e === "string" ? e : isObj(e) && typeof e.message === "string" ? e.message : "the upstream failed");
      }
      if (isObj(j.usage)) this.usage = j.usage;
      if (isObj(j.timings)) this.timings = j.timings;
      const choice = Array.isArray(j.choices) && isObj(j.choices[0]) ? j.choices[0] : undefined;
      if (!choice) continue;
      const delta = isObj(choice.delta) ? choice.delta : {};
      const reasoning = typeof delta.reasoning_content === "string" ? delta.reasoning_content : typeof delta.reasoning === "string" ? delta.reasoning : "";
      const content = typeof delta.content === "string" ? delta.content : typeof choice.text === "string" ? choice.text : "";
      if (reasoning || content) {
        this.firstAt ??= nowNs();
        this.pieces++;
      }
      if (reasoning) out.push({ type: "thinking", text: reasoning });
      if (content) out.push({ type: "content", text: content });
      if (Array.isArray(delta.tool_calls)) {
        this.firstAt ??= nowNs();
        this.tools.add(delta.tool_calls);
      }
      if (typeof choice.finish_reason === "string") this.finish = choice.finish_reason;
    }
  }

  /** [DONE], or the body's end: the assembled tool calls and the stats. */
  end(out: RunnerEvent[]): void {
    if (this.finish === undefined && this.usage === undefined) throw new EngineError("upstream_down", "the upstream ended the stream without a final response");
    if (this.tools.size > 0) out.push({ type: "tool_calls", calls: this.tools.take() });
    out.push({ type: "done", ...stats(this.finish, this.usage, this.timings, this.startedAt, this.firstAt, this.pieces) });
    this.finished = true;
  }
}

/** Usage and llama-server's timings as Ollama's stats; durations measured here where none are reported. */
function stats(finish: string | undefined, usage: Json | undefined, timings: Json | undefined, startedAt: bigint, firstAt: bigint | undefined, pieces: number): GenerateStats {
  const end = nowNs();
  const first = firstAt ?? end;
  const details = isObj(usage?.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const cached = num(timings?.cache_n) ?? num(details.cached_tokens);
  const promptMs = num(timings?.prompt_ms);
  const predictedMs = num(timings?.predicted_ms);
  return {
    doneReason: finish === "length" ? "length" : "stop",
    promptEvalCount: num(usage?.prompt_tokens) ?? num(timings?.prompt_n) ?? 0,
    promptEvalDurationNs: promptMs !== undefined ? Math.round(promptMs * 1e6) : Number(first - startedAt),
    evalCount: num(usage?.completion_tokens) ?? num(timings?.predicted_n) ?? pieces,
    evalDurationNs: predictedMs !== undefined ? Math.round(predictedMs * 1e6) : Number(end - first),
    ...(cached !== undefined ? { cachedTokens: cached } : {}),
  };
}
