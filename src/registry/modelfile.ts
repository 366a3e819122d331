// Modelfile parser and printer, following Ollama's parser/parser.go: a per-character state machine
// (instruction name → value), `"..."` / `"""..."""` values that may span lines, `#` comment lines,
// a tolerated BOM. PARAMETER values are type-checked here against Ollama's options table.

export type ModelfileCommandName =
  | "model"
  | "template"
  | "system"
  | "parameter"
  | "message"
  | "license"
  | "adapter"
  | "requires"
  | "draft"
  | "renderer"
  | "parser";

/** `parameter` args are "key value"; `message` args are "role content"; others the raw value. */
export interface ModelfileCommand {
  name: ModelfileCommandName;
  args: string;
}

export class ModelfileError extends Error {
  override name = "ModelfileError";
  constructor(
    message: string,
    readonly line?: number,
  ) {
    super(line !== undefined && line > 0 ? `(line ${line}): ${message}` : message);
  }
}

export interface ParseModelfileOptions {
  /** Receives notices such as deprecated parameters; default writes them to stderr. */
  onWarning?: (message: string) => void;
}

/** Type of every option Ollama knows, including the deprecated ones a Modelfile may still carry. */
export const OPTION_TYPES: Readonly<Record<string, "int" | "float" | "bool" | "string[]">> = Object.freeze({
  // runner options (fixed at load)
  num_ctx: "int",
  num_batch: "int",
  num_gpu: "int",
  main_gpu: "int",
  use_mmap: "bool",
  num_thread: "int",
  draft_num_predict: "int",
  // ollamats: prompt-lookup decoding for a model without a draft (docs/performance.md)
  prompt_lookup: "bool",
  // sampling / prediction
  num_keep: "int",
  seed: "int",
  num_predict: "int",
  top_k: "int",
  top_p: "float",
  min_p: "float",
  typical_p: "float",
  repeat_last_n: "int",
  temperature: "float",
  repeat_penalty: "float",
  presence_penalty: "float",
  frequency_penalty: "float",
  stop: "string[]",
  // deprecated: accepted, warned about and dropped
  penalize_newline: "bool",
  low_vram: "bool",
  f16_kv: "bool",
  logits_all: "bool",
  vocab_only: "bool",
  use_mlock: "bool",
  mirostat: "int",
  mirostat_tau: "float",
  mirostat_eta: "float",
  tfs_z: "float",
  numa: "bool",
});

export const DEPRECATED_OPTIONS: ReadonlySet<string> = new Set([
  "penalize_newline",
  "low_vram",
  "f16_kv",
  "logits_all",
  "vocab_only",
  "use_mlock",
  "mirostat",
  "mirostat_tau",
  "mirostat_eta",
  "tfs_z",
  "numa",
]);

const GO_TRUE = ["1", "t", "T", "TRUE", "true", "True"];
const GO_FALSE = ["0", "f", "F", "FALSE", "false", "False"];
const MAX_INT64 = 9223372036854775807n;
const MAX_FLOAT32 = 3.4028234663852886e38;

/**
 * Type a PARAMETER value (api.FormatParams): `raw` holds every value given for `key` (only `stop`
 * uses more than the first). Throws Ollama's messages: `unknown parameter 'x'`,
 * `invalid int value [x]`, `invalid float value [x]`, `invalid bool value [x]`.
 */
export function parseParameterValue(key: string, raw: string[]): unknown {
  const type = Object.hasOwn(OPTION_TYPES, key) ? OPTION_TYPES[key] : undefined;
  if (type === undefined) throw new Error(`unknown parameter '${key}'`);
  const first = raw[0] ?? "";
  const shown = `[${raw.join(" ")}]`;
  switch (type) {
    case "string[]":
      return [...raw];
    case "int": {
      const ok = /^[+-]?\d+$/.test(first) && BigInt(first) <= MAX_INT64 && BigInt(first) >= -MAX_INT64 - 1n;
      if (!ok) throw new Error(`invalid int value ${shown}`);
      return Number(first);
    }
    case "float": {
      // Decimal syntax of Go's ParseFloat; inf/nan are refused because they cannot be stored as JSON.
      const ok = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(first);
      const v = ok ? Number(first) : NaN;
      if (!Number.isFinite(v) || Math.abs(v) > MAX_FLOAT32) throw new Error(`invalid float value ${shown}`);
      return v;
    }
    case "bool":
      if (GO_TRUE.includes(first)) return true;
      if (GO_FALSE.includes(first)) return false;
      throw new Error(`invalid bool value ${shown}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Parser

const COMMANDS = ["from", "license", "template", "system", "adapter", "draft", "renderer", "parser", "parameter", "message", "requires"];
const ERR_COMMAND =
  'command must be one of "from", "license", "template", "system", "adapter", "draft", "renderer", "parser", "parameter", "message", or "requires"';
const ERR_ROLE = 'message role must be one of "system", "user", or "assistant"';
const ROLES = ["system", "user", "assistant"];

type State = "nil" | "name" | "value" | "parameter" | "message" | "comment";

const isSpace = (c: string) => c === " " || c === "\t";
const isNewline = (c: string) => c === "\r" || c === "\n";
const isAlpha = (c: string) => (c >= "a" && c <= "z") || (c >= "A" && c <= "Z");
const isDigit = (c: string) => c >= "0" && c <= "9";
/** Go's strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const isPrint = (c: string) => /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(c);

/** One step of Ollama's parseRuneForState: the next state and the character to keep ("" = none). */
function transition(state: State, c: string): { next: State; keep: string; error?: "command" | "eof" } {
  switch (state) {
    case "nil":
      if (c === "#") return { next: "comment", keep: "" };
      if (isSpace(c) || isNewline(c)) return { next: "nil", keep: "" };
      return { next: "name", keep: c };
    case "name":
      if (isAlpha(c)) return { next: "name", keep: c };
      if (isSpace(c)) return { next: "value", keep: "" };
      return { next: "nil", keep: "", error: "command" };
    case "value":
      return { next: isNewline(c) || isSpace(c) ? "nil" : "value", keep: c };
    case "parameter":
      if (isAlpha(c) || isDigit(c) || c === "_") return { next: "parameter", keep: c };
      if (isSpace(c)) return { next: "value", keep: "" };
      return { next: "nil", keep: "", error: "eof" };
    case "message":
      if (isAlpha(c)) return { next: "message", keep: c };
      if (isSpace(c)) return { next: "value", keep: "" };
      return { next: "nil", keep: "", error: "eof" };
    case "comment":
      return { next: isNewline(c) ? "nil" : "comment", keep: "" };
  }
}

/** Strip `"..."` or `"""..."""`; null while a quoted value is still open. */
function unquote(s: string): string | null {
  if (s.startsWith('"""')) return s.length >= 6 && s.endsWith('"""') ? s.slice(3, -3) : null;
  if (s.startsWith('"')) return s.length >= 2 && s.endsWith('"') ? s.slice(1, -1) : null;
  return s;
}

/** Decode bytes honouring a UTF-8 or UTF-16 BOM (as Ollama's BOMOverride), dropping the BOM. */
function decodeText(input: string | Uint8Array): string {
  if (typeof input === "string") return input.replace(/^\uFEFF/, "");
  const b = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  if (b[0] === 0xff && b[1] === 0xfe) return b.subarray(2).toString("utf16le");
  if (b[0] === 0xfe && b[1] === 0xff) return Buffer.from(b.subarray(2)).swap16().toString("utf16le");
  return b.toString("utf8").replace(/^\uFEFF/, "");
}

/** semver as golang.org/x/mod/semver.IsValid after Ollama prefixes "v" (v1, v1.2 allowed). */
function isValidRequires(s: string): boolean {
  const n = "(0|[1-9]\\d*)";
  const pre = "(0|[1-9]\\d*|\\d*[A-Za-z-][0-9A-Za-z-]*)";
  const re = new RegExp(`^v?${n}(\\.${n}(\\.${n}(-${pre}(\\.${pre})*)?(\\+[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?)?)?$`);
  return re.test(s);
}

/** Parse a Modelfile into commands. Throws ModelfileError (`(line N): ...`, or `no FROM line`). */
export function parseModelfile(input: string | Uint8Array, opts: ParseModelfileOptions = {}): ModelfileCommand[] {
  const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`${m}\n`));
  const text = decodeText(input);
  const commands: ModelfileCommand[] = [];
  let state: State = "nil";
  let buf = "";
  let line = 1;
  let prev = "";
  let cmdLine = 1;
  let cmdName: ModelfileCommandName = "model";
  let key = "";
  let role = "";

  const finish = (value: string) => {
    if (cmdName === "parameter") {
      if (DEPRECATED_OPTIONS.has(key)) return warn(`warning: parameter ${key} is deprecated`);
      try {
        parseParameterValue(key, [value]);
      } catch (e) {
        throw new ModelfileError((e as Error).message, cmdLine);
      }
      commands.push({ name: "parameter", args: `${key} ${value}` });
    } else if (cmdName === "message") {
      commands.push({ name: "message", args: `${role} ${value}` });
    } else {
      if (cmdName === "requires" && !isValidRequires(value)) {
        throw new ModelfileError("requires must be a valid semver (e.g. 0.14.0)", cmdLine);
      }
      commands.push({ name: cmdName, args: value });
    }
  };

  for (const c of text) {
    // A newline counts toward the line it ends; "\r\n" is one line break.
    if (isNewline(prev) && !(prev === "\r" && c === "\n")) line++;
    prev = c;
    const step = transition(state, c);
    if (step.error === "command") throw new ModelfileError(ERR_COMMAND, line);
    if (step.error === "eof") throw new ModelfileError(`unexpected EOF: ${buf}`, line);
    let next = step.next;
    if (next !== state) {
      if (state === "name") {
        const s = buf.toLowerCase();
        if (!COMMANDS.includes(s)) throw new ModelfileError(ERR_COMMAND, line);
        cmdLine = line;
        if (s === "from") cmdName = "model";
        else {
          cmdName = s as ModelfileCommandName;
          if (s === "parameter" || s === "message") next = s as State;
        }
      } else if (state === "parameter") {
        key = buf;
      } else if (state === "message") {
        if (!ROLES.includes(buf)) throw new ModelfileError(ERR_ROLE, line);
        role = buf;
      } else if (state === "value") {
        const value = unquote(buf.trim());
        // Spaces never end a value; a newline ends it only once its quotes are closed.
        if (value === null || isSpace(c)) {
          buf += c;
          continue;
        }
        finish(value);
      }
      buf = "";
      state = next;
    }
    if (step.keep !== "" && isPrint(step.keep)) buf += step.keep;
  }

  if (state === "value") {
    const value = unquote(buf.trim());
    if (value === null) throw new ModelfileError("unexpected EOF", cmdLine);
    finish(value);
  } else if (state !== "nil" && state !== "comment") {
    throw new ModelfileError("unexpected EOF", line);
  }
  if (!commands.some((c) => c.name === "model")) throw new ModelfileError("no FROM line");
  return commands;
}

// ---------------------------------------------------------------------------------------------
// Printer

/**
 * Quote a value the way `ollama show --modelfile` does: values with a newline or surrounding
 * whitespace are wrapped in `"..."`, or `"""..."""` when they contain `"`. A value starting with
 * `"` is wrapped too (Ollama does not), so that it parses back unchanged.
 */
export function quoteModelfileValue(s: string): string {
  if (s.includes("\n") || /^\s|\s$/.test(s) || s.startsWith('"')) {
    return s.includes('"') ? `"""${s}"""` : `"${s}"`;
  }
  return s;
}

/** A PARAMETER or MESSAGE command's args as [key or role, value]: the parser joins them with
 *  one space, and the value keeps its own spaces (`PARAMETER stop " end "`). */
export function splitCommandArgs(s: string): [string, string] {
  const i = s.indexOf(" ");
  return i < 0 ? [s, ""] : [s.slice(0, i), s.slice(i + 1)];
}

/** One command as a Modelfile line (Command.String in parser.go). */
export function formatModelfileCommand(cmd: ModelfileCommand): string {
  switch (cmd.name) {
    case "model":
      return `FROM ${cmd.args}`;
    case "parameter": {
      const [k, v] = splitCommandArgs(cmd.args);
      return `PARAMETER ${k} ${quoteModelfileValue(v)}`;
    }
    case "message": {
      const [r, v] = splitCommandArgs(cmd.args);
      return `MESSAGE ${r} ${quoteModelfileValue(v)}`;
    }
    default:
      return `${cmd.name.toUpperCase()} ${quoteModelfileValue(cmd.args)}`;
  }
}

/** A whole Modelfile: one line per command, each ending in "\n". */
export function formatModelfile(commands: ModelfileCommand[]): string {
  return commands.map((c) => `${formatModelfileCommand(c)}\n`).join("");
}
