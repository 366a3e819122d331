// Ollama's /api as an upstream (another Ollama or ollamats host): /api/chat and /api/generate
// streamed as NDJSON, /api/embed, /api/tokenize where the host has it (ollamats), /api/version
// as the health check. Stats come back as Ollama reports them.
import type { EmbedResult, GenerateJob, RunnerEvent, StructuredOutput } from "../backend.js";
import { isPromptJob } from "../backend.js";
import { EngineError } from "../errors.js";
import { badAnswer, formatValue, isObj, num, parseLine, samplingFields, type Dialect, type HttpCall, type Json } from "./dialect.js";

export class OllamaDialect implements Dialect {
  constructor(private readonly base: string) {}

  generate(job: GenerateJob, model: string): HttpCall {
    const s = job.sampling;
    const options: Json = {
      ...samplingFields(s),
      repeat_last_n: s.repeatLastN,
      repeat_penalty: s.repeatPenalty,
      presence_penalty: s.presencePenalty,
      frequency_penalty: s.frequencyPenalty,
      num_predict: job.numPredict,
      ...(job.stop.length > 0 ? { stop: job.stop } : {}),
      ...(job.numKeep !== undefined ? { num_keep: job.numKeep } : {}),
    };
    const format = job.format ? { format: formatValue(job.format.value as StructuredOutput) } : {};
    const common = { model, stream: true, options, ...format, ...(job.truncate === false ? { truncate: false } : {}), ...(job.shift === false ? { shift: false } : {}) };
    if (isPromptJob(job)) {
      return {
        url: `${this.base}/api/generate`,
        body: { ...common, prompt: job.prompt, raw: true, ...(job.prefixTokens?.length ? { context: job.prefixTokens } : {}) },
      };
    }
    return {
      url: `${this.base}/api/chat`,
      body: { ...common, messages: job.messages, ...(job.tools?.length ? { tools: job.tools } : {}), ...(job.think !== undefined ? { think: job.think } : {}) },
    };
  }

  async *events(lines: AsyncIterable<string>): AsyncIterable<RunnerEvent> {
    for await (const line of lines) {
      const j = parseLine(line);
      if (typeof j.error === "string") throw new EngineError("runner_failed", j.error);
      const msg = isObj(j.message) ? j.message : undefined;
      const thinking = typeof msg?.thinking === "string" ? msg.thinking : typeof j.thinking === "string" ? j.thinking : "";
      const content = typeof msg?.content === "string" ? msg.content : typeof j.response === "string" ? j.response : "";
      if (thinking) yield { type: "thinking", text: thinking };
      if (content) yield { type: "content", text: content };
      if (Array.isArray(msg?.tool_calls) && msg.tool_calls.length > 0) yield { type: "tool_calls", calls: msg.tool_calls as never };
      if (j.done === true) {
        yield {
          type: "done",
          doneReason: j.done_reason === "length" ? "length" : "stop",
          promptEvalCount: num(j.prompt_eval_count) ?? 0,
          promptEvalDurationNs: num(j.prompt_eval_duration) ?? 0,
          evalCount: num(j.eval_count) ?? 0,
          evalDurationNs: num(j.eval_duration) ?? 0,
          ...(Array.isArray(j.context) ? { context: j.context as number[] } : {}),
        };
        return;
      }
    }
    throw new EngineError("upstream_down", "the upstream ended the stream without a final response");
  }

  embed(inputs: string[], model: string, opts: { truncate: boolean; dimensions?: number }): HttpCall {
    return { url: `${this.base}/api/embed`, body: { model, input: inputs, truncate: opts.truncate, ...(opts.dimensions ? { dimensions: opts.dimensions } : {}) } };
  }

  embedResult(json: unknown): EmbedResult {
    if (!isObj(json) || !Array.isArray(json.embeddings)) throw badAnswer("no embeddings");
    return { embeddings: json.embeddings as number[][], promptEvalCount: num(json.prompt_eval_count) ?? 0 };
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

  health(): string[] {
    return [`${this.base}/api/version`];
  }
}
