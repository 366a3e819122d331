// How a model writes a tool call. A Go TEMPLATE shows it in its `{{ if .ToolCalls }}` block and is
// read as Ollama reads it (a tag, then JSON). A GGUF's Jinja template is asked instead: a call to a
// made-up tool is rendered through it and the text around the tool's name tells the syntax, the
// way llama.cpp tells its chat formats apart. Models write calls in a dozen syntaxes (Qwen3-Coder's
// `<function=…>` XML, GLM's arg_key/arg_value pairs, MiniMax's and DeepSeek's `invoke`,
// Mistral's `name[ARGS]{…}`, Gemma 4's `call:name{…}`, LFM2's python lists, Kimi K3's XTML,
// MiniMax-M3's elements, functionary's addressed messages); a tag-then-JSON
// reading of those found no call at all. A Modelfile PARSER naming one of Ollama's parsers picks
// the syntax that parser reads.
import { renderPrompt, type PromptTemplate } from "./render.js";
import { SourceCache } from "./source-cache.js";
import { toolCallTagFromTree } from "./tools.js";

export type ToolDialect =
  // `exact`: the template writes a value right between its tags, no newline around it (GLM's
  //  `<arg_value>v</arg_value>`, where Qwen3-Coder's writes `<parameter=k>\nv\n</parameter>`), so a
  //  newline at a value's end is the value's own (a file's last line break, written through a tool).
  /** `tag` then JSON calls (`{` alone: calls are bare JSON); python-style lists understood too. */
  | { kind: "json"; tag: string }
  /** A tool's name, then its arguments as one JSON object (Mistral's `[ARGS]`, DeepSeek, Kimi,
   *  functionary). `head`: the text from the section's start up to the arguments, with the tool's
   *  name as NAME_MARK, for tool_choice. */
  | { kind: "named-json"; start: string; head?: string }
  /** `<function=NAME><parameter=KEY>value</parameter></function>` (Qwen3-Coder, Qwen3.5, Nemotron 3). */
  | { kind: "xml-function"; start: string; exact?: true }
  /** `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>value</arg_value></tool_call>` (GLM 4.5+,
   *  Laguna; Hunyuan's tags carry a suffix, `<arg_key:opensource>`). `unit`: the tag each call
   *  opens with; `start` may be a wrapper around all of them. */
  | { kind: "arg-pairs"; start: string; unit: string; suffix: string; exact?: true }
  /** `<NSinvoke name="NAME"><NSparameter name="KEY">value</NSparameter></NSinvoke>` (MiniMax-M2,
   *  DeepSeek V3.2's DSML; MiniCPM's `<function name=…><param name=…>`). */
  | { kind: "invoke"; start: string; ns: string; call: string; param: string; exact?: true }
  /** `call:NAME{key:<|"|>text<|"|>,n:1}` (Gemma 4). */
  | { kind: "gemma4"; start: string }
  /** `[NAME(key="value")]` after a tag of its own (LFM2). */
  | { kind: "python"; start: string }
  /** MiniMax-M3: `NS<invoke name="NAME">NS<KEY>value NS</KEY>NS</invoke>` with `ns` (`]<]minimax[>[`)
   *  before every tag; objects as nested elements, lists as `<item>`s. */
  | { kind: "elements"; start: string; ns: string; exact?: true }
  /** Kimi K3's XTML: `<|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|><|open|>argument
   *  key="KEY" type="string"<|sep|>value<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>`
   *  (`start` is the tools section's opening). */
  | { kind: "xtml"; start: string; open: string; close: string; sep: string }
  /** Every message is addressed (functionary v3.2): the generation prompt ends in `marker`, the
   *  model writes a recipient line, then `text` (the user: "all") gets prose and a tool gets its
   *  arguments as JSON; `marker` starts the next message. */
  | { kind: "recipient"; marker: string; text: string };

/** The tag that closes an arg-pairs call opened by `unit` (`<tool_call>` → `</tool_call>`). */
export function pairsClose(unit: string): string {
  return unit.startsWith("<") ? `</${unit.slice(1)}` : "</tool_call>";
}

/** The tag that closes a python-style call list opened by `start` (LFM2's `<|tool_call_start|>` →
 *  `<|tool_call_end|>`; "" when it has none). */
export function pythonEnd(start: string): string {
  if (start.includes("start")) return start.replace("start", "end");
  // an element of its own (OLMo 3's `<function_calls>`) closes as elements do
  const element = /^<([A-Za-z_][\w:-]*)>$/.exec(start);
  return element ? `</${element[1]}>` : "";
}

/** The tag that closes a markup dialect's call section ("" when the section is the call itself or
 *  the syntax has none): Qwen3-Coder's `</tool_call>`, Gemma 4's `<tool_call|>`, LFM2's
 *  `<|tool_call_end|>`, MiniMax-M3's `NS</tool_call>`, Kimi K3's `<|close|>tools<|sep|>`. */
export function sectionEnd(d: ToolDialect): string {
  switch (d.kind) {
    case "xml-function":
    case "arg-pairs":
    case "invoke": {
      const unit = d.kind === "xml-function" ? "<function=" : d.kind === "arg-pairs" ? d.unit : `<${d.ns}${d.call} `;
      return d.start.startsWith(unit) || !/^<[^<>\s]+>$/.test(d.start) ? "" : `</${d.start.slice(1)}`;
    }
    case "gemma4":
      return d.start === "<|tool_call>" ? "<tool_call|>" : "";
    case "python":
      return pythonEnd(d.start);
    case "elements":
      return d.start.startsWith(`${d.ns}<invoke`) ? "" : `${d.ns}</${d.start.slice(d.ns.length + 1)}`;
    case "xtml":
      return `${d.close}tools${d.sep}`;
    default:
      return "";
  }
}

/** Stands for the tool's name in a learned `head`. */
export const NAME_MARK = "\u0000NAME\u0000";

const GLM_PAIRS: ToolDialect = { kind: "arg-pairs", start: "<tool_call>", unit: "<tool_call>", suffix: "", exact: true };

/** Ollama's model-specific parsers (Modelfile PARSER, a registry model's config) and the syntax each reads. */
const PARSER_DIALECTS: Readonly<Record<string, ToolDialect>> = {
  "qwen3-coder": { kind: "xml-function", start: "<tool_call>" },
  "qwen3.5": { kind: "xml-function", start: "<tool_call>" },
  ornith: { kind: "xml-function", start: "<tool_call>" },
  "nemotron-3-nano": { kind: "xml-function", start: "<tool_call>" },
  "nemotron-3.5-nano": { kind: "xml-function", start: "<tool_call>" },
  qwen3: { kind: "json", tag: "<tool_call>" },
  "qwen3-thinking": { kind: "json", tag: "<tool_call>" },
  "qwen3-vl-instruct": { kind: "json", tag: "<tool_call>" },
  "qwen3-vl-thinking": { kind: "json", tag: "<tool_call>" },
  "glm-4.6": GLM_PAIRS,
  "glm-4.7": GLM_PAIRS,
  laguna: GLM_PAIRS,
  "poolside-v1": GLM_PAIRS,
  glimmer: { kind: "invoke", ns: "atem:", call: "invoke", param: "parameter", start: "<atem:function_calls>", exact: true },
  cohere: { kind: "named-json", start: "<|START_ACTION|>" },
  ministral: { kind: "named-json", start: "[TOOL_CALLS]" },
  deepseek3: { kind: "named-json", start: "<｜tool▁calls▁begin｜>" },
  lfm2: { kind: "python", start: "<|tool_call_start|>" },
  "lfm2-thinking": { kind: "python", start: "<|tool_call_start|>" },
  gemma4: { kind: "gemma4", start: "<|tool_call>" },
  "gemma4-no-thinking": { kind: "gemma4", start: "<|tool_call>" },
};

const PROBE_TOOL = "zq_probe_tool";
const PROBE_ARG = "zq_probe_arg";
const PROBE_VALUE = "zq_probe_value";
const PROBE_USER = "zq probe question";

const PROBE_MAX = 16 << 10;
const learned = new SourceCache<ToolDialect>();

/** The syntax of the model's tool calls: from its config's parser, else from its template. */
export function toolDialect(template: PromptTemplate, parser?: string): ToolDialect {
  // the name is the user's (Modelfile PARSER): only the table's own entries, never "constructor"
  const named = parser && Object.hasOwn(PARSER_DIALECTS, parser) ? PARSER_DIALECTS[parser] : undefined;
  if (named) return named;
  switch (template.kind) {
    case "go":
      return { kind: "json", tag: toolCallTagFromTree(template.template.template.root) };
    case "default":
      return { kind: "json", tag: "{" };
    case "jinja":
      return learned.get(template.source, () => learnDialect(template) ?? sourceGuess(template.source));
  }
}

/** The tag-then-JSON reading of a template that would not render the probe (as before: Qwen's and Mistral's tags). */
function sourceGuess(source: string): ToolDialect {
  if (source.includes("<tool_call>")) return { kind: "json", tag: "<tool_call>" };
  if (source.includes("[TOOL_CALLS]")) return { kind: "json", tag: "[TOOL_CALLS]" };
  return { kind: "json", tag: "{" };
}

/** The text a template writes for an assistant's call to the probe tool, after the generation
 *  prompt, and that prompt's last characters. */
function probeSection(t: PromptTemplate): { section: string; promptEnd: string } | undefined {
  const tools = [
    {
      type: "function",
      function: {
        name: PROBE_TOOL,
        description: "probe",
        parameters: { type: "object", properties: { [PROBE_ARG]: { type: "string", description: "probe" } }, required: [PROBE_ARG] },
      },
    },
  ];
  const user = { role: "user", content: PROBE_USER };
  // nine alphanumerics: Mistral's templates refuse any other id
  const call = { role: "assistant", content: "", tool_calls: [{ id: "a1b2c3d4e", function: { name: PROBE_TOOL, arguments: { [PROBE_ARG]: PROBE_VALUE } } }] };
  let asked: string;
  let answered: string;
  try {
    asked = renderPrompt(t, { messages: [user], tools });
    answered = renderPrompt(t, { messages: [user, call], tools });
  } catch {
    return undefined;
  }
  const ua = asked.indexOf(PROBE_USER);
  const ub = answered.indexOf(PROBE_USER);
  if (ua === -1 || ub === -1) return undefined;
  // A call takes a few hundred characters; more is no chat template's call (and the patterns
  // below are not run over megabytes a hostile template writes).
  if (answered.length - ub > PROBE_MAX) return undefined;
  return { section: afterPrompt(asked.slice(ua + PROBE_USER.length), answered.slice(ub + PROBE_USER.length)), promptEnd: asked.slice(-16) };
}

/** The recipient a template addresses prose to: the line it writes before a plain answer. */
function textRecipient(t: PromptTemplate): string | undefined {
  const user = { role: "user", content: PROBE_USER };
  try {
    const asked = renderPrompt(t, { messages: [user] });
    const answered = renderPrompt(t, { messages: [user, { role: "assistant", content: PROBE_VALUE }] });
    const ua = asked.indexOf(PROBE_USER);
    const ub = answered.indexOf(PROBE_USER);
    if (ua === -1 || ub === -1 || answered.length - ub > PROBE_MAX) return undefined;
    const section = afterPrompt(asked.slice(ua + PROBE_USER.length), answered.slice(ub + PROBE_USER.length));
    return /^([\w.-]{1,32})\n/.exec(section.slice(0, section.indexOf(PROBE_VALUE)))?.[1];
  } catch {
    return undefined;
  }
}

/** `answer` past what it shares with `prompt` (the end of the user's turn and the generation
 *  prompt), not cut inside a token both start alike (`<|START_RESPONSE|>`, `<|START_ACTION|>`). */
export function afterPrompt(prompt: string, answer: string): string {
  let i = 0;
  while (i < prompt.length && i < answer.length && prompt[i] === answer[i]) i++;
  const open = Math.max(answer.lastIndexOf("<", i - 1), answer.lastIndexOf("[", i - 1));
  const close = Math.max(answer.lastIndexOf(">", i - 1), answer.lastIndexOf("]", i - 1));
  if (open > close) i = open;
  const rest = answer.slice(i);
  // A prompt that puts more before its generation prompt (Command R's instructions) parts from
  // the answer earlier: the generation prompt's end, where the answer repeats it, is not the answer.
  for (let k = Math.min(rest.length, 64); k > 0; k--) if (prompt.endsWith(rest.slice(0, k))) return rest.slice(k);
  return rest;
}

/** A thinking block (or its lone close) that a template writes before an answer. */
const LEADING_THINK = /^\s*(?:<think>[\s\S]*?<\/think>|<\/think>)/;

/** The first token of the text before a call: `<tool_call>`, `[TOOL_CALLS]`, `<function=`, `>>>`. */
function firstToken(head: string): string {
  const h = head.replace(LEADING_THINK, "").trim();
  if (h === "") return "";
  if (h[0] === "<") {
    const close = h.indexOf(">");
    return close === -1 ? h : h.slice(0, close + 1);
  }
  if (h[0] === "[") {
    const close = h.indexOf("]");
    return close === -1 ? h : h.slice(0, close + 1);
  }
  return h.split(/\s+/)[0]!;
}

/** Reads the syntax off the probe call as the template wrote it; undefined when it shows no call. */
export function learnDialect(t: PromptTemplate): ToolDialect | undefined {
  const probe = probeSection(t);
  if (probe === undefined) return undefined;
  const s = probe.section;
  const at = s.indexOf(PROBE_TOOL);
  if (at === -1) return { kind: "json", tag: "{" }; // the template shows no calls: Ollama's default
  const before = s.slice(0, at);
  const after = s.slice(at + PROBE_TOOL.length);
  const v = s.indexOf(PROBE_VALUE);
  const exact = v > 0 && s[v - 1] !== "\n" && s[v + PROBE_VALUE.length] !== "\n" ? ({ exact: true } as const) : {};

  // Markup that names the tool, wherever the template wrote it (a header may name it first).
  const xml = s.indexOf(`<function=${PROBE_TOOL}>`);
  if (xml !== -1 && s.includes(`<parameter=${PROBE_ARG}>`, xml)) return { kind: "xml-function", start: firstToken(s.slice(0, xml)) || "<function=", ...exact };
  const inv = new RegExp(`<([^<>\\s]*?)(\\w+) name="${PROBE_TOOL}"`).exec(s);
  const param = inv && new RegExp(`<${escapeRegExp(inv[1]!)}(\\w+) name="${PROBE_ARG}"`).exec(s.slice(inv.index));
  if (inv && param) {
    const [, ns, call] = inv as unknown as [string, string, string];
    return { kind: "invoke", ns, call, param: param[1]!, start: lastToken(s.slice(0, inv.index)) || `<${ns}${call} name="`, ...exact };
  }
  // Parameters as elements of their own name, every tag after the same separator token
  const element = s.indexOf(`<${PROBE_ARG}>`);
  const end = s.indexOf("</invoke>");
  if (inv && element !== -1 && end !== -1) {
    const ns = commonSuffix(s.slice(0, inv.index), s.slice(0, end));
    if (ns !== "" && s.startsWith(ns, element - ns.length)) {
      const wrapper = new RegExp(`${escapeRegExp(ns)}<[^<>\\s]+>`).exec(s.slice(0, inv.index - ns.length))?.[0];
      return { kind: "elements", start: wrapper ?? `${ns}<invoke name="`, ns, ...exact };
    }
  }
  const key = new RegExp(`<arg_key([^>]*)>${PROBE_ARG}</arg_key\\1>`).exec(after);
  if (key) {
    const unit = lastToken(before) || "<tool_call>";
    return { kind: "arg-pairs", start: firstToken(before) || unit, unit, suffix: key[1]!, ...exact };
  }
  if (before.endsWith("call:") && after.startsWith("{")) return { kind: "gemma4", start: firstToken(before.slice(0, -"call:".length)) || "call:" };
  if (/^\s*\(/.test(after)) {
    const start = firstToken(before.replace(/\[\s*$/, ""));
    return start === "" ? { kind: "json", tag: "[" } : { kind: "python", start };
  }
  const open = before.lastIndexOf("{");
  if (open !== -1 && /^\{\s*(?:"\w+"\s*:\s*)?"$/.test(before.slice(open))) {
    // The name is a JSON string ("name": "…", or a key): calls are JSON, after whatever opens them.
    const tag = firstToken(before.slice(0, open).replace(/\[\s*$/, ""));
    return { kind: "json", tag: tag === "" ? "{" : tag };
  }
  // Kimi K3's XTML: elements opened and closed by tokens, attributes in quotes
  const xtml = new RegExp(`(<\\|[^<>|\\s]{1,20}\\|>)call tool="${PROBE_TOOL}"[^<]*(<\\|[^<>|\\s]{1,20}\\|>)`).exec(s);
  if (xtml) {
    const [, open, sep] = xtml as unknown as [string, string, string];
    const close = new RegExp(`(<\\|[^<>|\\s]{1,20}\\|>)call${escapeRegExp(sep)}`).exec(s.slice(xtml.index + xtml[0].length))?.[1];
    if (close && close !== open) return { kind: "xtml", start: `${open}tools${sep}`, open, close, sep };
  }
  // The generation prompt ends in the call's own marker (functionary v3.2's `>>>`): the section
  // starts with the tool's name on a line of its own.
  const marker = /[^\w\s]{2,8}$/.exec(probe.promptEnd)?.[0];
  if (before === "" && marker && /^\n\s*\{/.test(after)) {
    const text = textRecipient(t);
    if (text) return { kind: "recipient", marker, text };
  }
  const args = after.indexOf(`{"${PROBE_ARG}"`);
  if (args !== -1 && !after.slice(0, args).includes("\n\n")) return { kind: "named-json", start: firstToken(before) || PROBE_TOOL, head: namedHead(before, after) };
  return undefined; // a syntax not known here: the template's source decides, as before
}

/** The longest text both end with, within one line. */
function commonSuffix(a: string, b: string): string {
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n] && a[a.length - 1 - n] !== "\n") n++;
  return a.slice(a.length - n);
}

/** The last `<…>` token of the text before a call's markup: its wrapper (`<minimax:tool_call>`). */
function lastToken(head: string): string {
  const m = /<[^<>]+>\s*$/.exec(head);
  return m ? m[0].trim() : "";
}

/** The text from the call section's start up to its arguments' `{`, the name marked. */
function namedHead(before: string, after: string): string | undefined {
  const open = after.indexOf("{");
  if (open === -1) return undefined;
  return before.replace(LEADING_THINK, "").trimStart() + NAME_MARK + after.slice(0, open);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
