// Renders a conversation into the prompt text a runner evaluates, with the model's template:
// the Go TEMPLATE layer (or request `template`) wins; else the GGUF's Jinja chat template;
// else Ollama's default `{{ .Prompt }}` pass-through.
import { Template as JinjaTemplate } from "@huggingface/jinja";
import { parseTemplate, type Template as GoTemplate } from "./gotemplate/index.js";
import { badRequest } from "../errors.js";

export interface RenderMessage {
  role: string;
  content: string;
  thinking?: string;
  images?: string[];
  tool_calls?: Array<{ id?: string; function: { index?: number; name: string; arguments?: unknown } }>;
  tool_name?: string;
  tool_call_id?: string;
}

export interface RenderInput {
  messages: RenderMessage[];
  tools?: unknown[];
  think?: boolean;
  thinkLevel?: string;
  isThinkSet?: boolean;
}

export type PromptTemplate =
  | { kind: "go"; source: string; template: GoTemplate }
  | { kind: "jinja"; source: string; template: JinjaTemplate; bos: string; eos: string }
  | { kind: "default" };

const goCache = new Map<string, GoTemplate>();
const jinjaCache = new Map<string, JinjaTemplate>();

export function goTemplate(source: string): GoTemplate {
  let t = goCache.get(source);
  if (!t) {
    try {
      t = parseTemplate(source);
    } catch (err) {
      throw badRequest(`template error: ${(err as Error).message}`);
    }
    goCache.set(source, t);
  }
  return t;
}

export function selectTemplate(go: string | undefined, jinja: string | undefined, bos: string, eos: string): PromptTemplate {
  if (go !== undefined && go !== "") return { kind: "go", source: go, template: goTemplate(go) };
  if (jinja) {
    let t = jinjaCache.get(jinja);
    if (!t) {
      t = new JinjaTemplate(jinja);
      jinjaCache.set(jinja, t);
    }
    return { kind: "jinja", source: jinja, template: t, bos, eos };
  }
  return { kind: "default" };
}

/** Go templates see Go-cased fields (reference §7.1). */
function goMessage(m: RenderMessage) {
  return {
    Role: m.role,
    Content: m.content,
    Thinking: m.thinking ?? "",
    Images: m.images ?? [],
    ToolCalls: (m.tool_calls ?? []).map((c) => ({
      ID: c.id ?? "",
      Function: { Index: c.function.index ?? 0, Name: c.function.name, Arguments: c.function.arguments ?? {} },
    })),
    ToolName: m.tool_name ?? "",
    ToolCallID: m.tool_call_id ?? "",
  };
}

/** Consecutive messages of one role are merged with "\n\n" (except tool results), as Ollama does. */
function collate(messages: RenderMessage[]): RenderMessage[] {
  const out: RenderMessage[] = [];
  for (const m of messages) {
    const prev = out.at(-1);
    if (prev && prev.role === m.role && m.role !== "tool") {
      out[out.length - 1] = { ...prev, content: `${prev.content}\n\n${m.content}` };
    } else out.push({ ...m });
  }
  return out;
}

function renderGo(t: GoTemplate, input: RenderInput): string {
  const systems = input.messages.filter((m) => m.role === "system").map((m) => m.content);
  const base = {
    System: systems.join("\n\n"),
    Tools: input.tools ?? [],
    Think: input.think ?? false,
    ThinkLevel: input.thinkLevel ?? "",
    IsThinkSet: input.isThinkSet ?? false,
    Prompt: "",
    Response: "",
    Suffix: "",
  };
  if (t.references(".Messages")) {
    return t.execute({ ...base, Messages: collate(input.messages).map(goMessage) });
  }
  return renderLegacy(t, input, base);
}

// Legacy .System/.Prompt/.Response templates run once per turn; the final turn stops where
// .Response would be written, so a trailing assistant message becomes a prefill.
const RESPONSE_MARK = "\u0000ollamats-response\u0000";

function renderLegacy(t: GoTemplate, input: RenderInput, base: Record<string, unknown>): string {
  let out = "";
  let system = "";
  let prompt = "";
  const turns: Array<{ system: string; prompt: string; response: string }> = [];
  for (const m of input.messages) {
    if (m.role === "system") system = system ? `${system}\n\n${m.content}` : m.content;
    else if (m.role === "assistant") {
      turns.push({ system, prompt, response: m.content });
      system = "";
      prompt = "";
    } else prompt = prompt ? `${prompt}\n\n${m.content}` : m.content;
  }
  const last = input.messages.at(-1);
  const prefill = last?.role === "assistant" ? turns.pop() : undefined;
  for (const turn of turns) out += t.execute({ ...base, System: turn.system, Prompt: turn.prompt, Response: turn.response });
  const final = prefill ?? { system, prompt, response: "" };
  const text = t.execute({ ...base, System: final.system, Prompt: final.prompt, Response: RESPONSE_MARK });
  const cut = text.indexOf(RESPONSE_MARK);
  return out + (cut === -1 ? text : text.slice(0, cut) + final.response);
}

function renderJinja(t: Extract<PromptTemplate, { kind: "jinja" }>, input: RenderInput): string {
  const last = input.messages.at(-1);
  return t.template.render({
    messages: input.messages.map((m) => ({
      role: m.role,
      content: m.content,
      ...(m.tool_calls ? { tool_calls: m.tool_calls } : {}),
      ...(m.tool_name ? { name: m.tool_name } : {}),
    })),
    tools: input.tools && input.tools.length > 0 ? input.tools : undefined,
    add_generation_prompt: last?.role !== "assistant",
    bos_token: t.bos,
    eos_token: t.eos,
  });
}

export function renderPrompt(t: PromptTemplate, input: RenderInput): string {
  try {
    switch (t.kind) {
      case "go":
        return renderGo(t.template, input);
      case "jinja":
        return renderJinja(t, input);
      case "default":
        return input.messages.filter((m) => m.role !== "system").map((m) => m.content).join("");
    }
  } catch (err) {
    if (err instanceof Error && "status" in err) throw err;
    throw badRequest(`template error: ${(err as Error).message}`);
  }
}

/** Fill-in-the-middle (/api/generate with `suffix`): one execution with .Prompt and .Suffix. */
export function renderSuffix(t: PromptTemplate, prompt: string, suffix: string): string {
  if (t.kind !== "go") throw badRequest("this model does not support insert");
  return t.template.execute({ Prompt: prompt, Suffix: suffix, Response: "" });
}
