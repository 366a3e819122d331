// The one seam between the completion layer and the /v1 encoders: the completion's single event
// stream (content / thinking / tool_calls / done, in batches), the same one the /api encoders consume.
import type { ToolCall } from "../../../api/types.js";
import type { GenerateStats, Logprob } from "../../../backends/backend.js";
import type { Batches } from "../../../backends/batches.js";
import type { Completion } from "../../services/completion.js";

/** What the /v1 encoders read of completion.ts's CompletionEvent (structurally a supertype). */
export type CompletionEvent =
  | { type: "content"; text: string; logprobs?: Logprob[] }
  | { type: "thinking"; text: string; logprobs?: Logprob[] }
  | { type: "tool_calls"; calls: ToolCall[] }
  | ({ type: "done" } & GenerateStats);

export function completionBatches(c: Completion): Batches<CompletionEvent> {
  return c.batches;
}
