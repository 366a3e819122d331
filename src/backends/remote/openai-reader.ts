// Reading an OpenAI-API engine's streamed answer (vLLM, SGLang, llama-server, TGI, LM Studio):
// SSE chunks (sse.ts) with usage in the last one, thinking from `reasoning_content` or
// `reasoning`, tool calls assembled from their deltas, errors reported in the stream. An engine
// or proxy that ignores `stream` and answers one JSON completion is read the same way, whole.
import type { GenerateStats, RunnerEvent } from "../backend.js";
import type { ToolCall } from "../../api/types.js";
import { EngineError } from "../errors.js";
import { answerError, badAnswer, isObj, nowNs, num, type Json, type StreamReader } from "./dialect.js";
import { MAX_LINE_CHARS } from "../../http/lines.js";
import { SseEvents } from "./sse.js";

/** What one answer's tool calls may hold in all (names and arguments), and how many calls: an
 *  upstream that streams arguments without end is cut off there, not followed until memory ends. */
const MAX_TOOL_CALL_CHARS = MAX_LINE_CHARS;
const MAX_TOOL_CALLS = 1024;

/** A `tool_calls` delta list folded into calls by index (ids and names come first, arguments in pieces). */
class ToolCallAssembler {
  private readonly calls = new Map<number, { id?: string; name: string; args: string }>();
  private chars = 0;
  private last = -1;
  add(deltas: unknown[]): void {
    for (const d of deltas) {
      if (!isObj(d)) continue;
      const fn = isObj(d.function) ? d.function : {};
      // Without an index (a whole message's calls, some servers' deltas) a delta with an id or a
      // name starts a call, and one with only arguments goes on with the last.
      const starts = typeof d.id === "string" || typeof fn.name === "string" || this.last < 0;
      const index = num(d.index) ?? (starts ? this.calls.size : this.last);
      const c = this.calls.get(index) ?? { name: "", args: "" };
      if (typeof d.id === "string") c.id = d.id;
      const before = c.name.length + c.args.length;
      if (typeof fn.name === "string") c.name += fn.name;
      if (typeof fn.arguments === "string") c.args += fn.arguments;
      else if (isObj(fn.arguments)) c.args = JSON.stringify(fn.arguments);
      this.chars += c.name.length + c.args.length - before;
      this.calls.set(index, c);
      this.last = index;
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
    this.last = -1;
    return out;
  }
  get size(): number {
    return this.calls.size;
  }
}

/** `finish_reason`s that say the engine gave up on the answer (vLLM's abort and error). */
const FAILED_FINISH = new Set(["abort", "error"]);

/** OpenAI's SSE: `data: {chunk}` events, usage in the last chunk, then `data: [DONE]`. */
export class OpenAIReader implements StreamReader {
  readonly sse = true;
  finished = false;
  private readonly tools = new ToolCallAssembler();
  private readonly events = new SseEvents({ data: (text, alone) => this.data(text, alone), error: (text) => this.chunk({ error: parseOr(text) }) });
  private out: RunnerEvent[] = [];
  /** A body that is one JSON document, not events: its lines until the end, and their length. */
  private doc: string[] | undefined;
  private docChars = 0;
  private started = false;
  private finish: string | undefined;
  private usage: Json | undefined;
  private timings: Json | undefined;
  private firstAt: bigint | undefined;
  private pieces = 0;

  constructor(private readonly startedAt: bigint) {}

  read(lines: readonly string[], out: RunnerEvent[]): void {
    this.out = out;
    for (const line of lines) {
      if (this.finished) return;
      if (!this.started && line.trim() !== "") {
        this.started = true;
        if (line.trimStart().startsWith("{")) this.doc = [];
      }
      if (this.doc) {
        this.doc.push(line);
        if ((this.docChars += line.length + 1) > MAX_LINE_CHARS) throw badAnswer(`a JSON answer of more than ${MAX_LINE_CHARS} characters`);
      } else this.events.line(line);
    }
  }

  /** The body's end: the last event without its blank line, then the final events. */
  end(out: RunnerEvent[]): void {
    this.out = out;
    if (this.doc) this.chunk(parseOr(this.doc.join("\n"), true) as Json);
    else this.events.end();
    if (!this.finished) this.complete();
  }

  private data(text: string, alone: boolean): boolean {
    const t = text.trim();
    if (t === "[DONE]") this.complete();
    else if (t !== "") {
      let j: unknown;
      try {
        j = JSON.parse(t);
      } catch {
        if (alone) return false; // the first line of an event in several
        throw badAnswer(`not JSON: ${t.slice(0, 80)}`);
      }
      if (!isObj(j)) throw badAnswer("not a JSON object");
      this.chunk(j);
    }
    return true;
  }

  /** One chunk (or a whole completion: its choice's `message` read as the delta). */
  private chunk(j: Json): void {
    const failed = answerError(j);
    if (failed) throw failed;
    if (isObj(j.usage)) this.usage = j.usage;
    if (isObj(j.timings)) this.timings = j.timings;
    const choice = Array.isArray(j.choices) && isObj(j.choices[0]) ? j.choices[0] : undefined;
    if (!choice) return;
    const delta = isObj(choice.delta) ? choice.delta : isObj(choice.message) ? choice.message : {};
    const reasoning = typeof delta.reasoning_content === "string" ? delta.reasoning_content : typeof delta.reasoning === "string" ? delta.reasoning : "";
    const content = typeof delta.content === "string" ? delta.content : typeof choice.text === "string" ? choice.text : "";
    if (reasoning || content) {
      this.firstAt ??= nowNs();
      this.pieces++;
    }
    if (reasoning) this.out.push({ type: "thinking", text: reasoning });
    if (content) this.out.push({ type: "content", text: content });
    if (Array.isArray(delta.tool_calls)) {
      this.firstAt ??= nowNs();
      this.tools.add(delta.tool_calls);
    }
    if (typeof choice.finish_reason === "string") this.finish = choice.finish_reason;
  }

  /** [DONE], or the body's end: the assembled tool calls and the stats. */
  private complete(): void {
    if (this.finish === undefined && this.usage === undefined) throw new EngineError("upstream_down", "the upstream ended the stream without a final response");
    if (this.finish !== undefined && FAILED_FINISH.has(this.finish)) {
      throw new EngineError("upstream_down", `the upstream gave up on the answer (finish_reason "${this.finish}"); see the upstream's log`);
    }
    if (this.tools.size > 0) this.out.push({ type: "tool_calls", calls: this.tools.take() });
    this.out.push({ type: "done", ...stats(this.finish, this.usage, this.timings, this.startedAt, this.firstAt, this.pieces) });
    this.finished = true;
  }
}

/** `text` as JSON, or as itself when it is not JSON (`strict`: not JSON is the upstream's fault). */
function parseOr(text: string, strict = false): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    if (strict) throw badAnswer(`not JSON: ${text.trim().slice(0, 80)}`);
    return text;
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
