// Ollama's /api as an upstream (another Ollama or ollamats host): /api/chat and /api/generate
// streamed as NDJSON, /api/embed, /api/tokenize where the host has it (ollamats), /api/version
// as the health check. Stats come back as Ollama reports them.
import type { EmbedOptions, EmbedResult, GenerateJob, MessagesJob, RunnerEvent } from "../backend.js";
import { isPromptJob } from "../backend.js";
import { EngineError } from "../errors.js";
import { badAnswer, formatValue, isObj, num, parseLine, reportedError, vectors, type Dialect, type HttpCall, type StreamReader, type UpstreamFormat } from "./dialect.js";

export class OllamaDialect implements Dialect {
  constructor(private readonly base: string) {}

  generate(job: GenerateJob, model: string): HttpCall {
    // The options as set, not defaulted: the upstream model's own PARAMETERs still apply.
    const options = job.options ?? {};
    const format = job.format ? { format: formatValue(job.format.value as UpstreamFormat) } : {};
    const common = { model, stream: true, options, ...format, ...(job.truncate === false ? { truncate: false } : {}), ...(job.shift === false ? { shift: false } : {}) };
    if (isPromptJob(job)) {
      return {
        url: `${this.base}/api/generate`,
        body: { ...common, prompt: job.prompt, raw: true, ...(job.prefixTokens?.length ? { context: job.prefixTokens } : {}) },
      };
    }
    if (job.completion) {
      const c = job.completion;
      return {
        url: `${this.base}/api/generate`,
        body: { ...common, prompt: c.prompt, ...(c.system ? { system: c.system } : {}), ...(c.context ? { context: c.context } : {}), ...(job.think !== undefined ? { think: job.think } : {}) },
      };
    }
    return {
      url: `${this.base}/api/chat`,
      // tool_choice: an ollamats upstream makes the answer a call; Ollama ignores the field
      body: { ...common, messages: job.messages, ...(job.tools?.length ? { tools: job.tools } : {}), ...(job.toolChoice ? { tool_choice: job.toolChoice } : {}), ...(job.think !== undefined ? { think: job.think } : {}) },
    };
  }

  reader(): StreamReader {
    return new OllamaReader();
  }

  embed(inputs: string[], model: string, opts: Omit<EmbedOptions, "signal">): HttpCall {
    const options = opts.options ? { options: opts.options } : {};
    // Raw vectors only come from the legacy endpoint, one input at a time.
    if (opts.raw && inputs.length === 1) return { url: `${this.base}/api/embeddings`, body: { model, prompt: inputs[0], ...options } };
    return { url: `${this.base}/api/embed`, body: { model, input: inputs, truncate: opts.truncate, ...(opts.dimensions ? { dimensions: opts.dimensions } : {}), ...options } };
  }

  embedResult(json: unknown): EmbedResult {
    if (isObj(json) && Array.isArray(json.embedding)) return { embeddings: vectors([json.embedding]), promptEvalCount: 0 };
    if (!isObj(json) || !Array.isArray(json.embeddings)) throw badAnswer("no embeddings");
    return { embeddings: vectors(json.embeddings), promptEvalCount: num(json.prompt_eval_count) ?? 0 };
  }

  tokenize(text: string, model: string): HttpCall {
    return { url: `${this.base}/api/tokenize`, body: { model, content: text } };
  }

  tokens(json: unknown): number[] {
    if (!isObj(json) || !Array.isArray(json.tokens)) throw badAnswer("no tokens");
    return json.tokens as number[];
  }

  detokenize(tokens: number[], model: string): HttpCall {
    return { url: `${this.base}/api/detokenize`, body: { model, tokens } };
  }

  text(json: unknown): string {
    if (!isObj(json) || typeof json.content !== "string") throw badAnswer("no content");
    return json.content;
  }

  render(input: Pick<MessagesJob, "messages" | "tools" | "think" | "completion">, model: string): HttpCall {
    const think = input.think !== undefined ? { think: input.think } : {};
    const c = input.completion;
    if (c) return { url: `${this.base}/api/generate`, body: { model, prompt: c.prompt, ...(c.system ? { system: c.system } : {}), ...think, stream: false, _debug_render_only: true } };
    return { url: `${this.base}/api/chat`, body: { model, messages: input.messages, ...(input.tools?.length ? { tools: input.tools } : {}), ...think, stream: false, _debug_render_only: true } };
  }

  rendered(json: unknown): string {
    const info = isObj(json) && isObj(json._debug_info) ? json._debug_info : undefined;
    if (!info || typeof info.rendered_template !== "string") throw badAnswer("no rendered template");
    return info.rendered_template;
  }

  health(): string[] {
    return [`${this.base}/api/version`];
  }

  loaded(): string {
    return `${this.base}/api/ps`;
  }

  loadedInfo(json: unknown, model: string): { sizeBytes: number; vramBytes: number; contextLength: number } | undefined {
    if (!isObj(json) || !Array.isArray(json.models)) return undefined;
    const names = new Set([model, model.includes(":") ? model : `${model}:latest`]);
    const m = (json.models as unknown[]).find((x) => isObj(x) && (names.has(x.name as string) || names.has(x.model as string)));
    if (!isObj(m)) return undefined;
    return { sizeBytes: num(m.size) ?? 0, vramBytes: num(m.size_vram) ?? 0, contextLength: num(m.context_length) ?? 0 };
  }
}

/** Ollama's NDJSON: one response object a line, the last with done and the stats. */
class OllamaReader implements StreamReader {
  finished = false;

  read(lines: readonly string[], out: RunnerEvent[]): void {
    for (const line of lines) {
      if (this.finished) return;
      const j = parseLine(line);
      if (j.error !== undefined) throw reportedError(j.error);
      const msg = isObj(j.message) ? j.message : undefined;
      const thinking = typeof msg?.thinking === "string" ? msg.thinking : typeof j.thinking === "string" ? j.thinking : "";
      const content = typeof msg?.content === "string" ? msg.content : typeof j.response === "string" ? j.response : "";
      if (thinking) out.push({ type: "thinking", text: thinking });
      if (content) out.push({ type: "content", text: content });
      if (Array.isArray(msg?.tool_calls) && msg.tool_calls.length > 0) out.push({ type: "tool_calls", calls: msg.tool_calls as never });
      if (j.done === true) {
        out.push({
          type: "done",
          doneReason: j.done_reason === "length" ? "length" : "stop",
          promptEvalCount: num(j.prompt_eval_count) ?? 0,
          promptEvalDurationNs: num(j.prompt_eval_duration) ?? 0,
          evalCount: num(j.eval_count) ?? 0,
          evalDurationNs: num(j.eval_duration) ?? 0,
          ...(Array.isArray(j.context) ? { context: j.context as number[] } : {}),
        });
        this.finished = true;
      }
    }
  }

  end(): void {
    throw new EngineError("upstream_down", "the upstream ended the stream without a final response");
  }
}
