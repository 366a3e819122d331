// The completion's events as Anthropic Messages answers: one `message` object (stream: false), or
// the server-sent events the SDKs accumulate: message_start, then each content block (thinking,
// text, tool_use) opened with content_block_start, grown with content_block_delta and closed with
// content_block_stop, then message_delta (stop_reason, usage) and message_stop. Block order and
// stop reasons as Ollama's converter makes them; a thinking block is closed by the first text or
// tool call after it.
import { randomBytes } from "node:crypto";
import type { ToolCall } from "../../../api/types.js";
import { encodeBatches, type Batches } from "../../../backends/batches.js";
import type { CompletionEvent } from "../openai/events.js";

export interface MessageMeta {
  id: string;
  model: string;
  estimatedInputTokens: number;
}

export function messageId(): string {
  return `msg_${randomBytes(12).toString("hex")}`;
}

type Done = Extract<CompletionEvent, { type: "done" }>;

/** One server-sent event: its `type` is also the event's name. */
export interface MessageEvent {
  type: string;
  [field: string]: unknown;
}

/** Ollama's done_reason as Anthropic's stop_reason: a tool call wins over the reason it stopped. */
export function stopReason(doneReason: string, sawToolCalls: boolean): string | null {
  if (sawToolCalls) return "tool_use";
  switch (doneReason) {
    case "stop":
      return "end_turn";
    case "length":
      return "max_tokens";
    case "":
      return null;
    default:
      return "stop_sequence";
  }
}

function toolUse(tc: ToolCall): { type: "tool_use"; id: string; name: string; input: Record<string, unknown> } {
  return { type: "tool_use", id: tc.id ?? `toolu_${randomBytes(12).toString("hex")}`, name: tc.function.name, input: (tc.function.arguments ?? {}) as Record<string, unknown> };
}

function usage(done: Done): { input_tokens: number; output_tokens: number } {
  return { input_tokens: done.promptEvalCount, output_tokens: done.evalCount };
}

/** stream: false: thinking, then text, then the tool calls, as Ollama orders them. */
export async function messageResponse(events: AsyncIterable<CompletionEvent>, meta: MessageMeta): Promise<object> {
  let thinking = "";
  let text = "";
  const calls: ReturnType<typeof toolUse>[] = [];
  for await (const ev of events) {
    switch (ev.type) {
      case "thinking":
        thinking += ev.text;
        break;
      case "content":
        text += ev.text;
        break;
      case "tool_calls":
        calls.push(...ev.calls.map(toolUse));
        break;
      case "done":
        return {
          id: meta.id,
          type: "message",
          role: "assistant",
          model: meta.model,
          content: [...(thinking ? [{ type: "thinking", thinking, signature: "" }] : []), ...(text ? [{ type: "text", text }] : []), ...calls],
          stop_reason: stopReason(ev.doneReason, calls.length > 0),
          stop_sequence: null,
          usage: usage(ev),
        };
    }
  }
  throw new Error("generation ended without a final response");
}

/** stream: true: the SSE events (each object's `type` is its event name). */
export function messageEvents(events: Batches<CompletionEvent>, meta: MessageMeta): Batches<MessageEvent> {
  let started = false;
  let index = 0;
  /** The block being written: its kind, or none. */
  let open: "thinking" | "text" | undefined;
  let toolCalls = 0;
  const close = (out: MessageEvent[]) => {
    if (open === undefined) return;
    out.push({ type: "content_block_stop", index });
    index++;
    open = undefined;
  };
  const begin = (out: MessageEvent[], kind: "thinking" | "text") => {
    if (open === kind) return;
    close(out);
    open = kind;
    out.push({ type: "content_block_start", index, content_block: kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" } });
  };
  const step = (ev: CompletionEvent, out: MessageEvent[]): boolean => {
    if (!started) {
      started = true;
      out.push({
        type: "message_start",
        message: { id: meta.id, type: "message", role: "assistant", model: meta.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: meta.estimatedInputTokens, output_tokens: 0 } },
      });
    }
    switch (ev.type) {
      case "thinking":
        if (ev.text === "") return false;
        begin(out, "thinking");
        out.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: ev.text } });
        return false;
      case "content":
        // An empty content event is a heartbeat while the model loads: a ping keeps the client waiting.
        if (ev.text === "") {
          out.push({ type: "ping" });
          return false;
        }
        begin(out, "text");
        out.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: ev.text } });
        return false;
      case "tool_calls":
        for (const tc of ev.calls) {
          close(out);
          const block = toolUse(tc);
          out.push({ type: "content_block_start", index, content_block: { ...block, input: {} } });
          out.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
          out.push({ type: "content_block_stop", index });
          index++;
          toolCalls++;
        }
        return false;
      case "done":
        close(out);
        out.push({ type: "message_delta", delta: { stop_reason: stopReason(ev.doneReason, toolCalls > 0), stop_sequence: null }, usage: usage(ev) });
        out.push({ type: "message_stop" });
        return true;
    }
  };
  return encodeBatches(events, step, true);
}
