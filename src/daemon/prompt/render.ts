// Renders a conversation into the prompt text a runner evaluates, with the model's template:
// the Go TEMPLATE layer (or request `template`) wins; else the GGUF's Jinja chat template;
// else Ollama's default `{{ .Prompt }}` pass-through.
import type { Template as JinjaTemplate } from "@huggingface/jinja";
import { compileJinja } from "./jinja-syntax.js";
import { OllamaTemplate, type ApiMessage, type ApiTool } from "../../template/ollama.js";
import { JsonDepthError, parseJson } from "../bounded-json.js";
import { badRequest } from "../errors.js";
import "./jinja-bounds.js";
import { detectCapabilities, type JinjaCapabilities } from "./jinja-capabilities.js";
import { polyfillMessages, type JinjaMessage } from "./jinja-polyfills.js";
import { renderWithGlobals, TemplateRaised } from "./jinja-python.js";
import { SourceCache } from "./source-cache.js";
import { TEMPLATE_BUDGET_MAX_MS, TEMPLATE_BUDGET_MS, TEMPLATE_BUDGET_PER_ITEM_MS, withinBudget, type RenderLimits } from "./render-budget.js";

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
  | { kind: "go"; source: string; template: OllamaTemplate }
  | { kind: "jinja"; source: string; template: JinjaTemplate; bos: string; eos: string }
  | { kind: "default" };

// Request `template`s are parsed here too: the caches are bounded so distinct ones cannot grow them.
const goCache = new SourceCache<OllamaTemplate>();
const jinjaCache = new SourceCache<JinjaTemplate>();
// Per parsed template, so per source while jinjaCache holds it.
const capabilities = new WeakMap<JinjaTemplate, JinjaCapabilities>();

/** What the template can render, probed on first use (jinja-capabilities.ts). */
export function jinjaCapabilities(t: Extract<PromptTemplate, { kind: "jinja" }>): JinjaCapabilities {
  let caps = capabilities.get(t.template);
  if (!caps) {
    caps = detectCapabilities((context) => renderWithGlobals(t.template.parsed, context));
    capabilities.set(t.template, caps);
  }
  return caps;
}

export function goTemplate(source: string): OllamaTemplate {
  return goCache.get(source, () => {
    try {
      return withinBudget(() => OllamaTemplate.parse(source));
    } catch (err) {
      throw badRequest(`template error: ${(err as Error).message}`);
    }
  });
}

/** Ollama's template for a model that has none (template.DefaultTemplate). */
export const DEFAULT_TEMPLATE = "{{ .Prompt }}";

export function selectTemplate(go: string | undefined, jinja: string | undefined, bos: string, eos: string): PromptTemplate {
  if (go !== undefined && go !== "") return { kind: "go", source: go, template: goTemplate(go) };
  if (jinja) {
    const t = jinjaCache.get(jinja, () => {
      try {
        return withinBudget(() => compileJinja(jinja));
      } catch (err) {
        // The model's own template: the client cannot fix it, but a request TEMPLATE can replace it.
        // The engine's own TypeErrors on malformed input say nothing to a user: only its syntax errors are quoted.
        const why = err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError ? "" : ` (${(err as Error).message})`;
        throw badRequest(`template error: the model's chat template does not parse${why}; give the model a TEMPLATE in its Modelfile`);
      }
    });
    return { kind: "jinja", source: jinja, template: t, bos, eos };
  }
  return { kind: "default" };
}

/** Tool-call arguments sent as a JSON string (OpenAI style) become the object templates expect. */
function apiMessage(m: RenderMessage): ApiMessage {
  if (!m.tool_calls) return m as ApiMessage;
  return {
    ...m,
    tool_calls: m.tool_calls.map((c) => {
      let args = c.function.arguments;
      if (typeof args === "string") {
        try {
          args = parseJson(args);
        } catch (err) {
          // Too deep for the template engines to walk: refused, like a body that deep.
          if (err instanceof JsonDepthError) throw badRequest(`invalid tool call arguments: ${err.message}`);
          args = {};
        }
      }
      const obj = args && typeof args === "object" && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
      return { ...c, function: { ...c.function, arguments: obj } };
    }),
  };
}

/**
 * The GGUF's Jinja chat template, with what such templates expect (reference §7.4): OpenAI-shaped
 * messages (tool calls with object arguments, tool results with name and tool_call_id, thinking
 * as reasoning_content and thinking), tools, add_generation_prompt, bos/eos text, enable_thinking and
 * reasoning_effort when the request set think (a level the template takes).
 */
export function jinjaContext(t: Extract<PromptTemplate, { kind: "jinja" }>, input: RenderInput, adapt = true): Record<string, unknown> {
  const last = input.messages.at(-1);
  const effort = input.isThinkSet && input.think && input.thinkLevel ? effortFor(t, input.thinkLevel) : undefined;
  const messages: JinjaMessage[] = input.messages.map((m) => {
    const api = apiMessage(m);
    return {
      role: m.role,
      content: m.content,
      // reasoning_content in most templates; gpt-oss's reads `thinking`
      ...(m.thinking ? { reasoning_content: m.thinking, thinking: m.thinking } : {}),
      ...(api.tool_calls
        ? {
            tool_calls: api.tool_calls.map((c) => ({
              ...(c.id ? { id: c.id } : {}),
              type: "function",
              function: { name: c.function.name, arguments: c.function.arguments ?? {} },
            })),
          }
        : {}),
      ...(m.tool_name ? { name: m.tool_name } : {}),
      ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
    };
  });
  return {
    // Adapted where the template cannot render a part of the conversation (jinja-polyfills.ts).
    messages: adapt ? polyfillMessages(messages, jinjaCapabilities(t)) : messages,
    tools: input.tools && input.tools.length > 0 ? input.tools : undefined,
    add_generation_prompt: last?.role !== "assistant",
    bos_token: t.bos,
    eos_token: t.eos,
    // `thinking` as DeepSeek's templates (which fall back to enable_thinking) and Kimi K3's read it
    ...(input.isThinkSet ? { enable_thinking: input.think ?? false, thinking: input.think ?? false } : {}),
    ...(effort ? { reasoning_effort: effort } : {}),
  };
}

/** Ollama's think levels, least first. */
const EFFORTS = ["low", "medium", "high", "max"];
const acceptedEfforts = new SourceCache<readonly string[]>();

/**
 * The reasoning_effort a template gets for a think level: the level where the template takes it,
 * else the nearest one it takes, higher first. Hunyuan's raises on any but no_think, low and high,
 * and think true (or unset, on a thinking model) is "medium": every chat was a 400.
 */
function effortFor(t: Extract<PromptTemplate, { kind: "jinja" }>, level: string): string {
  const ok = acceptedEfforts.get(t.source, () => {
    const context = { messages: [{ role: "user", content: "zq probe question" }], add_generation_prompt: true, bos_token: t.bos, eos_token: t.eos, enable_thinking: true, thinking: true };
    return EFFORTS.filter((effort) => {
      try {
        withinBudget(() => renderWithGlobals(t.template.parsed, { ...context, reasoning_effort: effort }));
        return true;
      } catch {
        return false;
      }
    });
  });
  const i = EFFORTS.indexOf(level);
  if (ok.length === 0 || ok.includes(level) || i === -1) return level;
  for (let d = 1; d < EFFORTS.length; d++) for (const j of [i + d, i - d]) if (j >= 0 && j < EFFORTS.length && ok.includes(EFFORTS[j]!)) return EFFORTS[j]!;
  return level;
}

function renderJinja(t: Extract<PromptTemplate, { kind: "jinja" }>, input: RenderInput): string {
  return renderWithGlobals(t.template.parsed, jinjaContext(t, input));
}

/** What a render may build: its input twice over plus 16 Mi characters (a real template adds a
 *  few hundred characters per message), and lists of a million items plus its messages and tools;
 *  and the time it may take, more for more messages and tools. */
export function limitsFor(input: RenderInput): RenderLimits {
  let chars = 0;
  for (const m of input.messages) chars += m.content.length + (m.thinking?.length ?? 0) + (m.tool_calls ? JSON.stringify(m.tool_calls).length : 0);
  if (input.tools?.length) chars += JSON.stringify(input.tools).length;
  const items = input.messages.length + (input.tools?.length ?? 0);
  return {
    chars: (16 << 20) + 2 * chars,
    items: 1_000_000 + 2 * items,
    ms: Math.floor(Math.min(TEMPLATE_BUDGET_MAX_MS, TEMPLATE_BUDGET_MS + TEMPLATE_BUDGET_PER_ITEM_MS * items)),
  };
}

export function renderPrompt(t: PromptTemplate, input: RenderInput): string {
  try {
    const limits = limitsFor(input);
    switch (t.kind) {
      case "go":
        return withinBudget(
          () =>
            t.template.execute(
              {
                messages: input.messages.map(apiMessage),
                tools: (input.tools ?? []) as ApiTool[],
                think: input.think,
                thinkLevel: input.thinkLevel,
                isThinkSet: input.isThinkSet,
              },
              { maxChars: limits.chars },
            ),
          limits.ms,
          limits,
        );
      case "jinja":
        return withinBudget(() => renderJinja(t, input), limits.ms, limits);
      case "default":
        return input.messages.filter((m) => m.role !== "system").map((m) => m.content).join("");
    }
  } catch (err) {
    if (err instanceof Error && "status" in err) throw err;
    // raise_exception(): the template's own words, for what no polyfill adapts (jinja-polyfills.ts).
    if (err instanceof TemplateRaised) throw badRequest(`template error: the model's chat template refused the conversation: ${err.message}`);
    throw badRequest(`template error: ${(err as Error).message}`);
  }
}

/** Fill-in-the-middle (/api/generate with `suffix`): one execution with .Prompt and .Suffix. */
export function renderSuffix(t: PromptTemplate, prompt: string, suffix: string): string {
  if (t.kind !== "go") throw badRequest("this model does not support insert");
  try {
    const limits = limitsFor({ messages: [{ role: "user", content: prompt + suffix }] });
    return withinBudget(() => t.template.execute({ prompt, suffix }, { maxChars: limits.chars }), undefined, limits);
  } catch (err) {
    throw badRequest(`template error: ${(err as Error).message}`);
  }
}
