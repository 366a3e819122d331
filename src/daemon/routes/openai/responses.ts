// POST /v1/responses: the OpenAI Responses API as Ollama serves it (openai/responses.go and
// middleware/openai.go's ResponsesMiddleware). The request's input items become a native /api/chat
// body (as FromResponsesRequest builds it), run on the shared completion, and the completion's
// events are encoded as one `response` object or as named server-sent events (response.created …
// response.completed, each with a sequence_number). Beyond Ollama, which stores nothing, responses
// are kept (unless `store: false`) so that `previous_response_id` and `item_reference` work, and
// GET / DELETE /v1/responses/{id} answer (response-store.ts). Ollama's web_search tool (a search on
// ollama.com) is not offered to the model.
import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { z } from "zod";
import type { Message, ToolCall } from "../../../api/types.js";
import { encodeBatches, flatten, type Batches } from "../../../backends/batches.js";
import { parseBody } from "../../body.js";
import type { Deps } from "../../deps.js";
import { ApiError, badRequest, toApiError } from "../../errors.js";
import { nowNs } from "../../services/completion.js";
import type { ResponseStore, StoredResponse } from "../../services/response-store.js";
import { jsonResponse } from "../../stream.js";
import { argumentsFromJson, imageFromUrl, openaiToolCalls, thinkFromEffort } from "./chat.js";
import type { CompletionEvent } from "./events.js";
import { startNativeChat } from "./native.js";
import { KEEP_ALIVE, namedSseResponse, type NamedEvent } from "./sse.js";
import { field, invalidType, invalidValue, isObject, missingParameter, modelOf, requestObject, type Obj } from "./validate.js";

const ITEM_TYPES = ["message", "function_call", "function_call_output", "reasoning", "web_search_call", "item_reference"] as const;
const MESSAGE_ROLES = ["user", "assistant", "system", "developer"] as const;
const CONTENT_TYPES = ["input_text", "input_image", "output_text", "input_file"] as const;
const FORMAT_TYPES = ["text", "json_schema", "json_object"] as const;
const PARTS = "one of a string or array of content parts";

/** What the response object repeats of the request (Ollama's ToResponse / buildResponseObject). */
export interface RequestEcho {
  instructions: string | null;
  tools: unknown[];
  text: { format: Obj };
  temperature: number;
  top_p: number;
  reasoning: { effort: string | null; summary: string | null } | null;
  max_output_tokens: number | null;
  truncation: string;
  background: boolean;
  tool_choice: unknown;
  store: boolean;
  previous_response_id: string | null;
}

export interface ResponsesTranslation {
  model: string;
  stream: boolean;
  /** The /api/chat body Ollama's middleware would build. */
  native: Record<string, unknown>;
  echo: RequestEcho;
  /** The request's input items, references resolved, and the stored conversation they follow. */
  input: Obj[];
  prior: Obj[];
}

/** What a request can continue from: stored responses and their items. */
export type ResponseHistory = Pick<ResponseStore, "get" | "item">;

/** Content parts: text concatenated with no separator and images decoded, as Ollama does. */
function contentOf(parts: unknown[], path: string): { text: string; images: string[] } {
  let text = "";
  const images: string[] = [];
  parts.forEach((part, j) => {
    const p = `${path}[${j}]`;
    if (!isObject(part)) throw invalidType(p, "an object", part);
    const type = field.string(part, "type", `${p}.type`);
    switch (type) {
      case undefined:
        throw missingParameter(`${p}.type`);
      case "input_text":
      case "output_text": {
        const t = field.string(part, "text", `${p}.text`);
        if (t === undefined) throw missingParameter(`${p}.text`);
        text += t;
        return;
      }
      case "input_image": {
        // An image given only by file_id is skipped, as Ollama does: there is no file store.
        const url = field.string(part, "image_url", `${p}.image_url`);
        if (url) images.push(imageFromUrl(url));
        return;
      }
      case "input_file":
        throw badRequest("file inputs are not currently supported");
      default:
        throw invalidValue(type, CONTENT_TYPES);
    }
  });
  return { text, images };
}

/** `content` / `output`: a string, an array of parts, or nothing (""). */
function textAndImages(v: unknown, path: string): { text: string; images: string[] } {
  if (typeof v === "string") return { text: v, images: [] };
  if (Array.isArray(v)) return contentOf(v, path);
  if (v === undefined || v === null) return { text: "", images: [] };
  throw invalidType(path, PARTS, v);
}

function inputMessage(item: Obj, path: string): Message {
  const role = field.string(item, "role", `${path}.role`);
  if (role === undefined) throw missingParameter(`${path}.role`);
  if (!(MESSAGE_ROLES as readonly string[]).includes(role)) throw invalidValue(role, MESSAGE_ROLES);
  const { text, images } = textAndImages(item.content, `${path}.content`);
  // "developer" is OpenAI's newer name for system; model templates only know "system"
  return { role: role === "developer" ? "system" : role, content: text, ...(images.length ? { images } : {}) };
}

function functionCall(item: Obj, path: string): ToolCall {
  const callId = field.string(item, "call_id", `${path}.call_id`);
  const name = field.string(item, "name", `${path}.name`);
  if (name === undefined) throw missingParameter(`${path}.name`);
  const args = argumentsFromJson(field.string(item, "arguments", `${path}.arguments`) ?? "");
  return { ...(callId ? { id: callId } : {}), function: { name, arguments: args } };
}

function functionCallOutput(item: Obj, path: string): Message {
  const callId = field.string(item, "call_id", `${path}.call_id`);
  const { text, images } = textAndImages(item.output, `${path}.output`);
  return { role: "tool", content: text, ...(images.length ? { images } : {}), ...(callId ? { tool_call_id: callId } : {}) };
}

/** The call_id of a function_call_output item, when `item` is one. */
function outputCallId(item: unknown): string | undefined {
  return isObject(item) && item.type === "function_call_output" && typeof item.call_id === "string" ? item.call_id : undefined;
}

/**
 * Input items → native messages (FromResponsesRequest): a reasoning item's text goes to the next
 * assistant message, function calls join the assistant message before them, and an assistant
 * message replayed between a call and its output joins the call's message, so the tool result
 * still follows the call it answers.
 */
function conversation(items: unknown[]): Message[] {
  const messages: Message[] = [];
  let pendingThinking = "";
  items.forEach((raw, i) => {
    const path = `input[${i}]`;
    if (!isObject(raw)) throw invalidType(path, "an object", raw);
    // {"role", "content"} without a type is the shorthand for a message
    const type = field.string(raw, "type", `${path}.type`) || (raw.role !== undefined && raw.role !== null ? "message" : undefined);
    const last = messages.at(-1);
    switch (type) {
      case undefined:
        throw missingParameter(`${path}.type`);
      case "reasoning":
        // Ollama's reasoning items carry the thinking as plain text in encrypted_content
        pendingThinking = field.string(raw, "encrypted_content", `${path}.encrypted_content`) ?? "";
        return;
      case "message": {
        const msg = inputMessage(raw, path);
        if (msg.role === "assistant" && pendingThinking) {
          msg.thinking = pendingThinking;
          pendingThinking = "";
        }
        const answered = outputCallId(items[i + 1]);
        if (msg.role === "assistant" && answered && last?.role === "assistant" && last.tool_calls?.some((tc) => tc.id === answered)) {
          last.content = last.content && msg.content ? `${last.content}\n${msg.content}` : last.content + msg.content;
          if (msg.images) last.images = [...(last.images ?? []), ...msg.images];
          if (msg.thinking) last.thinking = msg.thinking;
          return;
        }
        messages.push(msg);
        return;
      }
      case "function_call": {
        const call = functionCall(raw, path);
        const target: Message = last?.role === "assistant" ? last : { role: "assistant", content: "" };
        target.tool_calls = [...(target.tool_calls ?? []), call];
        if (pendingThinking) {
          target.thinking = pendingThinking;
          pendingThinking = "";
        }
        if (target !== last) messages.push(target);
        return;
      }
      case "function_call_output":
        messages.push(functionCallOutput(raw, path));
        return;
      case "web_search_call":
        return; // history metadata: the assistant message after it holds what the search gave
      case "item_reference":
        throw badRequest(`${path}: an item_reference inside a stored item`); // resolved before this
      default:
        throw invalidValue(type, ITEM_TYPES);
    }
  });
  if (pendingThinking) messages.push({ role: "assistant", content: "", thinking: pendingThinking });
  return messages;
}

interface NativeTool {
  type: string;
  function: { name: string; description?: string; parameters?: Obj };
}

/**
 * Responses tools are flat ({type, name, description, parameters}); native ones nest the function.
 * A namespace's member functions become tools named "<namespace>.<member>" (Ollama's
 * convertTools). Built-in tools without a name (web_search, file_search …) are dropped: Ollama
 * runs web_search against ollama.com, which this daemon does not, so the model is not offered it.
 */
function nativeTools(list: unknown[], path: string): NativeTool[] {
  return list.flatMap((t, i): NativeTool[] => {
    const p = `${path}[${i}]`;
    if (!isObject(t)) throw invalidType(p, "an object", t);
    const type = field.string(t, "type", `${p}.type`);
    if (type === undefined) throw missingParameter(`${p}.type`);
    const name = field.string(t, "name", `${p}.name`);
    if (type === "namespace") {
      const members = nativeTools(field.array(t, "tools", `${p}.tools`) ?? [], `${p}.tools`);
      if (!name) return members;
      return members.map((m) => (m.function.name.startsWith(`${name}.`) ? m : { ...m, function: { ...m.function, name: `${name}.${m.function.name}` } }));
    }
    if (!name) {
      if (type === "function") throw missingParameter(`${p}.name`);
      return [];
    }
    const description = field.string(t, "description", `${p}.description`);
    const parameters = field.object(t, "parameters", `${p}.parameters`);
    field.boolean(t, "strict", `${p}.strict`);
    return [{ type, function: { name, ...(description ? { description } : {}), ...(parameters ? { parameters } : {}) } }];
  });
}

/** `text.format` → the native format, and the format as the response repeats it. */
function formatOf(text: Obj | undefined): { format?: "json" | Obj; echo: Obj } {
  const f = text && field.object(text, "format", "text.format");
  if (!f) return { echo: { type: "text" } };
  const type = field.string(f, "type", "text.format.type");
  if (type === undefined) throw missingParameter("text.format.type");
  const name = field.string(f, "name", "text.format.name");
  const schema = field.object(f, "schema", "text.format.schema");
  const strict = field.boolean(f, "strict", "text.format.strict");
  const echo = { type, ...(name ? { name } : {}), ...(schema ? { schema } : {}), ...(strict !== undefined ? { strict } : {}) };
  switch (type) {
    case "text":
      return { echo };
    case "json_object":
      return { format: "json", echo }; // Ollama ignores it; JSON mode is what was asked for
    case "json_schema":
      return { format: schema ?? "json", echo };
    default:
      throw invalidValue(type, FORMAT_TYPES);
  }
}

/** Where stored responses are (in this daemon's memory), for the errors that say one is gone. */
const NOT_KEPT = "stored responses are kept in this daemon's memory, the oldest dropped first and all of them at a restart; send the conversation as input instead";

/** The input as items: a string is one user message; an item_reference is the item it names. */
function inputItems(input: unknown, history: ResponseHistory | undefined): Obj[] {
  if (typeof input === "string") return input === "" ? [] : [{ type: "message", role: "user", content: [{ type: "input_text", text: input }] }];
  if (input === undefined || input === null) return [];
  if (!Array.isArray(input)) throw invalidType("input", "one of a string or array of input items", input);
  return input.map((raw, i) => {
    if (!isObject(raw) || raw.type !== "item_reference") return raw as Obj;
    const id = field.string(raw, "id", `input[${i}].id`);
    if (id === undefined) throw missingParameter(`input[${i}].id`);
    const item = history?.item(id);
    if (!item) throw badRequest(`Item with id '${id}' not found (${NOT_KEPT}).`);
    return item;
  });
}

/** The Responses request → the native /api/chat body (FromResponsesRequest), with OpenAI's checks. */
export function translateResponsesRequest(body: unknown, history?: ResponseHistory): ResponsesTranslation {
  const o = requestObject(body);
  const model = modelOf(o);
  // The Conversations API is not served: refused rather than ignored, which would answer without
  // the context the client believes it sent.
  if (o.conversation !== undefined && o.conversation !== null) throw badRequest("'conversation' is not supported: continue with previous_response_id, or send the whole conversation as input");
  const previous = field.string(o, "previous_response_id");
  const prior = previous ? history?.get(previous)?.conversation : [];
  if (!prior) throw badRequest(`Previous response with id '${previous}' not found (${NOT_KEPT}).`);

  // Instructions are the request's own: a previous response's are not carried over (as OpenAI).
  const instructions = field.string(o, "instructions");
  const input = inputItems(o.input, history);
  const messages: Message[] = [...(instructions ? [{ role: "system", content: instructions }] : []), ...conversation([...prior, ...input])];

  const temperature = field.number(o, "temperature");
  const topP = field.number(o, "top_p");
  const maxOutputTokens = field.integer(o, "max_output_tokens");
  // temperature defaults to OpenAI's 1.0; top_p is left to the model when not sent (Ollama's choice)
  const options: Record<string, unknown> = { temperature: temperature ?? 1.0 };
  if (topP !== undefined) options.top_p = topP;
  if (maxOutputTokens !== undefined) options.num_predict = maxOutputTokens;

  const reasoning = field.object(o, "reasoning");
  const effort = reasoning && field.string(reasoning, "effort", "reasoning.effort");
  const summary = reasoning && field.string(reasoning, "summary", "reasoning.summary");
  const think = thinkFromEffort(effort);

  const { format, echo: formatEcho } = formatOf(field.object(o, "text"));
  const toolList = field.array(o, "tools") ?? [];
  const declared = nativeTools(toolList, "tools");
  // "none" sends no tools; "required" or a function by name makes the answer a call (beyond
  // Ollama, which ignores tool_choice: prompt/tool-choice.ts).
  const tools = o.tool_choice === "none" ? [] : declared;
  const toolChoice = tools.length > 0 && o.tool_choice !== undefined && o.tool_choice !== null ? o.tool_choice : undefined;
  const stream = field.boolean(o, "stream") ?? false;

  const native: Record<string, unknown> = {
    model,
    messages,
    stream,
    options,
    ...(format !== undefined ? { format } : {}),
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(think !== undefined ? { think } : {}),
    ...(o._debug_render_only === true ? { _debug_render_only: true } : {}),
  };
  const echo: RequestEcho = {
    instructions: instructions || null,
    tools: toolList,
    text: { format: formatEcho },
    temperature: temperature ?? 1.0,
    top_p: topP ?? 1.0,
    reasoning: effort || summary ? { effort: effort || null, summary: summary || null } : null,
    max_output_tokens: maxOutputTokens ?? null,
    truncation: field.string(o, "truncation") ?? "disabled",
    background: field.boolean(o, "background") ?? false,
    tool_choice: o.tool_choice ?? "auto",
    store: (field.boolean(o, "store") ?? true) && history !== undefined,
    previous_response_id: previous ?? null,
  };
  return { model, stream, native, echo, input, prior };
}

// ---------- encoding ----------

export interface ResponseMeta {
  id: string;
  /** Unix seconds, the same in every event. */
  createdAt: number;
  model: string;
  echo: RequestEcho;
  /** A non-streamed response always has a message item when it has no function call (Ollama's ToResponse). */
  stream: boolean;
  /** Told the final response object (stored from there). */
  onCompleted?: (response: Obj) => void;
}

export type ResponseEvent = NamedEvent & { sequence_number: number } & Obj;

export function newItemId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString("hex")}`;
}

const textPart = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] });

const messageItem = (id: string, text: string) => ({ id, type: "message", status: "completed", role: "assistant", content: [textPart(text)] });

// The thinking is sent back as-is in encrypted_content, which is what a client returns in its
// next request's reasoning item (Ollama's choice: plain text, not encrypted).
const reasoningItem = (id: string, text: string) => ({ id, type: "reasoning", summary: [{ type: "summary_text", text }], encrypted_content: text });

function usageOf(done: { promptEvalCount: number; evalCount: number }): Obj {
  return {
    input_tokens: done.promptEvalCount,
    output_tokens: done.evalCount,
    total_tokens: done.promptEvalCount + done.evalCount,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 },
  };
}

/**
 * The completion's events as Responses output items and stream events (Ollama's
 * ResponsesStreamConverter). One item is open at a time: thinking opens a reasoning item, text a
 * message item, and each closes the other (with its .done events) before it opens; function calls
 * are whole items of their own. Output indexes follow the order items open, and the final output
 * lists the items in that order. Text after a function call is dropped, as in Ollama. The
 * non-streamed response is built by the same steps, its events unused.
 */
export class ResponseEncoder {
  private seq = 0;
  private started = false;
  private readonly output: Obj[] = [];
  private open: { kind: "reasoning" | "message"; id: string; index: number; text: string } | undefined;
  private sawCalls = false;
  /** The completed response, once `done` has been stepped. */
  completed: Obj | undefined;

  constructor(private readonly meta: ResponseMeta) {}

  private event(type: string, data: Obj): ResponseEvent {
    return { type, ...data, sequence_number: this.seq++ };
  }

  /** The whole response object in a given state (every event that carries one repeats it all). */
  response(status: string, output: Obj[], usage: Obj | null): Obj {
    const e = this.meta.echo;
    return {
      id: this.meta.id,
      object: "response",
      created_at: this.meta.createdAt,
      completed_at: null,
      status,
      incomplete_details: null,
      model: this.meta.model,
      previous_response_id: e.previous_response_id,
      instructions: e.instructions,
      output,
      error: null,
      tools: e.tools,
      tool_choice: e.tool_choice,
      truncation: e.truncation,
      parallel_tool_calls: true,
      text: e.text,
      top_p: e.top_p,
      presence_penalty: 0,
      frequency_penalty: 0,
      top_logprobs: 0,
      temperature: e.temperature,
      reasoning: e.reasoning,
      usage,
      max_output_tokens: e.max_output_tokens,
      max_tool_calls: null,
      store: e.store,
      background: e.background,
      service_tier: "default",
      metadata: {},
      safety_identifier: null,
      prompt_cache_key: null,
    };
  }

  /** Appends the events for one completion event; true at `done` (nothing follows it). */
  step(ev: CompletionEvent, out: NamedEvent[]): boolean {
    const opening = !this.started;
    if (opening) this.begin(out);
    switch (ev.type) {
      case "content":
        // An empty content event is a heartbeat (slow load): the opening events, else a comment.
        if (ev.text !== "") this.text(ev.text, out);
        else if (!opening) out.push(KEEP_ALIVE);
        return false;
      case "thinking":
        if (ev.text !== "") this.thinking(ev.text, out);
        return false;
      case "tool_calls":
        if (ev.calls.length > 0) this.functionCalls(ev.calls, out);
        return false;
      case "done": {
        this.close(out);
        if (!this.meta.stream && !this.output.some((i) => i.type === "message" || i.type === "function_call")) {
          this.output.push(messageItem(newItemId("msg"), ""));
        }
        // cut off by max_output_tokens (or the context): "incomplete", with its own final event
        const cut = ev.doneReason === "length";
        const response = {
          ...this.response(cut ? "incomplete" : "completed", [...this.output], usageOf(ev)),
          ...(cut ? { incomplete_details: { reason: "max_output_tokens" } } : {}),
          completed_at: Math.floor(Date.now() / 1000),
        };
        this.completed = response;
        this.meta.onCompleted?.(response);
        out.push(this.event(cut ? "response.incomplete" : "response.completed", { response }));
        return true;
      }
    }
  }

  /** A generation that fails once streaming began: response.failed ends the stream. */
  failed(err: unknown): NamedEvent[] {
    const out: NamedEvent[] = [];
    if (!this.started) this.begin(out);
    const e = toApiError(err);
    const response = { ...this.response("failed", [...this.output], null), error: { code: e.openaiType, message: e.message } };
    out.push(this.event("response.failed", { response }));
    return out;
  }

  private begin(out: NamedEvent[]): void {
    this.started = true;
    out.push(this.event("response.created", { response: this.response("in_progress", [], null) }));
    out.push(this.event("response.in_progress", { response: this.response("in_progress", [], null) }));
  }

  private thinking(text: string, out: NamedEvent[]): void {
    if (this.open?.kind !== "reasoning") {
      this.close(out);
      this.open = { kind: "reasoning", id: newItemId("rs"), index: this.output.length, text: "" };
      out.push(this.event("response.output_item.added", { output_index: this.open.index, item: { id: this.open.id, type: "reasoning", summary: [] } }));
    }
    const o = this.open;
    o.text += text;
    out.push(this.event("response.reasoning_summary_text.delta", { item_id: o.id, output_index: o.index, summary_index: 0, delta: text }));
  }

  private text(text: string, out: NamedEvent[]): void {
    if (this.sawCalls) return;
    if (this.open?.kind !== "message") {
      this.close(out);
      const o = (this.open = { kind: "message", id: newItemId("msg"), index: this.output.length, text: "" });
      out.push(this.event("response.output_item.added", { output_index: o.index, item: { id: o.id, type: "message", status: "in_progress", role: "assistant", content: [] } }));
      out.push(this.event("response.content_part.added", { item_id: o.id, output_index: o.index, content_index: 0, part: textPart("") }));
    }
    const o = this.open;
    o.text += text;
    out.push(this.event("response.output_text.delta", { item_id: o.id, output_index: o.index, content_index: 0, delta: text, logprobs: [] }));
  }

  private functionCalls(calls: ToolCall[], out: NamedEvent[]): void {
    this.close(out);
    this.sawCalls = true;
    for (const tc of openaiToolCalls(calls, 0)) {
      const index = this.output.length;
      const id = newItemId("fc");
      const item = { id, type: "function_call", status: "completed", call_id: tc.id, name: tc.function.name, arguments: tc.function.arguments };
      out.push(this.event("response.output_item.added", { output_index: index, item: { ...item, status: "in_progress", arguments: "" } }));
      out.push(this.event("response.function_call_arguments.delta", { item_id: id, output_index: index, delta: item.arguments }));
      out.push(this.event("response.function_call_arguments.done", { item_id: id, output_index: index, arguments: item.arguments }));
      out.push(this.event("response.output_item.done", { output_index: index, item }));
      this.output.push(item);
    }
  }

  /** Closes the open item: its .done events, and it takes its place in the output. */
  private close(out: NamedEvent[]): void {
    const o = this.open;
    if (!o) return;
    this.open = undefined;
    if (o.kind === "reasoning") {
      const item = reasoningItem(o.id, o.text);
      out.push(this.event("response.reasoning_summary_text.done", { item_id: o.id, output_index: o.index, summary_index: 0, text: o.text }));
      out.push(this.event("response.output_item.done", { output_index: o.index, item }));
      this.output.push(item);
      return;
    }
    const item = messageItem(o.id, o.text);
    out.push(this.event("response.output_text.done", { item_id: o.id, output_index: o.index, content_index: 0, text: o.text, logprobs: [] }));
    out.push(this.event("response.content_part.done", { item_id: o.id, output_index: o.index, content_index: 0, part: textPart(o.text) }));
    out.push(this.event("response.output_item.done", { output_index: o.index, item }));
    this.output.push(item);
  }
}

/** Non-stream: the completed response object. */
export async function responseObject(events: AsyncIterable<CompletionEvent>, enc: ResponseEncoder): Promise<Obj> {
  const unused: NamedEvent[] = [];
  for await (const ev of events) {
    if (enc.step(ev, unused) && enc.completed) return enc.completed;
    unused.length = 0;
  }
  throw new Error("generation ended without a final response");
}

/** Stream: the events; a generation error after the start ends the stream with response.failed. */
export async function* responseEvents(events: Batches<CompletionEvent>, enc: ResponseEncoder): Batches<NamedEvent> {
  try {
    yield* encodeBatches(events, (ev: CompletionEvent, out: NamedEvent[]) => enc.step(ev, out), true);
  } catch (err) {
    yield enc.failed(err);
  }
}

/** What a finished response is stored as: its input (every item given an id, as OpenAI lists
 *  input items) and the conversation it ends. */
function stored(response: Obj, t: ResponsesTranslation): StoredResponse {
  const input = t.input.map((item) => (typeof item.id === "string" ? item : { id: newItemId("msg"), ...item }));
  const output = Array.isArray(response.output) ? (response.output as Obj[]) : [];
  return { response, input, conversation: [...t.prior, ...input, ...output] };
}

export function responsesRoutes(deps: Deps, store: ResponseStore): Hono {
  const app = new Hono();
  app.post("/v1/responses", async (c) => {
    const startedAt = nowNs();
    const t = translateResponsesRequest(await parseBody(c, z.unknown()), store);
    const { started, ac } = await startNativeChat(deps, c, t.native, startedAt);
    const id = newItemId("resp");
    const onCompleted = t.echo.store ? (response: Obj) => store.save(id, stored(response, t)) : undefined;
    const enc = new ResponseEncoder({ id, createdAt: Math.floor(Date.now() / 1000), model: t.model, echo: t.echo, stream: t.stream, onCompleted });
    if (started.kind === "debug") return jsonResponse({ ...enc.response("completed", [], null), _debug_info: started.debugInfo });
    if (!t.stream) return jsonResponse(await responseObject(flatten(started.batches), enc));
    return namedSseResponse(c, responseEvents(started.batches, enc), () => {
      ac.abort();
      started.cancel();
    });
  });
  const found = (id: string): StoredResponse => {
    const r = store.get(id);
    if (!r) throw new ApiError("not_found", `Response with id '${id}' not found (${NOT_KEPT}).`);
    return r;
  };
  app.get("/v1/responses/:id", (c) => jsonResponse(found(c.req.param("id")).response));
  app.get("/v1/responses/:id/input_items", (c) => {
    const data = found(c.req.param("id")).input;
    return jsonResponse({ object: "list", data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false });
  });
  app.delete("/v1/responses/:id", (c) => {
    const id = c.req.param("id");
    found(id);
    store.delete(id);
    return jsonResponse({ id, object: "response", deleted: true });
  });
  return app;
}
