// Pieces of OpenAI's response shape that /v1/chat/completions and /v1/completions share.
import { randomBytes } from "node:crypto";

export function newId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString("base64url")}`;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export function usageOf(done: { promptEvalCount: number; evalCount: number }): Usage {
  return { prompt_tokens: done.promptEvalCount, completion_tokens: done.evalCount, total_tokens: done.promptEvalCount + done.evalCount };
}

export function finishReason(doneReason: string, sawToolCalls: boolean): string {
  return doneReason === "stop" && sawToolCalls ? "tool_calls" : doneReason;
}
