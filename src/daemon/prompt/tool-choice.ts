// tool_choice: OpenAI's "required" or a named function, Anthropic's "any" or "tool". Ollama
// ignores it, so a client that must have a call (the AI SDK's toolChoice, LangChain's
// withStructuredOutput by function calling) got text. Here such a choice makes the answer a call:
// a grammar lets the model write only the template's tool-call tag and then one call, as JSON
// naming a tool it may call with arguments that fit that tool's parameters; the usual tool-call
// parser then reads it as any call. "none" sends no tools; "auto" leaves the model free. A model
// whose calls are markup (Qwen3-Coder's XML, GLM's pairs) gets the shape of a call in its own
// syntax instead (tool-call-shape.ts).
import type { StructuredOutput } from "../../backends/backend.js";
import { badRequest } from "../errors.js";
import type { PromptTemplate } from "./render.js";
import { harmonyCallHeader, type HarmonyNames } from "./harmony.js";
import { markupCallShape } from "./tool-call-shape.js";
import { NAME_MARK, toolDialect } from "./tool-dialect.js";

export type ToolChoice = "auto" | "none" | "required" | { name: string };

/** The choice's words in OpenAI's and Anthropic's spellings. */
const WORDS: Readonly<Record<string, ToolChoice>> = { auto: "auto", none: "none", required: "required", any: "required" };

/**
 * The body's tool_choice in any of the shapes clients send: "auto" / "none" / "required",
 * {"type":"function","function":{"name"}} (chat completions), {"type":"function","name"}
 * (responses), {"type":"any"|"tool","name"} (Anthropic). A shape it does not know is ignored, as
 * Ollama ignores the whole field (the /v1 routes check theirs).
 */
export function parseToolChoice(v: unknown): ToolChoice | undefined {
  if (typeof v === "string") return Object.hasOwn(WORDS, v) ? WORDS[v] : undefined;
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const fn = o.function;
  const name = typeof fn === "object" && fn !== null && typeof (fn as Record<string, unknown>).name === "string" ? (fn as Record<string, unknown>).name : o.name;
  if (typeof name === "string" && name !== "") return { name };
  return typeof o.type === "string" && Object.hasOwn(WORDS, o.type) ? WORDS[o.type] : undefined;
}

interface ToolDef {
  function?: { name?: unknown; parameters?: unknown };
}

/**
 * The format that makes the answer one call, when `choice` asks for one; undefined otherwise.
 * The arguments' key is the one the template shows ("parameters" in Llama 3.x's, else
 * "arguments"); the parser takes either.
 */
export function toolCallFormat(
  choice: ToolChoice | undefined,
  tools: readonly ToolDef[],
  template: PromptTemplate | undefined,
  harmony?: HarmonyNames,
  parser?: string,
): StructuredOutput | undefined {
  if (choice === undefined || choice === "auto" || choice === "none" || tools.length === 0) return undefined;
  const named = typeof choice === "object" ? choice.name : undefined;
  const offered = tools.filter((t) => typeof t.function?.name === "string" && (named === undefined || t.function.name === named));
  if (offered.length === 0) throw badRequest(`tool_choice names the function "${named}", which is not among the request's tools`);
  if (harmony) return harmonyCallFormat(offered, harmony);
  const dialect = template ? toolDialect(template, parser) : ({ kind: "json", tag: "{" } as const);
  if (dialect.kind === "named-json") return namedCallFormat(offered, dialect.head);
  if (dialect.kind !== "json") return { kind: "markup", pieces: markupCallShape(dialect, offered) };
  const source = template && template.kind !== "default" ? template.source : "";
  const key = source.includes('"parameters"') ? "parameters" : "arguments";
  const calls = offered.map((t) => ({
    type: "object",
    properties: { name: { const: t.function!.name }, [key]: isSchema(t.function!.parameters) ? t.function!.parameters : { type: "object" } },
    required: ["name", key],
    additionalProperties: false,
  }));
  const tag = dialect.tag;
  // A tag of its own ("<tool_call>", "[TOOL_CALLS]") goes first; "{" means the call is bare JSON.
  const word = tag === "{" || tag === "[" ? "" : (tag.split(/\s+/)[0] ?? "");
  const prefix = word === "" ? undefined : word.startsWith("<") ? `${word}\n` : word;
  return { kind: "schema", schema: calls.length === 1 ? calls[0]! : { anyOf: calls }, compact: true, ...(prefix ? { prefix } : {}) };
}

/**
 * Harmony (gpt-oss): the call is a message to the tool, its header naming it, its text the
 * arguments. One tool: its header is the schema's prefix; several: one header-then-arguments
 * shape per tool, of which the model writes one.
 */
function harmonyCallFormat(offered: readonly ToolDef[], names: HarmonyNames): StructuredOutput | undefined {
  const headers = offered.map((t) => names.harmony(t.function!.name as string));
  if (headers.some((h) => h === undefined)) return undefined;
  return headedCalls(offered, headers.map((h) => harmonyCallHeader(h!)));
}

/** A name then JSON arguments (Mistral's `[TOOL_CALLS]NAME[ARGS]{…}`): the text up to the
 *  arguments, the tool's name in it, heads each tool's arguments, as for harmony. */
function namedCallFormat(offered: readonly ToolDef[], head: string | undefined): StructuredOutput | undefined {
  if (head === undefined) return undefined;
  return headedCalls(offered, offered.map((t) => head.replace(NAME_MARK, t.function!.name as string)));
}

/** Each tool's header, then its arguments as compact JSON of its parameters. */
function headedCalls(offered: readonly ToolDef[], headers: readonly string[]): StructuredOutput {
  const params = offered.map((t) => (isSchema(t.function!.parameters) ? t.function!.parameters : { type: "object" }));
  if (offered.length === 1) return { kind: "schema", schema: params[0]!, compact: true, prefix: headers[0]! };
  return { kind: "markup", pieces: [{ choice: offered.map((_, i) => [{ text: headers[i]! }, { json: params[i]!, root: params[i]! }]) }] };
}

function isSchema(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length > 0;
}
