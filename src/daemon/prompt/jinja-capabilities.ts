// What a Jinja chat template can render, found once per template by rendering small probe
// conversations (as llama.cpp's chat-template capabilities do): a system role, tool calls with
// object or only JSON-string arguments, tool-role results, tool call ids of any form, two messages
// of one role in a row, several calls in one message, text and thinking beside calls, a system
// message after the first, a conversation opening with the assistant, a user message right after
// tool results, an empty assistant message, no user message at all. jinja-polyfills.ts adapts a conversation to what is missing.
// A part of the conversation counts as missing only where the template raises on it: one that
// renders without it (drops a tool result, shows no tool call) renders as transformers would.
// The form of arguments and ids is the client's choice in transformers too, so there the form
// the template shows is taken.

export interface JinjaCapabilities {
  /** A system message is not refused. */
  systemRole: boolean;
  /** Assistant tool calls show their arguments (in one form or the other). */
  toolCalls: boolean;
  /** Tool-call arguments may be an object; else the template wants them as a JSON string. */
  objectArguments: boolean;
  /** role "tool" results are not refused. */
  toolRole: boolean;
  /** Tool call ids of any form; else 9 alphanumerics (Mistral's templates raise otherwise). */
  anyToolCallIds: boolean;
  /** Two messages of one role in a row render (Gemma 2 demands alternation). */
  consecutiveRoles: boolean;
  /** An assistant message with several tool calls shows them all (Llama 3.x's raise: "only
   *  supports single tool-calls at once"; gpt-oss's shows the first). */
  parallelToolCalls: boolean;
  /** A message with tool calls may have both text and thinking (gpt-oss's raises). */
  callTextAndThinking: boolean;
  /** A system message after the first message, or a second one (Qwen3.5's raises "System
   *  message must be at the beginning"; Mistral's). */
  laterSystem: boolean;
  /** The conversation may open with the assistant's greeting (Gemma 2's and Mistral's raise). */
  assistantFirst: boolean;
  /** A user message may follow tool results with no answer between (Mistral's raise). */
  userAfterTool: boolean;
  /** An assistant message may be empty (Ministral 3's raises). */
  emptyAssistant: boolean;
  /** A conversation may have no user message (Qwen3.5's raises "No user query found in messages";
   *  Mistral's drop a system prompt that has no user message to go with). */
  withoutUser: boolean;
}

export const ALL_CAPABILITIES: JinjaCapabilities = {
  systemRole: true, toolCalls: true, objectArguments: true, toolRole: true, anyToolCallIds: true, consecutiveRoles: true, parallelToolCalls: true, callTextAndThinking: true,
  laterSystem: true, assistantFirst: true, userAfterTool: true, emptyAssistant: true, withoutUser: true,
};

import { TemplateSizeError, TemplateTimeoutError } from "./render-budget.js";

type Probe = (context: Record<string, unknown>) => string;
const ARG_NEEDLE = "argument_needle";
const tools = [{ type: "function", function: { name: "tool1", description: "A tool", parameters: { type: "object", properties: { arg: { type: "string" } } } } }];
const user = (content = "user message") => ({ role: "user", content });
const call = (args: unknown, id = "call00001", more: unknown[] = []) => ({
  role: "assistant",
  content: "",
  tool_calls: [args, ...more].map((a, i) => ({ id: i === 0 ? id : `call0000${i + 1}`, type: "function", function: { name: "tool1", arguments: a } })),
});
const result = (id = "call00001") => ({ role: "tool", content: "tool result", name: "tool1", tool_call_id: id });

/** The probes' own renders: a failure is an answer, not an error. */
function attempt(render: Probe, messages: unknown[], withTools = false): string | undefined {
  try {
    return render({ messages, ...(withTools ? { tools } : {}), add_generation_prompt: true, bos_token: "", eos_token: "" });
  } catch (err) {
    // Out of time or room is no answer about the template: the render fails instead.
    if (err instanceof TemplateTimeoutError || err instanceof TemplateSizeError) throw err;
    return undefined;
  }
}
const renders = (out: string | undefined, needle: string): boolean => out !== undefined && out.includes(needle);

export function detectCapabilities(render: Probe): JinjaCapabilities {
  const caps = { ...ALL_CAPABILITIES };
  // A template that cannot render one user message says nothing about the rest: left as it is.
  if (attempt(render, [user()]) === undefined) return caps;

  caps.systemRole = attempt(render, [{ role: "system", content: "system message" }, user()]) !== undefined;
  caps.consecutiveRoles = attempt(render, [user(), user("another")]) !== undefined;
  caps.laterSystem = !caps.systemRole || attempt(render, [{ role: "system", content: "system message" }, user(), { role: "assistant", content: "ok" }, { role: "system", content: "later" }, user("another")]) !== undefined;
  caps.assistantFirst = attempt(render, [{ role: "assistant", content: "greeting" }, user()]) !== undefined;
  caps.emptyAssistant = attempt(render, [user(), { role: "assistant", content: "" }, user("another")]) !== undefined;
  // a system prompt alone must render and show (Mistral's templates put it with the last user message)
  caps.withoutUser = caps.systemRole ? renders(attempt(render, [{ role: "system", content: "system_needle" }]), "system_needle") : attempt(render, [{ role: "assistant", content: "greeting" }]) !== undefined;

  const objArgs = { [ARG_NEEDLE]: "print('hello')" };
  const objectOk = renders(attempt(render, [user(), call(objArgs)], true), ARG_NEEDLE);
  const stringOk = !objectOk && renders(attempt(render, [user(), call(JSON.stringify(objArgs))], true), ARG_NEEDLE);
  caps.toolCalls = objectOk || stringOk;
  caps.objectArguments = !stringOk;
  const args = caps.objectArguments ? objArgs : JSON.stringify(objArgs);

  const answered = caps.toolCalls ? call(args) : { role: "assistant", content: "ok" };
  caps.toolRole = attempt(render, [user(), answered, result()], true) !== undefined;
  // Ids matter only where a well-formed one renders and ours does not (Mistral's 9 alphanumerics).
  caps.anyToolCallIds = !caps.toolCalls || attempt(render, [user(), call(args, "call_1")], true) !== undefined;
  const second = caps.objectArguments ? { [`${ARG_NEEDLE}_2`]: "2" } : JSON.stringify({ [`${ARG_NEEDLE}_2`]: "2" });
  caps.parallelToolCalls = !caps.toolCalls || renders(attempt(render, [user(), call(args, "call00001", [second])], true), `${ARG_NEEDLE}_2`);
  caps.userAfterTool = !caps.toolCalls || !caps.toolRole || attempt(render, [user(), call(args), result(), user("another")], true) !== undefined;
  caps.callTextAndThinking = !caps.toolCalls || attempt(render, [user(), { ...call(args), content: "text", thinking: "thought", reasoning_content: "thought" }], true) !== undefined;
  return caps;
}
