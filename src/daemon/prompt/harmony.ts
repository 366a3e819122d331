// OpenAI's harmony response format (gpt-oss), read as Ollama's harmony parser reads it
// (reference §7.2–7.3): the answer is a run of messages `<|start|>role<|channel|>name
// [to=recipient] [<|constrain|>type]<|message|>text<|end|>`. The `analysis` channel is thinking,
// `final` (and `commentary` to nobody) is content, and a message to a recipient (`to=functions.x`)
// is a tool call whose text is the JSON arguments; the call is read when the answer ends, since
// `<|call|>` ends the generation. Tool names are written into the prompt as identifiers
// (HarmonyNames) and mapped back when read.
import type { ToolCall } from "../../api/types.js";
import type { PromptTemplate } from "./render.js";

const START = "<|start|>";
const END = "<|end|>";
const MESSAGE = "<|message|>";
const CHANNEL = "<|channel|>";
const CONSTRAIN = "<|constrain|>";

/** Ollama's rule: a gpt-oss model whose template writes harmony messages, or any model whose
 *  config names the harmony parser (Modelfile `PARSER harmony`). */
export function usesHarmony(config: { model_family?: string; parser?: string }, template: PromptTemplate | undefined): boolean {
  if (config.parser === "harmony") return true;
  if (config.model_family !== "gptoss" && config.model_family !== "gpt-oss") return false;
  const source = template && template.kind !== "default" ? template.source : "";
  return source.includes(START) && source.includes(END);
}

/** Harmony's reasoning levels are low, medium and high: "max" asks for the most there is. */
export function harmonyLevel(level: string): string {
  return level === "max" ? "high" : level;
}

/** Built-in tools gpt-oss was trained on keep their names. */
const BUILTIN_TOOLS: ReadonlySet<string> = new Set(["browser.open", "browser.search", "browser.find", "python"]);

/** Tool names as the identifiers harmony's TypeScript-like tool list needs, both ways. */
export class HarmonyNames {
  private readonly toHarmony = new Map<string, string>();
  private readonly toUser = new Map<string, string>();

  /** The name the prompt shows for a client's tool (remembered, so the answer maps back). */
  add(name: string): string {
    const base = BUILTIN_TOOLS.has(name) ? name : identifier(name);
    let candidate = base;
    if (!BUILTIN_TOOLS.has(name)) for (let n = 2; this.toUser.has(candidate); n++) candidate = `${base}_${n}`;
    this.toHarmony.set(name, candidate);
    this.toUser.set(candidate, name);
    return candidate;
  }

  /** The prompt's name for a client's tool added before. */
  harmony(name: string): string | undefined {
    return this.toHarmony.get(name);
  }

  /** The client's name for a name the model wrote (as written when it is no tool of ours). */
  user(harmonyName: string): string {
    return this.toUser.get(harmonyName) ?? harmonyName;
  }
}

/** Spaces, `-` and `.` become `_`; letters, digits, `_` and `$` stay; anything else goes. */
function identifier(name: string): string {
  let out = "";
  for (const ch of name) {
    if (ch === " " || ch === "-" || ch === ".") out += "_";
    else if (/[\p{L}\p{Nd}_$]/u.test(ch)) out += ch;
  }
  if (out === "") return "unnamed";
  return /^[0-9]/.test(out) ? `_${out}` : out;
}

/** Tools with their names as the prompt shows them (the originals are not changed). */
export function harmonyTools<T>(tools: readonly T[], names: HarmonyNames): T[] {
  return tools.map((t) => {
    const fn = (t as { function?: { name?: unknown } }).function;
    if (!fn || typeof fn.name !== "string" || fn.name === "") return t;
    return { ...t, function: { ...fn, name: names.add(fn.name) } };
  });
}

interface Header {
  role: string;
  channel: string;
  recipient: string;
}

/** The header between `<|start|>` and `<|message|>`: role, channel and recipient. */
export function parseHeader(raw: string): Header {
  const header: Header = { role: "", channel: "", recipient: "" };
  let text = raw.includes(CONSTRAIN) ? raw.replace(CONSTRAIN, ` ${CONSTRAIN}`).trim() : raw;
  const at = text.indexOf(CHANNEL);
  if (at !== -1) {
    const after = text.slice(at + CHANNEL.length);
    const end = after.search(/\s/);
    header.channel = end === -1 ? after : after.slice(0, end);
    text = (text.slice(0, at) + (end === -1 ? "" : after.slice(end))).trim();
  }
  const words = text.split(/\s+/).filter((w) => w !== "");
  const role = words.shift();
  if (role === undefined) return header;
  if (role.startsWith("to=")) {
    header.recipient = role.slice(3);
    header.role = "tool";
  } else header.role = role;
  if (header.recipient === "" && words[0]?.startsWith("to=")) header.recipient = words[0].slice(3);
  return header;
}

export interface HarmonyStep {
  content: string;
  thinking: string;
}

type State = "looking" | "header" | "content";
type Kind = "content" | "thinking" | "tool";

/** The last message of the conversation, when it is the assistant's own start (prefill). */
export interface HarmonyPrefill {
  role: string;
  content?: string;
  thinking?: string;
}

/** A streaming reader of a harmony answer: text in, content and thinking out, the call at the end. */
export class HarmonyParser {
  private state: State = "looking";
  private kind: Kind = "content";
  private acc = "";
  private toolName: string | undefined;
  private toolArgs = "";

  constructor(
    private readonly names: HarmonyNames,
    last?: HarmonyPrefill,
  ) {
    // The prompt ends inside the assistant's message: the parser starts where the prompt stops.
    let implicit = `${START}assistant`;
    if (last?.role === "assistant" && last.content) implicit += `${CHANNEL}final${MESSAGE}`;
    else if (last?.role === "assistant" && last.thinking) implicit += `${CHANNEL}analysis${MESSAGE}`;
    this.add(implicit);
  }

  add(text: string): HarmonyStep {
    const out: HarmonyStep = { content: "", thinking: "" };
    this.acc += text;
    while (this.step(out));
    return out;
  }

  /** The end of the answer: the tool call it made, if any (a 500 when its arguments are no JSON
   *  object, as in Ollama). Text still held (a message never started) is dropped, as there. */
  finish(): ToolCall[] {
    if (this.toolName === undefined) return [];
    const raw = this.toolArgs;
    let args: unknown;
    try {
      args = JSON.parse(raw);
    } catch (err) {
      throw new HarmonyToolCallError(raw, (err as Error).message);
    }
    if (args !== null && (typeof args !== "object" || Array.isArray(args))) throw new HarmonyToolCallError(raw, "the arguments are not a JSON object");
    const name = this.names.user(this.toolName.startsWith("functions.") ? this.toolName.slice("functions.".length) : this.toolName);
    return [{ function: { index: 0, name, arguments: (args ?? {}) as Record<string, unknown> } }];
  }

  /** One move of the state machine; false when it needs more text. */
  private step(out: HarmonyStep): boolean {
    switch (this.state) {
      case "looking": {
        const at = this.acc.indexOf(START);
        if (at === -1) return false;
        this.acc = this.acc.slice(at + START.length);
        this.state = "header";
        return true;
      }
      case "header": {
        const at = this.acc.indexOf(MESSAGE);
        if (at === -1) return false;
        this.begin(parseHeader(this.acc.slice(0, at)));
        this.acc = this.acc.slice(at + MESSAGE.length);
        this.state = "content";
        return true;
      }
      case "content": {
        const at = this.acc.indexOf(END);
        if (at !== -1) {
          this.emit(out, this.acc.slice(0, at));
          this.acc = this.acc.slice(at + END.length);
          this.state = "looking";
          this.kind = "content";
          return true;
        }
        // Hold back what may be the start of `<|end|>`.
        const keep = partialSuffix(this.acc, END);
        this.emit(out, this.acc.slice(0, this.acc.length - keep));
        this.acc = this.acc.slice(this.acc.length - keep);
        return false;
      }
    }
  }

  private begin(h: Header): void {
    if (h.recipient !== "" && (h.channel === "analysis" || h.channel === "commentary")) {
      this.kind = "tool";
      this.toolName = h.recipient;
    } else if (h.channel === "analysis") this.kind = "thinking";
    else if (h.channel === "commentary" || h.channel === "final") this.kind = "content";
  }

  private emit(out: HarmonyStep, text: string): void {
    if (text === "") return;
    if (this.kind === "thinking") out.thinking += text;
    else if (this.kind === "tool") this.toolArgs += text;
    else out.content += text;
  }
}

export class HarmonyToolCallError extends Error {
  constructor(raw: string, why: string) {
    super(`error parsing tool call: raw='${raw}', err=${why}`);
  }
}

/** The length of the longest end of `s` that is a proper start of `tag`. */
function partialSuffix(s: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, s.length); n > 0; n--) if (s.endsWith(tag.slice(0, n))) return n;
  return 0;
}

/** Where the final answer starts in the raw text so far (after its header), or -1: a format
 *  that applies after thinking restarts the generation there. */
export function finalMessageStart(raw: string): number {
  const at = raw.lastIndexOf(MESSAGE);
  return at === -1 ? -1 : at + MESSAGE.length;
}

/** The header of a call to a tool, as gpt-oss's template writes the assistant's calls (the
 *  prompt already ends with `<|start|>assistant`). */
export function harmonyCallHeader(harmonyName: string): string {
  return ` to=functions.${harmonyName}${CHANNEL}commentary json${MESSAGE}`;
}

/** What a prompt that ended in thinking gets appended to make the model answer at once (Ollama
 *  does this when a format applies after thinking). */
export const HARMONY_FINAL = `${END}${START}assistant${CHANNEL}final${MESSAGE}`;
