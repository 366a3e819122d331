// POST /v1/chat/completions (reference §1.15): the OpenAI request becomes a native /api/chat body
// (as Ollama's middleware builds it), runs on the shared completion, and its events are encoded
// as a chat.completion or as chat.completion.chunk server-sent events.
import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { z } from "zod";
import type { Message, ToolCall } from "../../../api/types.js";
import { parseBody } from "../../body.js";
import { JsonDepthError, parseJson } from "../../bounded-json.js";
import { nowNs } from "../../services/completion.js";
import type { Deps } from "../../deps.js";
import { badRequest } from "../../errors.js";
import { jsonResponse } from "../../stream.js";
import type { Logprob } from "../../../backends/backend.js";
import { encodeBatches, flatten, type Batches } from "../../../backends/batches.js";
import type { CompletionEvent } from "./events.js";
import { chatLogprobs } from "./logprobs.js";
import { startNativeChat } from "./native.js";
import { finishReason, newId, usageOf } from "./encode.js";
import { sseResponse } from "./sse.js";
import {
  aboveMaximum,
  belowMinimum,
  field,
  invalidType,
  invalidValue,
  isObject,
  missingParameter,
  modelOf,
  requestObject,
  stopList,
  type Obj,
} from "./validate.js";

const ROLES = ["system", "assistant", "user", "function", "tool", "developer"] as const;
const RESPONSE_FORMATS = ["json_object", "json_schema", "text"] as const;
const CONTENT_TYPES = "one of a string or array of objects";

export interface ChatTranslation {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The /api/chat body Ollama's middleware would build. */
  native: Record<string, unknown>;
}

/** reasoning_effort / reasoning.effort → think (Ollama's mapping; unknown efforts are refused). */
export function thinkFromEffort(effort: string | undefined): boolean | string | undefined {
  switch (effort) {
    case undefined:
    case "":
      return undefined;
    case "none":
      return false;
    case "minimal":
      return "low";
    case "low":
    case "medium":
    case "high":
    case "max":
      return effort;
    case "xhigh":
    case "ultra":
      return "max";
    default:
      throw badRequest(
        `invalid reasoning value: "${effort}" (must be "minimal", "low", "medium", "high", "xhigh", "ultra", "max", or "none")`,
      );
  }
}

const IMAGE_PREFIXES = ["data:image/jpeg;base64,", "data:image/jpg;base64,", "data:image/png;base64,", "data:image/webp;base64,", "data:;base64,"];

/** A data-URI image as the base64 a native message carries (Ollama's rules; URLs refused). */
export function imageFromUrl(url: string): string {
  if (url.startsWith("http://") || url.startsWith("https://")) {
    throw badRequest("image URLs are not currently supported, please use base64 encoded data instead");
  }
  const prefix = IMAGE_PREFIXES.find((p) => url.startsWith(p));
  if (!prefix) throw badRequest("invalid image input");
  const data = url.slice(prefix.length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) throw badRequest("invalid image input");
  return data;
}

/** Content parts: text joined in order, images collected; anything else is refused. */
function contentParts(parts: unknown[], path: string): { text: string; images: string[] } {
  const texts: string[] = [];
  const images: string[] = [];
  parts.forEach((part, j) => {
    const p = `${path}[${j}]`;
    if (!isObject(part)) throw invalidType(p, "an object", part);
    const type = field.string(part, "type", `${p}.type`);
    if (type === undefined) throw missingParameter(`${p}.type`);
    switch (type) {
      case "text":
      case "refusal": {
        const key = type === "text" ? "text" : "refusal";
        const text = field.string(part, key, `${p}.${key}`);
        if (text === undefined) throw missingParameter(`${p}.${key}`);
        texts.push(text);
        return;
      }
      case "image_url": {
        const iu = part.image_url;
        const url = typeof iu === "string" ? iu : isObject(iu) ? field.string(iu, "url", `${p}.image_url.url`) : undefined;
        if (url === undefined) throw missingParameter(`${p}.image_url.url`);
        images.push(imageFromUrl(url));
        return;
      }
      case "input_audio": {
        const audio = field.object(part, "input_audio", `${p}.input_audio`);
        const data = audio && field.string(audio, "data", `${p}.input_audio.data`);
        if (data === undefined) throw badRequest("invalid input_audio format: missing data");
        images.push(data);
        return;
      }
      default:
        throw invalidValue(type, ["text", "image_url", "input_audio", "refusal"]);
    }
  });
  return { text: texts.join("\n"), images };
}

/** A tool call's arguments as OpenAI sends them, a JSON string ("" for none), as the object a native call holds. */
export function argumentsFromJson(raw: string): Obj {
  let args: unknown;
  try {
    args = raw.trim() === "" ? {} : parseJson(raw);
  } catch (err) {
    throw badRequest(err instanceof JsonDepthError ? `invalid tool call arguments: ${err.message}` : "invalid tool call arguments");
  }
  if (!isObject(args)) throw badRequest("invalid tool call arguments");
  return args;
}

function toolCallsOf(m: Obj, path: string): Array<{ id?: string; function: { name: string; arguments: Record<string, unknown> } }> | undefined {
  const calls = field.array(m, "tool_calls", `${path}.tool_calls`);
  if (!calls) return undefined;
  return calls.map((tc, k) => {
    const p = `${path}.tool_calls[${k}]`;
    if (!isObject(tc)) throw invalidType(p, "an object", tc);
    const fn = field.object(tc, "function", `${p}.function`);
    if (!fn) throw missingParameter(`${p}.function`);
    const name = field.string(fn, "name", `${p}.function.name`);
    if (name === undefined) throw missingParameter(`${p}.function.name`);
    const rawArgs = fn.arguments;
    let args: unknown = {};
    if (typeof rawArgs === "string") args = argumentsFromJson(rawArgs);
    else if (rawArgs !== undefined && rawArgs !== null) args = rawArgs; // lenient: an object where OpenAI puts a JSON string
    if (!isObject(args)) throw badRequest("invalid tool call arguments");
    const id = field.string(tc, "id", `${p}.id`);
    return { ...(id ? { id } : {}), function: { name, arguments: args } };
  });
}

function toolNameFor(messages: unknown[], id: string): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!isObject(m) || !Array.isArray(m.tool_calls)) continue;
    for (const tc of m.tool_calls) {
      if (isObject(tc) && tc.id === id && isObject(tc.function) && typeof tc.function.name === "string") return tc.function.name;
    }
  }
  return undefined;
}

function nativeMessages(list: unknown[]): Message[] {
  return list.map((raw, i) => {
    const path = `messages[${i}]`;
    if (!isObject(raw)) throw invalidType(path, "an object", raw);
    const role = field.string(raw, "role", `${path}.role`);
    if (role === undefined) throw missingParameter(`${path}.role`);
    if (!(ROLES as readonly string[]).includes(role)) throw invalidValue(role, ROLES);
    const toolCalls = toolCallsOf(raw, path);
    let content = "";
    let images: string[] = [];
    const c = raw.content;
    if (typeof c === "string") content = c;
    else if (Array.isArray(c)) ({ text: content, images } = contentParts(c, `${path}.content`));
    else if (c === undefined || c === null) {
      if (role !== "assistant") throw c === null ? invalidType(`${path}.content`, CONTENT_TYPES, c) : missingParameter(`${path}.content`);
    } else throw invalidType(`${path}.content`, CONTENT_TYPES, c);
    const reasoning = field.string(raw, "reasoning", `${path}.reasoning`) ?? field.string(raw, "reasoning_content", `${path}.reasoning_content`);
    const msg: Message = {
      // "developer" is OpenAI's newer name for system; model templates only know "system"
      role: role === "developer" ? "system" : role === "function" ? "tool" : role,
      content,
      ...(images.length ? { images } : {}),
      ...(reasoning ? { thinking: reasoning } : {}),
      ...(toolCalls ? { tool_calls: toolCalls } : {}),
    };
    if (role === "tool" || role === "function") {
      const id = field.string(raw, "tool_call_id", `${path}.tool_call_id`);
      const name = field.string(raw, "name", `${path}.name`) ?? (id ? toolNameFor(list.slice(0, i), id) : undefined);
      if (id) msg.tool_call_id = id;
      if (name) msg.tool_name = name;
    }
    return msg;
  });
}

function formatOf(o: Obj): "json" | Record<string, unknown> | undefined {
  const rf = field.object(o, "response_format");
  if (!rf) return undefined;
  const type = field.string(rf, "type", "response_format.type");
  if (type === undefined) throw missingParameter("response_format.type");
  switch (type) {
    case "text":
      return undefined;
    case "json_object":
      return "json";
    case "json_schema": {
      const js = field.object(rf, "json_schema", "response_format.json_schema");
      if (!js) throw missingParameter("response_format.json_schema");
      const schema = field.object(js, "schema", "response_format.json_schema.schema");
      return schema ?? "json"; // no schema: still JSON
    }
    default:
      throw invalidValue(type, RESPONSE_FORMATS);
  }
}

/** The OpenAI request → the native /api/chat body (reference §1.15 table), with OpenAI's checks. */
export function translateChatRequest(body: unknown): ChatTranslation {
  const o = requestObject(body);
  const model = modelOf(o);
  if (o.messages === undefined || o.messages === null) throw missingParameter("messages");
  const list = field.array(o, "messages");
  if (!list || list.length === 0) throw badRequest("[] is too short - 'messages'");
  const messages = nativeMessages(list);

  const options: Record<string, unknown> = {};
  const temperature = field.number(o, "temperature");
  const topP = field.number(o, "top_p");
  options.temperature = temperature ?? 1.0; // OpenAI's defaults, not Ollama's
  options.top_p = topP ?? 1.0;
  const maxTokens = field.integer(o, "max_completion_tokens") ?? field.integer(o, "max_tokens");
  if (maxTokens !== undefined) options.num_predict = maxTokens;
  const stop = stopList(o);
  if (stop) options.stop = stop;
  const seed = field.integer(o, "seed");
  if (seed !== undefined) options.seed = seed;
  for (const k of ["frequency_penalty", "presence_penalty"] as const) {
    const v = field.number(o, k);
    if (v !== undefined) options[k] = v;
  }
  const n = field.integer(o, "n");
  if (n !== undefined && n < 1) throw belowMinimum("n", 1, n);
  if (n !== undefined && n > 1) throw badRequest("n > 1 is not supported: only one choice is generated");

  const stream = field.boolean(o, "stream") ?? false;
  const streamOptions = field.object(o, "stream_options");
  const includeUsage = (streamOptions && field.boolean(streamOptions, "include_usage", "stream_options.include_usage")) ?? false;

  const toolList = field.array(o, "tools");
  toolList?.forEach((t, i) => {
    if (!isObject(t)) throw invalidType(`tools[${i}]`, "an object", t);
  });
  const toolChoice = o.tool_choice;
  checkToolChoice(toolChoice);
  const tools = toolChoice === "none" ? undefined : toolList;

  const reasoning = field.object(o, "reasoning");
  const effort = (reasoning && field.string(reasoning, "effort", "reasoning.effort")) ?? field.string(o, "reasoning_effort");
  const think = thinkFromEffort(effort);

  const logprobs = field.boolean(o, "logprobs") ?? false;
  const topLogprobs = field.integer(o, "top_logprobs");
  if (topLogprobs !== undefined && topLogprobs > 20) throw aboveMaximum("top_logprobs", 20, topLogprobs);
  if (topLogprobs !== undefined && topLogprobs < 0) throw belowMinimum("top_logprobs", 0, topLogprobs);

  const format = formatOf(o);
  const native: Record<string, unknown> = {
    model,
    messages,
    stream,
    options,
    ...(format !== undefined ? { format } : {}),
    ...(tools && tools.length > 0 ? { tools } : {}),
    // beyond Ollama, which ignores it: "required" or a named function makes the answer a call
    ...(tools && tools.length > 0 && toolChoice !== undefined && toolChoice !== null && toolChoice !== "none" ? { tool_choice: toolChoice } : {}),
    ...(think !== undefined ? { think } : {}),
    ...(logprobs ? { logprobs } : {}),
    ...(topLogprobs ? { top_logprobs: topLogprobs } : {}),
    ...(o._debug_render_only === true ? { _debug_render_only: true } : {}),
  };
  return { model, stream, includeUsage, native };
}

/** tool_choice as OpenAI takes it: "none", "auto", "required" or {"type":"function","function":{"name"}}. */
function checkToolChoice(v: unknown): void {
  if (v === undefined || v === null) return;
  if (typeof v === "string") {
    if (!["none", "auto", "required"].includes(v)) throw invalidValue(v, ["none", "auto", "required"]);
    return;
  }
  if (!isObject(v)) throw invalidType("tool_choice", "one of a string or an object", v);
  const fn = field.object(v, "function", "tool_choice.function");
  if (!fn) throw missingParameter("tool_choice.function");
  if (!field.string(fn, "name", "tool_choice.function.name")) throw missingParameter("tool_choice.function.name");
}

/** OpenAI's tool call: arguments as a JSON string, a type, an id and an index for stream merging. */
export interface OpenAIToolCall {
  index: number;
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export function openaiToolCalls(calls: ToolCall[], firstIndex: number): OpenAIToolCall[] {
  return calls.map((tc, i) => ({
    index: firstIndex + i,
    id: tc.id ?? `call_${randomBytes(6).toString("hex")}`,
    type: "function",
    function: { name: tc.function.name, arguments: JSON.stringify(tc.function.arguments ?? {}) },
  }));
}

interface Meta {
  id: string;
  created: number;
  model: string;
}

/** Non-stream: one chat.completion from the whole event stream. */
export async function chatCompletion(events: AsyncIterable<CompletionEvent>, meta: Meta): Promise<object> {
  let content = "";
  let reasoning = "";
  const calls: OpenAIToolCall[] = [];
  const logprobs: Logprob[] = [];
  for await (const ev of events) {
    switch (ev.type) {
      case "content":
        content += ev.text;
        logprobs.push(...(ev.logprobs ?? []));
        break;
      case "thinking":
        reasoning += ev.text;
        logprobs.push(...(ev.logprobs ?? []));
        break;
      case "tool_calls":
        calls.push(...openaiToolCalls(ev.calls, calls.length));
        break;
      case "done":
        return {
          id: meta.id,
          object: "chat.completion",
          created: meta.created,
          model: meta.model,
          system_fingerprint: "fp_ollama",
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content,
                ...(reasoning ? { reasoning } : {}),
                ...(calls.length ? { tool_calls: calls } : {}),
              },
              finish_reason: finishReason(ev.doneReason, calls.length > 0),
              logprobs: chatLogprobs(logprobs),
            },
          ],
          usage: usageOf(ev),
        };
    }
  }
  throw new Error("generation ended without a final response");
}

/**
 * Stream: chat.completion.chunk objects. The first carries `delta.role`; content, reasoning and
 * tool calls each get their own delta; then a chunk with an empty delta and the finish_reason;
 * with include_usage a last chunk with `choices: []` and the usage (the others have usage null).
 */
export function chatChunks(events: Batches<CompletionEvent>, meta: Meta, includeUsage: boolean): Batches<object> {
  const base = { id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, system_fingerprint: "fp_ollama" };
  const usageNull = includeUsage ? { usage: null } : {};
  let first = true;
  let toolCalls = 0;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null, logprobs?: Logprob[]) => {
    const d = first ? { role: "assistant", ...delta } : delta;
    first = false;
    return { ...base, choices: [{ index: 0, delta: d, logprobs: chatLogprobs(logprobs), finish_reason: finish }], ...usageNull };
  };
  const step = (ev: CompletionEvent, out: object[]): boolean => {
    switch (ev.type) {
      case "content":
        // an empty content event is a heartbeat (slow load): sent as an empty delta
        out.push(chunk({ content: ev.text }, null, ev.logprobs));
        return false;
      case "thinking":
        if (ev.text !== "" || ev.logprobs) out.push(chunk({ reasoning: ev.text }, null, ev.logprobs));
        return false;
      case "tool_calls": {
        const calls = openaiToolCalls(ev.calls, toolCalls);
        toolCalls += calls.length;
        if (calls.length) out.push(chunk({ tool_calls: calls }));
        return false;
      }
      case "done":
        if (first) out.push(chunk({ content: "" }));
        out.push(chunk({}, finishReason(ev.doneReason, toolCalls > 0)));
        if (includeUsage) out.push({ ...base, choices: [], usage: usageOf(ev) });
        return true;
    }
  };
  return encodeBatches(events, step, true);
}

export function chatRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/v1/chat/completions", async (c) => {
    const startedAt = nowNs();
    const t = translateChatRequest(await parseBody(c, z.unknown()));
    const { started, ac } = await startNativeChat(deps, c, t.native, startedAt);
    const meta = { id: newId("chatcmpl"), created: Math.floor(Date.now() / 1000), model: t.model };
    if (started.kind === "debug") {
      return jsonResponse({
        id: meta.id,
        object: "chat.completion",
        created: meta.created,
        model: meta.model,
        system_fingerprint: "fp_ollama",
        choices: [{ index: 0, message: { role: "assistant", content: "" }, finish_reason: null, logprobs: null }],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        _debug_info: started.debugInfo,
      });
    }
    if (!t.stream) return jsonResponse(await chatCompletion(flatten(started.batches), meta));
    return sseResponse(c, chatChunks(started.batches, meta, t.includeUsage), () => {
      ac.abort();
      started.cancel();
    });
  });
  return app;
}
