// One answer from the model, streamed to stdout (cmd.go generate and chat): a spinner on stderr
// until the first visible chunk, the text (word-wrapped, thinking in grey), then the --verbose stats.

import type { Client } from "../api/client.js";
import type { ChatResponse, Format, GenerateResponse, KeepAlive, Message, Metrics, ThinkValue, ToolCall } from "../api/types.js";
import { formatSummary } from "./format.js";
import { Progress, Spinner } from "./progress.js";
import { ResponseWriter } from "./response-writer.js";

export interface AnswerOptions {
  model: string;
  format?: Format;
  options?: Record<string, unknown>;
  keepAlive?: KeepAlive;
  think?: ThinkValue;
  wordWrap: boolean;
  hideThinking: boolean;
  verbose: boolean;
}

const stdoutWidth = () => process.stdout.columns ?? 80;
const writeOut = (s: string) => void process.stdout.write(s);

function isAbort(err: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true || (err instanceof Error && err.name === "AbortError");
}

function common(opts: AnswerOptions) {
  return {
    ...(opts.format !== undefined ? { format: opts.format } : {}),
    ...(opts.options && Object.keys(opts.options).length > 0 ? { options: opts.options } : {}),
    ...(opts.keepAlive !== undefined ? { keep_alive: opts.keepAlive } : {}),
    ...(opts.think !== undefined ? { think: opts.think } : {}),
  };
}

/** Non-interactive run: /api/generate, printed to stdout, then a blank line. False if cancelled. */
export async function generateAnswer(
  client: Client,
  opts: AnswerOptions & { prompt: string; system?: string; images?: string[] },
  signal?: AbortSignal,
): Promise<boolean> {
  const progress = new Progress(process.stderr);
  progress.add(new Spinner(""));
  const writer = new ResponseWriter(writeOut, stdoutWidth, {
    wordWrap: opts.wordWrap,
    hideThinking: opts.hideThinking,
    plain: process.stdout.isTTY !== true,
    toolCallsFirst: false,
  });
  let latest: GenerateResponse | undefined;
  try {
    await client.generate(
      {
        model: opts.model,
        prompt: opts.prompt,
        ...(opts.system ? { system: opts.system } : {}),
        ...(opts.images && opts.images.length > 0 ? { images: opts.images } : {}),
        ...common(opts),
      },
      (chunk) => {
        latest = chunk;
        const part = { content: chunk.response ?? "", thinking: chunk.thinking, toolCalls: (chunk as { tool_calls?: ToolCall[] }).tool_calls };
        if (writer.visible(part)) progress.stopAndClear();
        writer.push(part);
      },
      signal,
    );
  } catch (err) {
    if (isAbort(err, signal)) return false;
    throw err;
  } finally {
    progress.stopAndClear();
  }
  if (opts.prompt !== "") process.stdout.write("\n\n");
  if (latest?.done && opts.verbose) process.stderr.write(formatSummary(latest as Metrics));
  return true;
}

/** Interactive turn: /api/chat with the whole conversation. Undefined when cancelled (Ctrl+C). */
export async function chatAnswer(
  client: Client,
  opts: AnswerOptions & { messages: Message[] },
  signal?: AbortSignal,
): Promise<Message | undefined> {
  const progress = new Progress(process.stderr);
  progress.add(new Spinner(""));
  const writer = new ResponseWriter(writeOut, stdoutWidth, {
    wordWrap: opts.wordWrap,
    hideThinking: opts.hideThinking,
    plain: false,
    toolCallsFirst: true,
  });
  let latest: ChatResponse | undefined;
  let role = "assistant";
  try {
    await client.chat(
      { model: opts.model, messages: opts.messages, ...common(opts) },
      (chunk) => {
        if (signal?.aborted) return; // lines already read when the user stopped are not shown
        latest = chunk;
        const msg = chunk.message ?? { role: "assistant", content: "" };
        const part = { content: msg.content ?? "", thinking: msg.thinking, toolCalls: msg.tool_calls };
        if (writer.visible(part)) progress.stopAndClear();
        if (msg.role) role = msg.role;
        writer.push(part);
      },
      signal,
    );
  } catch (err) {
    if (isAbort(err, signal)) return undefined;
    throw err;
  } finally {
    progress.stopAndClear();
  }
  if (opts.messages.length > 0) process.stdout.write("\n\n");
  if (latest && opts.verbose) process.stderr.write(formatSummary(latest));
  return { role, content: writer.content, ...(writer.thinking ? { thinking: writer.thinking } : {}) };
}
