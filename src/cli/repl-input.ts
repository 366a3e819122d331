// The interactive `run` session's input handling as pure logic (cmd/interactive.go): one call per
// line typed, returning what to print and what the terminal side must do next. No I/O here.

import type { CreateRequest, Format, Message, ShowResponse, ThinkValue } from "../api/types.js";
import { goFloatG, goValue } from "./format.js";
import { extractFileNames } from "./images.js";
import { formatShowInfo } from "./show-info.js";
import type { ParameterParser } from "./modelfile-request.js";

export interface SessionState {
  model: string;
  /** details.parent_model of the loaded model (for /save). */
  parentModel: string;
  /** The model's own MESSAGEs (for /save). */
  loadedMessages: Message[];
  messages: Message[];
  system: string;
  options: Record<string, unknown>;
  wordWrap: boolean;
  verbose: boolean;
  /** "" for none; "json" or a JSON schema (from --format). */
  format: Format | "";
  think: ThinkValue | undefined;
  thinkExplicit: boolean;
  /** The model takes images/audio: file paths in a message are attached (see images.ts). */
  multiModal?: boolean;
}

export type Effect =
  | { type: "chat" }
  | { type: "exit" }
  | { type: "show"; what: string }
  | { type: "load"; model: string }
  | { type: "save"; name: string }
  | { type: "list"; prefix: string | undefined }
  | { type: "check-think" }
  | { type: "history"; enabled: boolean };

export interface LineResult {
  stdout: string;
  stderr: string;
  effect?: Effect;
  /** Show the continuation prompt ("... ") for the next line. */
  continuation: boolean;
}

export const USAGE =
  "Available Commands:\n" +
  "  /set            Set session variables\n" +
  "  /show           Show model information\n" +
  "  /load <model>   Load a session or model\n" +
  "  /save <model>   Save your current session\n" +
  "  /clear          Clear session context\n" +
  "  /bye            Exit\n" +
  "  /?, /help       Help for a command\n" +
  "  /? shortcuts    Help for keyboard shortcuts\n" +
  "\n" +
  'Use """ to begin a multi-line message.\n' +
  "\n";

export const USAGE_FILES = "Use /path/to/file to include .jpg, .png, .webp images, or .wav audio files.\n";

export const USAGE_SET =
  "Available Commands:\n" +
  "  /set parameter ...     Set a parameter\n" +
  "  /set system <string>   Set system message\n" +
  "  /set history           Enable history\n" +
  "  /set nohistory         Disable history\n" +
  "  /set wordwrap          Enable wordwrap\n" +
  "  /set nowordwrap        Disable wordwrap\n" +
  "  /set format json       Enable JSON mode\n" +
  "  /set noformat          Disable formatting\n" +
  "  /set verbose           Show LLM stats\n" +
  "  /set quiet             Disable LLM stats\n" +
  "  /set think             Enable thinking\n" +
  "  /set nothink           Disable thinking\n" +
  "\n";

export const USAGE_SHORTCUTS =
  "Available keyboard shortcuts:\n" +
  "  Ctrl + a            Move to the beginning of the line (Home)\n" +
  "  Ctrl + e            Move to the end of the line (End)\n" +
  "   Alt + b            Move back (left) one word\n" +
  "   Alt + f            Move forward (right) one word\n" +
  "  Ctrl + k            Delete the sentence after the cursor\n" +
  "  Ctrl + u            Delete the sentence before the cursor\n" +
  "  Ctrl + w            Delete the word before the cursor\n" +
  "\n" +
  "  Ctrl + l            Clear the screen\n" +
  "  Ctrl + g            Open default editor to compose a prompt\n" +
  "  Ctrl + c            Stop the model from responding\n" +
  "  Ctrl + d            Exit ollamats (/bye)\n" +
  "\n";

export const USAGE_SHOW =
  "Available Commands:\n" +
  "  /show info         Show details for this model\n" +
  "  /show license      Show model license\n" +
  "  /show modelfile    Show Modelfile for this model\n" +
  "  /show parameters   Show parameters for this model\n" +
  "  /show system       Show system message\n" +
  "  /show template     Show prompt template\n" +
  "\n";

export const USAGE_PARAMETERS =
  "Available Parameters:\n" +
  "  /set parameter seed <int>             Random number seed\n" +
  "  /set parameter num_predict <int>      Max number of tokens to predict\n" +
  "  /set parameter top_k <int>            Pick from top k num of tokens\n" +
  "  /set parameter top_p <float>          Pick token based on sum of probabilities\n" +
  "  /set parameter min_p <float>          Pick token based on top token probability * min_p\n" +
  "  /set parameter num_ctx <int>          Set the context size\n" +
  "  /set parameter temperature <float>    Set creativity level\n" +
  "  /set parameter repeat_penalty <float> How strongly to penalize repetitions\n" +
  "  /set parameter repeat_last_n <int>    Set how far back to look for repetitions\n" +
  "  /set parameter num_gpu <int>          The number of layers to send to the GPU\n" +
  "  /set parameter stop <string> <string> ...   Set the stop parameters\n" +
  "\n";

type Multiline = "none" | "prompt" | "system";

const fields = (s: string) => s.split(/\s+/).filter((f) => f !== "");

/** One interactive session's input state machine. */
export class ReplInput {
  private buffer = "";
  private multiline: Multiline = "none";

  constructor(
    readonly state: SessionState,
    private readonly parseParameter: ParameterParser,
  ) {}

  /** Inside a `"""` block (a message or /set system): only a closing `"""` ends it. */
  inBlock(): boolean {
    return this.multiline !== "none";
  }

  /** Ctrl+C at the prompt: drop what was being typed (Ollama's readline always reports an empty line). */
  interrupt(): LineResult {
    this.buffer = "";
    this.multiline = "none";
    return { stdout: "\nUse Ctrl + d or /bye to exit.\n", stderr: "", continuation: false };
  }

  /** Record the assistant's answer after a chat turn. */
  addAssistant(message: Message): void {
    this.state.messages.push(message);
  }

  /** Remove the last user message (its chat failed or was cancelled before any answer). */
  dropLastUser(): void {
    const last = this.state.messages[this.state.messages.length - 1];
    if (last?.role === "user") this.state.messages.pop();
  }

  /**
   * One line from the terminal. `pasting`: the line was part of a bracketed paste, so it is kept
   * for the message instead of being sent (the message goes when Enter is pressed after the paste).
   */
  handleLine(line: string, pasting = false): LineResult {
    const r: LineResult = { stdout: "", stderr: "", continuation: false };
    const s = this.state;

    if (this.multiline !== "none") {
      const closed = line.endsWith('"""');
      this.buffer += closed ? line.slice(0, -3) : line;
      if (!closed) {
        this.buffer += "\n";
        r.continuation = true;
        return r;
      }
      if (this.multiline === "system") {
        s.system = this.buffer;
        s.messages.push({ role: "system", content: s.system });
        r.stdout += "Set system message.\n";
        this.buffer = "";
      }
      this.multiline = "none";
    } else if (line.startsWith('"""')) {
      let rest = line.slice(3);
      const closed = rest.endsWith('"""');
      if (closed) rest = rest.slice(0, -3);
      this.buffer += rest;
      if (!closed) {
        this.buffer += "\n";
        this.multiline = "prompt";
        r.continuation = true;
      }
    } else if (pasting) {
      this.buffer += line + "\n";
      r.continuation = true;
      return r;
    } else if (line.startsWith("/list")) {
      r.effect = { type: "list", prefix: fields(line)[1] };
      return r;
    } else if (line.startsWith("/load")) {
      const args = fields(line);
      if (args.length !== 2) r.stdout += "Usage:\n  /load <modelname>\n";
      else r.effect = { type: "load", model: args[1]! };
      return r;
    } else if (line.startsWith("/save")) {
      const args = fields(line);
      if (args.length !== 2) r.stdout += "Usage:\n  /save <modelname>\n";
      else r.effect = { type: "save", name: args[1]! };
      return r;
    } else if (line.startsWith("/clear")) {
      s.messages = s.system !== "" ? [{ role: "system", content: s.system }] : [];
      r.stdout += "Cleared session context\n";
      return r;
    } else if (line.startsWith("/set")) {
      return this.set(line, r);
    } else if (line.startsWith("/show")) {
      const args = fields(line);
      if (args.length > 1) r.effect = { type: "show", what: args[1]! };
      else r.stderr += USAGE_SHOW;
      return r;
    } else if (line.startsWith("/help") || line.startsWith("/?")) {
      const args = fields(line);
      if (args.length > 1) {
        const topic = args[1];
        if (topic === "set" || topic === "/set") r.stderr += USAGE_SET;
        else if (topic === "show" || topic === "/show") r.stderr += USAGE_SHOW;
        else if (topic === "shortcut" || topic === "shortcuts") r.stderr += USAGE_SHORTCUTS;
      } else r.stderr += s.multiModal ? USAGE.replace('message.\n\n', `message.\n${USAGE_FILES}\n`) : USAGE;
      return r;
    } else if (line.startsWith("/exit") || line.startsWith("/bye")) {
      r.effect = { type: "exit" };
      return r;
    } else if (line.startsWith("/")) {
      const first = fields(line)[0] ?? line;
      const isFile = s.multiModal === true && extractFileNames(line).some((f) => f.startsWith(first));
      if (!isFile) {
        r.stdout += `Unknown command '${first}'. Type /? for help\n`;
        return r;
      }
      this.buffer += line;
    } else {
      this.buffer += line;
    }

    if (this.buffer.length > 0 && this.multiline === "none") {
      s.messages.push({ role: "user", content: this.buffer });
      this.buffer = "";
      r.effect = { type: "chat" };
    }
    return r;
  }

  private set(line: string, r: LineResult): LineResult {
    const s = this.state;
    const args = fields(line);
    if (args.length <= 1) {
      r.stderr += USAGE_SET;
      return r;
    }
    switch (args[1]) {
      case "history":
        r.effect = { type: "history", enabled: true };
        break;
      case "nohistory":
        r.effect = { type: "history", enabled: false };
        break;
      case "wordwrap":
        s.wordWrap = true;
        r.stdout += "Set 'wordwrap' mode.\n";
        break;
      case "nowordwrap":
        s.wordWrap = false;
        r.stdout += "Set 'nowordwrap' mode.\n";
        break;
      case "verbose":
        s.verbose = true;
        r.stdout += "Set 'verbose' mode.\n";
        break;
      case "quiet":
        s.verbose = false;
        r.stdout += "Set 'quiet' mode.\n";
        break;
      case "think": {
        const level = args[2];
        s.think = (level as ThinkValue | undefined) ?? true;
        s.thinkExplicit = true;
        r.effect = { type: "check-think" };
        r.stdout += level ? `Set 'think' mode to '${level}'.\n` : "Set 'think' mode.\n";
        break;
      }
      case "nothink":
        s.think = false;
        s.thinkExplicit = true;
        r.effect = { type: "check-think" };
        r.stdout += "Set 'nothink' mode.\n";
        break;
      case "format":
        if (args.length < 3 || args[2] !== "json") {
          r.stdout += "Invalid or missing format. For 'json' mode use '/set format json'\n";
        } else {
          s.format = "json";
          r.stdout += "Set format to 'json' mode.\n";
        }
        break;
      case "noformat":
        s.format = "";
        r.stdout += "Disabled format.\n";
        break;
      case "parameter": {
        if (args.length < 4) {
          r.stderr += USAGE_PARAMETERS;
          break;
        }
        const key = args[2]!;
        const values = args.slice(3);
        try {
          s.options[key] = this.parseParameter(key, values);
        } catch (err) {
          r.stdout += `Couldn't set parameter: ${JSON.stringify((err as Error).message)}\n`;
          break;
        }
        r.stdout += `Set parameter '${key}' to '${values.join(", ")}'\n`;
        break;
      }
      case "system": {
        if (args.length < 3) {
          r.stderr += USAGE_SET;
          break;
        }
        let text = args.slice(2).join(" ");
        let multi: Multiline = "none";
        if (text.startsWith('"""')) {
          text = text.slice(3);
          multi = "system";
          if (text.endsWith('"""')) {
            text = text.slice(0, -3);
            multi = "none";
          }
        }
        this.buffer += text;
        if (multi !== "none") {
          this.buffer += "\n";
          this.multiline = multi;
          r.continuation = true;
          break;
        }
        s.system = this.buffer;
        const message = { role: "system", content: this.buffer };
        const last = s.messages[s.messages.length - 1];
        if (last?.role === "system") s.messages[s.messages.length - 1] = message;
        else s.messages.push(message);
        r.stdout += "Set system message.\n";
        this.buffer = "";
        break;
      }
      default:
        r.stdout += `Unknown command '/set ${args[1]}'. Type /? for help\n`;
    }
    return r;
  }
}

/** /save's create request (interactive.go NewCreateRequest). */
export function saveRequest(state: SessionState, name: string, isValidName: (n: string) => boolean = () => true): CreateRequest {
  const parent = state.parentModel !== "" && isValidName(state.parentModel) ? state.parentModel : "";
  const req: CreateRequest = { model: name, from: parent || state.model };
  if (state.system !== "") req.system = state.system;
  if (Object.keys(state.options).length > 0) req.parameters = { ...state.options };
  const messages = [...state.loadedMessages, ...state.messages];
  if (messages.length > 0) req.messages = messages;
  return req;
}

/** %v of a typed option value. */
function optionValue(v: unknown): string {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : goFloatG(v);
  return goValue(v);
}

/** What `/show <what>` prints, given the model's /api/show answer. */
export function showCommandOutput(what: string, resp: ShowResponse, state: SessionState): { stdout: string; stderr: string } {
  switch (what) {
    case "info":
      return { stdout: "", stderr: formatShowInfo(resp, false) };
    case "license":
      return { stdout: resp.license ? `${resp.license}\n` : "No license was specified for this model.\n", stderr: "" };
    case "modelfile":
      return { stdout: `${resp.modelfile}\n`, stderr: "" };
    case "parameters": {
      let out = "Model defined parameters:\n";
      if (!resp.parameters) out += "  No additional parameters were specified for this model.\n";
      else for (const l of resp.parameters.split("\n")) out += `  ${l}\n`;
      out += "\n";
      const keys = Object.keys(state.options);
      if (keys.length > 0) {
        out += "User defined parameters:\n";
        for (const k of keys) out += `  ${k.padEnd(30)} ${optionValue(state.options[k])}\n`;
        out += "\n";
      }
      return { stdout: out, stderr: "" };
    }
    case "system":
      if (state.system !== "") return { stdout: `${state.system}\n\n`, stderr: "" };
      if (resp.system) return { stdout: `${resp.system}\n\n`, stderr: "" };
      return { stdout: "No system message was specified for this model.\n", stderr: "" };
    case "template":
      return { stdout: resp.template ? `${resp.template}\n` : "No prompt template was specified for this model.\n", stderr: "" };
    default:
      return { stdout: `Unknown command '/show ${what}'. Type /? for help\n`, stderr: "" };
  }
}
