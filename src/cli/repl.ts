// The interactive `run` session on a terminal: reads lines with the line editor (history in
// ~/.ollama/history, 100 entries, unless OLLAMA_NOHISTORY), hands them to ReplInput, and runs the
// effects it asks for. Ctrl+C while the model answers cancels that answer; at the prompt it clears
// the line; Ctrl+D on an empty line or /bye exits.

import { makeDirsSync } from "../fs/make-dirs.js";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Client } from "../api/client.js";
import type { KeepAlive, ShowResponse, ThinkValue } from "../api/types.js";
import { parseModelName } from "../registry/name.js";
import { errorMessage } from "./connect.js";
import type { ParameterParser } from "./modelfile-request.js";
import { loadOrUnload } from "./model-load.js";
import { formatListTable } from "./model-tables.js";
import { extractFileData, isMultiModal } from "./images.js";
import { ReplInput, saveRequest, showCommandOutput, type SessionState } from "./repl-input.js";
import { LineEditor } from "./line-editor.js";
import { chatAnswer } from "./stream-answer.js";

const HISTORY_LIMIT = 100;

/** Ollama's hints on an empty line: at the prompt, inside a `"""` block, after a paste. */
export const PLACEHOLDER = "Send a message (/? for help)";
export const MULTILINE_PLACEHOLDER = 'Use """ to end multi-line input';
export const PASTE_PLACEHOLDER = "Press Enter to send";

class History {
  entries: string[] = [];
  enabled: boolean;
  private readonly file = path.join(os.homedir(), ".ollama", "history");

  constructor(enabled: boolean) {
    this.enabled = enabled;
    try {
      this.entries = readFileSync(this.file, "utf8")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l !== "")
        .slice(-HISTORY_LIMIT);
    } catch {
      // no history yet
    }
  }

  add(line: string): void {
    if (line.trim() === "") return;
    this.entries.push(line);
    if (this.entries.length > HISTORY_LIMIT) this.entries.splice(0, this.entries.length - HISTORY_LIMIT);
    if (!this.enabled) return;
    try {
      makeDirsSync(path.dirname(this.file));
      writeFileSync(this.file + ".tmp", this.entries.map((e) => e + "\n").join(""), { mode: 0o600 });
      renameSync(this.file + ".tmp", this.file);
    } catch {
      // history is best effort
    }
  }
}

/** Ctrl+G: edit `initial` in $OLLAMA_EDITOR / $VISUAL / $EDITOR / vi; the text, trailing newlines removed. */
function editInExternalEditor(initial: string, configured: string): string {
  const editor = configured || process.env.VISUAL || process.env.EDITOR || "vi";
  const [cmd, ...args] = editor.split(/\s+/).filter((w) => w !== "");
  if (!cmd || spawnSync("sh", ["-c", 'command -v "$1"', "sh", cmd], { stdio: "ignore" }).status !== 0) {
    throw new Error(`editor ${JSON.stringify(cmd ?? editor)} not found, set OLLAMA_EDITOR to the path of your preferred editor`);
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "ollamats-prompt-"));
  const file = path.join(dir, "prompt.txt");
  try {
    writeFileSync(file, initial, { mode: 0o600 });
    const r = spawnSync(cmd, [...args, file], { stdio: "inherit" });
    if (r.error) throw new Error(`editor exited with error: ${r.error.message}`);
    if (r.status !== 0) throw new Error(`editor exited with error: exit status ${r.status ?? r.signal}`);
    return readFileSync(file, "utf8").replace(/\n+$/, "");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ReplOptions {
  hideThinking: boolean;
  /** OLLAMA_EDITOR (Ctrl+G). */
  editor?: string;
  keepAlive?: KeepAlive;
  noHistory: boolean;
  parseParameter: ParameterParser;
  /** Recomputes the think value after /load (capability-based unless set explicitly). */
  inferThink: (capabilities: string[], state: SessionState) => ThinkValue | undefined;
}

export async function runRepl(client: Client, state: SessionState, opts: ReplOptions): Promise<void> {
  const input = new ReplInput(state, opts.parseParameter);
  const history = new History(!opts.noHistory);
  let current: AbortController | undefined;
  const onSigint = () => current?.abort();
  process.on("SIGINT", onSigint);
  const reader = new LineEditor({ input: process.stdin, output: process.stdout }, history.entries);
  let continuation = false;
  try {
    for (;;) {
      const read = await reader.read({
        prompt: continuation ? "... " : ">>> ",
        placeholder: input.inBlock() ? MULTILINE_PLACEHOLDER : continuation ? PASTE_PLACEHOLDER : PLACEHOLDER,
        placeholderWhilePasting: input.inBlock(),
      });
      if (read.kind === "eof") {
        process.stdout.write("\n");
        return;
      }
      if (read.kind === "interrupt") {
        const r = input.interrupt();
        process.stdout.write(r.stdout);
        continuation = false;
        continue;
      }
      if (read.kind === "edit") {
        input.interrupt(); // the editor gets what was typed; a half-typed block is dropped, as in Ollama
        continuation = false;
        let text: string;
        try {
          text = editInExternalEditor(read.line, opts.editor ?? "");
        } catch (err) {
          process.stderr.write(`error: ${errorMessage(err)}\n`);
          continue;
        }
        if (text.trim() === "") continue;
        // all lines but the last become pasted lines; the last waits on the prompt for Enter
        const lines = text.split("\n");
        const last = lines.pop() ?? "";
        lines.forEach((l, i) => {
          process.stdout.write(`${i === 0 ? ">>> " : "... "}${l}\n`);
          input.handleLine(l, true);
        });
        continuation = lines.length > 0;
        reader.setPrefill(last);
        continue;
      }
      history.add(read.line);
      const r = input.handleLine(read.line, read.pasting);
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      continuation = r.continuation;
      const effect = r.effect;
      if (!effect) continue;
      switch (effect.type) {
        case "exit":
          return;
        case "history":
          history.enabled = effect.enabled;
          break;
        case "list":
          process.stdout.write(formatListTable((await client.list()).models, effect.prefix));
          break;
        case "check-think":
          await checkThinking(client, state.model);
          break;
        case "show": {
          let resp: ShowResponse;
          try {
            resp = await client.show({ model: state.model, ...(state.system ? { system: state.system } : {}), options: state.options });
          } catch (err) {
            process.stdout.write("error: couldn't get model\n");
            throw err;
          }
          const out = showCommandOutput(effect.what, resp, state);
          process.stdout.write(out.stdout);
          process.stderr.write(out.stderr);
          break;
        }
        case "save":
          try {
            await client.create(saveRequest(state, effect.name, (n) => parseModelName(n) !== null), () => {});
          } catch (err) {
            if (errorMessage(err).includes("invalid model name")) {
              process.stdout.write(`error: The model name '${effect.name}' is invalid\n`);
              break;
            }
            throw err;
          }
          process.stdout.write(`Created new model '${effect.name}'\n`);
          break;
        case "load":
          await load(client, state, effect.model, opts);
          break;
        case "chat": {
          const last = state.messages[state.messages.length - 1];
          if (state.multiModal && last?.role === "user") {
            const { text, images } = await extractFileData(last.content);
            last.content = text;
            if (images.length > 0) last.images = images;
          }
          current = new AbortController();
          const stopKeys = reader.whileAnswering(onSigint);
          try {
            const answer = await chatAnswer(
              client,
              {
                model: state.model,
                messages: state.messages,
                ...(state.format !== "" ? { format: state.format } : {}),
                options: state.options,
                ...(opts.keepAlive !== undefined ? { keepAlive: opts.keepAlive } : {}),
                ...(state.think !== undefined ? { think: state.think } : {}),
                wordWrap: state.wordWrap,
                hideThinking: opts.hideThinking,
                verbose: state.verbose,
              },
              current.signal,
            );
            // cancelled: the stop is marked after the last text written (no tty echo in raw mode)
            if (answer) input.addAssistant(answer);
            else process.stdout.write("^C\n");
          } catch (err) {
            const msg = errorMessage(err);
            if (msg.includes("does not support thinking") || msg.includes("invalid think value")) {
              process.stdout.write(`error: ${msg}\n`);
            } else throw err;
          } finally {
            stopKeys();
            current = undefined;
          }
          break;
        }
      }
    }
  } finally {
    reader.close();
    process.off("SIGINT", onSigint);
  }
}

async function checkThinking(client: Client, model: string): Promise<void> {
  try {
    const resp = await client.show({ model });
    if (!resp.capabilities?.includes("thinking")) {
      process.stderr.write(`warning: model ${JSON.stringify(model)} does not support thinking output\n`);
    }
  } catch {
    // only a hint
  }
}

/** /load <model>: switch model, clear the conversation, preload. Restores the session on "not found". */
async function load(client: Client, state: SessionState, model: string, opts: ReplOptions): Promise<void> {
  const saved = { ...state, messages: [...state.messages], loadedMessages: [...state.loadedMessages] };
  const restore = () => Object.assign(state, saved);
  state.model = model;
  state.messages = [];
  state.loadedMessages = [];
  process.stdout.write(`Loading model '${model}'\n`);
  let info: ShowResponse;
  try {
    info = await client.show({ model });
  } catch (err) {
    if (errorMessage(err).includes("not found")) {
      process.stdout.write(`Couldn't find model '${model}'\n`);
      restore();
      return;
    }
    throw err;
  }
  state.parentModel = info.details?.parent_model ?? "";
  state.multiModal = isMultiModal(info);
  state.loadedMessages = [...(info.messages ?? [])];
  state.think = opts.inferThink(info.capabilities ?? [], state);
  try {
    await loadOrUnload(client, { model, ...(opts.keepAlive !== undefined ? { keepAlive: opts.keepAlive } : {}), ...(state.think !== undefined ? { think: state.think } : {}) });
  } catch (err) {
    const msg = errorMessage(err);
    if (msg.includes("not found")) {
      process.stdout.write(`Couldn't find model '${model}'\n`);
      restore();
      return;
    }
    if (msg.includes("does not support thinking")) {
      process.stdout.write(`error: ${msg}\n`);
      return;
    }
    throw err;
  }
}
