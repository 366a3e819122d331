// Completion events for the unit tests of the /v1 and Anthropic encoders: a final event with
// fixed counts (7 prompt tokens, 3 generated), and a list as the stream a completion gives.
import type { CompletionEvent } from "../../src/daemon/routes/openai/events.js";

export const done = (doneReason: "stop" | "length" = "stop"): CompletionEvent => ({
  type: "done",
  doneReason,
  promptEvalCount: 7,
  promptEvalDurationNs: 10,
  evalCount: 3,
  evalDurationNs: 20,
});

export async function* from(events: CompletionEvent[]): AsyncIterable<CompletionEvent> {
  yield* events;
}
