// OpenAI's /v1 as an upstream: vLLM, SGLang, llama-server, TGI, LM Studio. Chat and completions
// streamed as SSE with usage in the last chunk (`stream_options.include_usage`), thinking from
// `reasoning_content` (vLLM, llama-server) or `reasoning`, tool calls assembled from their
// streamed deltas, `format` as `response_format` plus vLLM's `guided_json`, think as the chat
// template's `enable_thinking` (or `reasoning_effort` for a level). Tokenize and health live at
// the server's root (`/tokenize`, `/health`: vLLM and llama-server), not under /v1.
import { isPromptJob, type EmbedOptions, type EmbedResult, type GenerateJob, type JobMessage } from "../backend.js";
import { badAnswer, isObj, num, vectors, type Dialect, type HttpCall, type Json, type StreamReader, type UpstreamFormat } from "./dialect.js";
import { OpenAIReader } from "./openai-reader.js";

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

function responseFormat(f: UpstreamFormat): Json {
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
      ...(job.format ? responseFormat(job.format.value as UpstreamFormat) : {}),
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
    const data = [...(json.data as unknown[])].sort((a, b) => (isObj(a) ? (num(a.index) ?? 0) : 0) - (isObj(b) ? (num(b.index) ?? 0) : 0));
    const usage = isObj(json.usage) ? json.usage : {};
    return { embeddings: vectors(data.map((d) => (isObj(d) ? d.embedding : undefined))), promptEvalCount: num(usage.prompt_tokens) ?? 0 };
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
