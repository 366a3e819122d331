// Adapts a conversation to what a Jinja chat template can render (jinja-capabilities.ts) instead of
// failing the request where the template would raise, as llama.cpp adapts them: system text folded
// into the next user message, tool results as user messages (JSON naming the tool), arguments as a
// JSON string, tool call ids as 9 alphanumerics, runs of user messages joined, parallel calls
// as one call a turn, each followed by its result (a template that takes one call at a time), and
// a calling message's text joined to its thinking (gpt-oss's takes one or the other), system
// messages after the first folded into the next user message (opening ones joined), an empty
// user turn before an opening greeting of the assistant, an empty answer between tool results and
// a user message, an empty answer as one space where a template refuses it empty, and an empty
// question where a template wants a user message and the conversation has none.

import type { JinjaCapabilities } from "./jinja-capabilities.js";

export interface JinjaMessage {
  role: string;
  content: string;
  tool_calls?: Array<{ id?: string; type: string; function: { name: string; arguments: unknown } }>;
  name?: string;
  tool_call_id?: string;
  [key: string]: unknown;
}

/** Whether `caps` would change this conversation (the messages are then adapted). */
export function needsPolyfill(messages: JinjaMessage[], caps: JinjaCapabilities): boolean {
  const opening = messages.findIndex((m) => m.role !== "system");
  if (!caps.withoutUser && !messages.some((m) => m.role === "user")) return true;
  return messages.some(
    (m, i) =>
      (!caps.systemRole && m.role === "system") ||
      (!caps.laterSystem && m.role === "system" && i > 0) ||
      (!caps.assistantFirst && m.role === "assistant" && i === opening) ||
      (!caps.userAfterTool && m.role === "user" && answersCalls(messages, i)) ||
      (!caps.emptyAssistant && m.role === "assistant" && !m.content && !m.tool_calls) ||
      (m.tool_calls && (!caps.objectArguments || !caps.anyToolCallIds || (!caps.parallelToolCalls && m.tool_calls.length > 1) || (!caps.callTextAndThinking && !!m.content && !!m.thinking))) ||
      (m.role === "tool" && (!caps.toolRole || !caps.anyToolCallIds)) ||
      (!caps.consecutiveRoles && i > 0 && mergeable(messages[i - 1]!, m)),
  );
}

export function polyfillMessages(messages: JinjaMessage[], caps: JinjaCapabilities): JinjaMessage[] {
  if (!needsPolyfill(messages, caps)) return messages;
  let out = messages.map((m) => ({ ...m }));
  // an empty question where a template wants one (Qwen3.5's raises on a system prompt alone); first,
  // so that a system prompt folded into a user message has one to go into
  if (!caps.withoutUser && !out.some((m) => m.role === "user")) {
    const first = out.findIndex((m) => m.role !== "system");
    out.splice(first === -1 ? out.length : first, 0, { role: "user", content: "" });
  }
  if (!caps.callTextAndThinking) out = out.map((m) => (m.tool_calls && m.content && m.thinking ? thoughtOnly(m) : m));
  if (!caps.parallelToolCalls) out = oneCallATurn(out);
  // an empty answer between tool results and the next question, as if the model had said nothing
  if (!caps.userAfterTool) out = out.flatMap((m, i) => (m.role === "user" && answersCalls(out, i) ? [{ role: "assistant", content: "" }, m] : [m]));
  if (!caps.anyToolCallIds) out = shortIds(out);
  if (!caps.objectArguments) {
    for (const m of out) if (m.tool_calls) m.tool_calls = m.tool_calls.map((c) => ({ ...c, function: { ...c.function, arguments: JSON.stringify(c.function.arguments ?? {}) } }));
  }
  if (!caps.toolRole) {
    out = out.map((m) =>
      m.role !== "tool"
        ? m
        : { role: "user", content: JSON.stringify({ tool_response: { ...(m.name ? { tool: m.name } : {}), ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}), content: m.content } }, null, 2) },
    );
  }
  if (!caps.systemRole) out = foldSystem(out);
  else if (!caps.laterSystem) {
    const rest = out.findIndex((m) => m.role !== "system");
    out = [...leadingSystem(out), ...(rest === -1 ? [] : foldSystem(out.slice(rest)))];
  }
  if (!caps.emptyAssistant) out = out.map((m) => (m.role === "assistant" && !m.content && !m.tool_calls ? { ...m, content: " " } : m));
  if (!caps.assistantFirst) {
    const first = out.findIndex((m) => m.role !== "system");
    if (out[first]?.role === "assistant") out.splice(first, 0, { role: "user", content: "" });
  }
  if (!caps.consecutiveRoles) out = mergeRuns(out);
  return out;
}

/** Whether the messages right before `i` are tool results answering an assistant's calls. */
function answersCalls(messages: JinjaMessage[], i: number): boolean {
  let j = i - 1;
  while (messages[j]?.role === "tool") j--;
  return j < i - 1 && messages[j]?.role === "assistant" && !!messages[j]!.tool_calls;
}

/** The system messages a conversation opens with, as one (none when it opens otherwise). */
function leadingSystem(messages: JinjaMessage[]): JinjaMessage[] {
  const end = messages.findIndex((m) => m.role !== "system");
  const lead = end === -1 ? messages : messages.slice(0, end);
  return lead.length === 0 ? [] : [{ ...lead[0]!, content: lead.map((m) => m.content).join("\n\n") }];
}

/** System messages join the next user message (or become one, when none follows). */
function foldSystem(messages: JinjaMessage[]): JinjaMessage[] {
  const out: JinjaMessage[] = [];
  let pending: string[] = [];
  for (const m of messages) {
    if (m.role === "system") pending.push(m.content);
    else if (m.role === "user" && pending.length) {
      out.push({ ...m, content: (m.content ? [...pending, m.content] : pending).join("\n\n") });
      pending = [];
    } else out.push(m);
  }
  if (pending.length) out.push({ role: "user", content: pending.join("\n\n") });
  return out;
}

/** Two user (or assistant) messages in a row, which an alternating template refuses; tool results
 *  in a row are how parallel calls are answered, and those templates take them. */
const mergeable = (a: JinjaMessage, b: JinjaMessage): boolean =>
  a.role === b.role && (a.role === "user" || a.role === "assistant") && !a.tool_calls && !b.tool_calls;

/** Such runs become one message, their text joined by a blank line. */
function mergeRuns(messages: JinjaMessage[]): JinjaMessage[] {
  const out: JinjaMessage[] = [];
  for (const m of messages) {
    const last = out.at(-1);
    if (last && mergeable(last, m)) out[out.length - 1] = { ...last, content: [last.content, m.content].filter(Boolean).join("\n\n") };
    else out.push(m);
  }
  return out;
}

/** A message's text joins its thinking (gpt-oss's template takes one or the other beside calls:
 *  Ollama's answers carry both, and a client sends the message back as it got it). */
function thoughtOnly(m: JinjaMessage): JinjaMessage {
  const thinking = `${String(m.thinking)}\n\n${m.content}`;
  return { ...m, content: "", thinking, ...(m.reasoning_content !== undefined ? { reasoning_content: thinking } : {}) };
}

/** An assistant message with several calls becomes one message a call, each followed by its
 *  result (matched by id, else in order) from the results that answered them; its text and
 *  thinking stay with the first. */
function oneCallATurn(messages: JinjaMessage[]): JinjaMessage[] {
  const out: JinjaMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role !== "assistant" || !m.tool_calls || m.tool_calls.length < 2) {
      out.push(m);
      continue;
    }
    const results: JinjaMessage[] = [];
    while (messages[i + 1]?.role === "tool") results.push(messages[++i]!);
    const { thinking: _t, reasoning_content: _r, ...bare } = m;
    m.tool_calls.forEach((c, k) => {
      out.push(k === 0 ? { ...m, tool_calls: [c] } : { ...bare, content: "", tool_calls: [c] });
      const byId = c.id === undefined ? -1 : results.findIndex((r) => r.tool_call_id === c.id);
      const at = byId !== -1 ? byId : results.findIndex((r) => r.tool_call_id === undefined || !m.tool_calls!.some((x) => x.id === r.tool_call_id));
      if (at !== -1) out.push(results.splice(at, 1)[0]!);
    });
    out.push(...results);
  }
  return out;
}

/** Every id (and a missing one) replaced by 9 alphanumerics, consistently between a call and its
 *  result; the ids only feed the prompt, so nothing maps them back. Numbered by first appearance,
 *  so an earlier turn's ids stay the same as the conversation grows (the prompt cache keeps them). */
function shortIds(messages: JinjaMessage[]): JinjaMessage[] {
  const ids = new Map<string, string>();
  const kept = new Set(messages.flatMap((m) => [...(m.tool_calls ?? []).map((c) => c.id), m.tool_call_id]).filter((id): id is string => /^[A-Za-z0-9]{9}$/.test(id ?? "")));
  let n = 0;
  const fresh = (): string => {
    let id: string;
    do id = `call${String(++n).padStart(5, "0")}`;
    while (kept.has(id));
    return id;
  };
  const short = (id: string | undefined): string => {
    if (id === undefined) return fresh();
    if (!ids.has(id)) ids.set(id, kept.has(id) ? id : fresh());
    return ids.get(id)!;
  };
  let unanswered: string[] = [];
  return messages.map((m) => {
    if (m.tool_calls) {
      const calls = m.tool_calls.map((c) => ({ ...c, id: short(c.id) }));
      unanswered = calls.map((c) => c.id);
      return { ...m, tool_calls: calls };
    }
    if (m.role === "tool") {
      // A result without an id answers the next unanswered call of the turn before it.
      const id = m.tool_call_id !== undefined ? short(m.tool_call_id) : unanswered[0] ?? short(undefined);
      unanswered = unanswered.filter((x) => x !== id);
      return { ...m, tool_call_id: id };
    }
    return m;
  });
}
