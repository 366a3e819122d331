// An Anthropic Messages request (POST /v1/messages, what the Anthropic SDKs and Claude Code send)
// as the native /api/chat body Ollama's middleware builds from it: the system prompt (a string or
// text blocks) first, each message's content blocks as native messages (text joined, base64
// images, tool_use → tool_calls, tool_result → tool messages ahead of the user's text, thinking →
// the assistant's thinking), max_tokens → num_predict, sampling and stop_sequences as options,
// tools with their input_schema, thinking / output_config.effort → think; beyond Ollama,
// output_config.format (Anthropic's structured outputs: a JSON schema) → format.
import type { Message, ToolCall } from "../../../api/types.js";
import { badRequest } from "../../errors.js";
import { field, invalidType, isObject, missingParameter, requestObject, type Obj } from "../openai/validate.js";

export interface MessagesTranslation {
  model: string;
  stream: boolean;
  /** The /api/chat body Ollama's middleware would build. */
  native: Record<string, unknown>;
  /** Ollama's estimate of the prompt's tokens (characters / 4) for message_start, before the
   *  real count is known. */
  estimatedInputTokens: number;
}

/** Text of a system prompt or a tool result: a string, or the text of its text blocks. */
function textOf(v: unknown, path: string): { text: string; images: string[] } {
  if (v === undefined || v === null) return { text: "", images: [] };
  if (typeof v === "string") return { text: v, images: [] };
  if (!Array.isArray(v)) throw invalidType(path, "a string or an array of content blocks", v);
  let text = "";
  const images: string[] = [];
  v.forEach((block, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(block)) throw invalidType(p, "an object", block);
    const type = field.string(block, "type", `${p}.type`);
    if (type === "text") text += field.string(block, "text", `${p}.text`) ?? "";
    else if (type === "image") images.push(imageOf(block, p));
  });
  return { text, images };
}

/** A base64 image block's data (Ollama takes no URLs). */
function imageOf(block: Obj, path: string): string {
  const source = field.object(block, "source", `${path}.source`);
  if (!source) throw badRequest("invalid image source");
  const type = field.string(source, "type", `${path}.source.type`);
  if (type !== "base64") throw badRequest(`invalid image source type: ${type ?? ""}. Only base64 images are supported.`);
  const data = field.string(source, "data", `${path}.source.data`) ?? "";
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 === 1) throw badRequest("invalid base64 image data");
  return data;
}

/** A tool_use block's input: an object (Anthropic's), or {} when absent. */
function inputOf(block: Obj, path: string): Record<string, unknown> {
  const input = field.object(block, "input", `${path}.input`);
  return input ?? {};
}

/** A web search result list as the text a model can read. */
function searchResultsText(content: unknown): string {
  if (typeof content === "string") return content;
  const items = Array.isArray(content) ? content : [content];
  let text = "";
  for (const item of items) {
    if (!isObject(item)) continue;
    if (item.type === "web_search_tool_result_error") return `web_search_tool_result_error${typeof item.error_code === "string" ? `: ${item.error_code}` : ""}`;
    if (item.type === "web_search_result") text += `- ${String(item.title ?? "")}: ${String(item.url ?? "")}\n`;
  }
  return text;
}

/** One Anthropic message as native messages: a user's tool results come first (each a `tool`
 *  message), then its text and images; an assistant's text, thinking and tool calls are one. */
function convertMessage(raw: unknown, path: string): Message[] {
  if (!isObject(raw)) throw invalidType(path, "an object", raw);
  const role = field.string(raw, "role", `${path}.role`)?.toLowerCase();
  if (!role) throw missingParameter(`${path}.role`);
  const content = raw.content;
  if (typeof content === "string") return [{ role, content }];
  if (!Array.isArray(content)) throw invalidType(`${path}.content`, "a string or an array of content blocks", content);
  let text = "";
  let thinking = "";
  const images: string[] = [];
  const calls: ToolCall[] = [];
  const results: Message[] = [];
  content.forEach((block, i) => {
    const p = `${path}.content[${i}]`;
    if (!isObject(block)) throw invalidType(p, "an object", block);
    const type = field.string(block, "type", `${p}.type`);
    switch (type) {
      case "text":
        text += field.string(block, "text", `${p}.text`) ?? "";
        return;
      case "image":
        images.push(imageOf(block, p));
        return;
      case "tool_use":
      case "server_tool_use": {
        const id = field.string(block, "id", `${p}.id`);
        const name = field.string(block, "name", `${p}.name`);
        if (type === "tool_use" && !id) throw badRequest("tool_use block missing required 'id' field");
        if (type === "tool_use" && !name) throw badRequest("tool_use block missing required 'name' field");
        calls.push({ ...(id ? { id } : {}), function: { name: name ?? "", arguments: inputOf(block, p) } });
        return;
      }
      case "tool_result": {
        const result = textOf(block.content, `${p}.content`);
        const id = field.string(block, "tool_use_id", `${p}.tool_use_id`);
        results.push({ role: "tool", content: result.text, ...(result.images.length ? { images: result.images } : {}), ...(id ? { tool_call_id: id } : {}) });
        return;
      }
      case "web_search_tool_result": {
        const id = field.string(block, "tool_use_id", `${p}.tool_use_id`);
        results.push({ role: "tool", content: searchResultsText(block.content), ...(id ? { tool_call_id: id } : {}) });
        return;
      }
      case "thinking":
        thinking = field.string(block, "thinking", `${p}.thinking`) ?? thinking;
        return;
      case undefined:
        throw missingParameter(`${p}.type`);
      default:
        return; // redacted_thinking, documents, …: nothing a local model can read (Ollama skips them)
    }
  });
  const own: Message[] =
    text || images.length || calls.length || thinking
      ? [{ role, content: text, ...(images.length ? { images } : {}), ...(calls.length ? { tool_calls: calls } : {}), ...(thinking ? { thinking } : {}) }]
      : [];
  return role === "user" ? [...results, ...own] : [...own, ...results];
}

/** Anthropic's tool_choice as the native one: "any" must call some tool, "tool" the one named
 *  (beyond Ollama, which ignores it); "auto" and "none" need nothing here. */
function toolChoiceOf(o: Obj): "required" | { name: string } | undefined {
  const choice = field.object(o, "tool_choice");
  const type = choice && field.string(choice, "type", "tool_choice.type");
  if (type === "any") return "required";
  if (type !== "tool") return undefined;
  const name = field.string(choice!, "name", "tool_choice.name");
  if (!name) throw missingParameter("tool_choice.name");
  return { name };
}

/** Custom tools as native function tools. Anthropic's server tools (web search and the like, a
 *  `type` other than "custom") need Anthropic's servers: they are left out. */
function toolsOf(o: Obj): Array<Record<string, unknown>> | undefined {
  const list = field.array(o, "tools");
  if (!list) return undefined;
  const choice = field.object(o, "tool_choice");
  if (choice && field.string(choice, "type", "tool_choice.type") === "none") return undefined;
  const tools: Array<Record<string, unknown>> = [];
  list.forEach((t, i) => {
    const p = `tools[${i}]`;
    if (!isObject(t)) throw invalidType(p, "an object", t);
    const type = field.string(t, "type", `${p}.type`);
    if (type !== undefined && type !== "custom") return;
    const name = field.string(t, "name", `${p}.name`);
    if (!name) throw missingParameter(`${p}.name`);
    const description = field.string(t, "description", `${p}.description`);
    const schema = field.object(t, "input_schema", `${p}.input_schema`);
    tools.push({ type: "function", function: { name, ...(description ? { description } : {}), parameters: schema ?? { type: "object", properties: {} } } });
  });
  return tools;
}

/** thinking {type: enabled|disabled}, else output_config.effort (xhigh is high), as Ollama maps them. */
function thinkOf(o: Obj): boolean | string | undefined {
  const thinking = field.object(o, "thinking");
  const type = thinking && field.string(thinking, "type", "thinking.type");
  if (type === "enabled") return true;
  if (type === "disabled") return false;
  const config = field.object(o, "output_config");
  const effort = config && field.string(config, "effort", "output_config.effort")?.trim().toLowerCase();
  if (effort === "xhigh") return "high";
  return effort === "high" || effort === "medium" || effort === "low" || effort === "max" ? effort : undefined;
}

/** output_config.format: {type: "json_schema", schema} → the native format (the schema). */
function formatOf(o: Obj): Record<string, unknown> | undefined {
  const config = field.object(o, "output_config");
  const format = config && field.object(config, "format", "output_config.format");
  if (!format) return undefined;
  const type = field.string(format, "type", "output_config.format.type");
  if (type !== "json_schema") throw badRequest(`output_config.format.type: Input should be 'json_schema'`);
  const schema = field.object(format, "schema", "output_config.format.schema");
  if (!schema) throw missingParameter("output_config.format.schema");
  return schema;
}

function charCount(v: unknown): number {
  if (v === undefined || v === null) return 0;
  return typeof v === "string" ? v.length : JSON.stringify(v).length;
}

/** `countOnly`: a count_tokens request, which has no max_tokens. */
export function translateMessagesRequest(body: unknown, countOnly = false): MessagesTranslation {
  const o = requestObject(body);
  const model = field.string(o, "model");
  if (!model) throw badRequest("model is required");
  const maxTokens = field.integer(o, "max_tokens");
  if (!countOnly && (maxTokens === undefined || maxTokens <= 0)) throw badRequest("max_tokens is required and must be positive");
  const list = field.array(o, "messages");
  if (!list || list.length === 0) throw badRequest("messages is required");

  const system = textOf(o.system, "system").text;
  const messages: Message[] = [...(system ? [{ role: "system", content: system }] : []), ...list.flatMap((m, i) => convertMessage(m, `messages[${i}]`))];

  const options: Record<string, unknown> = maxTokens !== undefined ? { num_predict: maxTokens } : {};
  const temperature = field.number(o, "temperature");
  const topP = field.number(o, "top_p");
  const topK = field.integer(o, "top_k");
  if (temperature !== undefined) options.temperature = temperature;
  if (topP !== undefined) options.top_p = topP;
  if (topK !== undefined) options.top_k = topK;
  const stops = field.array(o, "stop_sequences");
  stops?.forEach((s, i) => {
    if (typeof s !== "string") throw invalidType(`stop_sequences[${i}]`, "a string", s);
  });
  if (stops && stops.length > 0) options.stop = stops;

  const tools = toolsOf(o);
  const toolChoice = tools && tools.length > 0 ? toolChoiceOf(o) : undefined;
  const think = thinkOf(o);
  const format = formatOf(o);
  const stream = field.boolean(o, "stream") ?? false;
  const estimated = charCount(o.system) + list.reduce<number>((n, m) => n + (isObject(m) ? charCount(m.role) + charCount(m.content) : 0), 0) + charCount(o.tools);
  return {
    model,
    stream,
    native: {
      model,
      messages,
      stream,
      options,
      ...(tools && tools.length > 0 ? { tools } : {}),
      ...(toolChoice ? { tool_choice: toolChoice } : {}),
      ...(think !== undefined ? { think } : {}),
      ...(format ? { format } : {}),
    },
    estimatedInputTokens: Math.max(estimated > 0 ? 1 : 0, Math.floor(estimated / 4)),
  };
}
