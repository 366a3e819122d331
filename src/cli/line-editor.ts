// The REPL's line editor (Ollama's readline package, in TypeScript): raw-mode input decoded by
// KeyDecoder, the line kept by LineBuffer and redrawn in full on every change, over as many rows
// as it wraps to. Node's own readline is not used: on Node 20 it inserts pasted and fast-typed
// text in the wrong place when the cursor is not at the end of the line.
//
// While the model answers (whileAnswering) the terminal stays raw: Ctrl+C is a key, and the REPL
// marks the stop itself after the last text it wrote. In cooked mode the tty would echo "^C" at
// whatever column the cursor had, and the word wrap, moving back over a partial word, could erase
// it. Other keys typed meanwhile wait for the next read, unechoed, as do keys that arrived with a
// line (the rest of a paste). Between a read and an answer the terminal is cooked and stdin
// paused. A bracketed paste marks its lines as pasted; Enter inside it ends a line, as in Ollama.

import { KeyDecoder, type Key } from "./key-decoder.js";
import { LineBuffer } from "./line-buffer.js";
import { COLOR_DEFAULT, COLOR_GREY } from "./response-writer.js";
import { displayWidth } from "./table.js";

export type ReadResult =
  | { kind: "line"; line: string; pasting: boolean }
  | { kind: "interrupt"; line: string }
  | { kind: "edit"; line: string }
  | { kind: "eof" };

export interface ReadOptions {
  prompt: string;
  /** Grey hint on an empty line. */
  placeholder: string;
  /** Show the hint during a paste too (inside a `"""` block). */
  placeholderWhilePasting?: boolean;
}

export interface Terminal {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

const ESCAPE_WAIT_MS = 50;
export const BRACKETED_PASTE_ON = "\x1b[?2004h";
export const BRACKETED_PASTE_OFF = "\x1b[?2004l";

const up = (n: number) => (n > 0 ? `\x1b[${n}A` : "");
const right = (n: number) => (n > 0 ? `\x1b[${n}C` : "");

export class LineEditor {
  private readonly decoder = new KeyDecoder();
  private readonly queued: Key[] = [];
  private buffer = new LineBuffer();
  private opts: ReadOptions = { prompt: "", placeholder: "" };
  /** Row of the terminal cursor, counted from the prompt's row. */
  private cursorRow = 0;
  /** Rows the last drawing covered. */
  private rows = 1;
  private pasting = false;
  private prefill = "";
  private historyPos = 0;
  private savedLine = "";
  private finish: ((r: ReadResult) => void) | undefined;
  private escapeTimer: NodeJS.Timeout | undefined;
  /** Set while the model answers: what Ctrl+C does then. */
  private onAnswerInterrupt: (() => void) | undefined;
  private readonly onData = (chunk: string | Buffer) => {
    if (this.escapeTimer) clearTimeout(this.escapeTimer);
    this.queued.push(...this.decoder.push(chunk.toString()));
    this.drain();
    if (!this.finish && this.onAnswerInterrupt) this.drainWhileAnswering();
    if (this.finish && this.decoder.incomplete) {
      this.escapeTimer = setTimeout(() => {
        this.queued.push(...this.decoder.flush());
        this.drain();
      }, ESCAPE_WAIT_MS);
    }
  };
  private readonly onResize = () => {
    if (this.finish) this.render();
  };

  /** `history` is read, not copied: lines the caller adds are offered by Up. */
  constructor(
    private readonly term: Terminal,
    private readonly history: string[],
  ) {
    term.output.write(BRACKETED_PASTE_ON);
  }

  /** Text to put on the next prompt line, as if typed. */
  setPrefill(text: string): void {
    this.prefill = text;
  }

  read(opts: ReadOptions): Promise<ReadResult> {
    this.opts = opts;
    this.buffer = new LineBuffer();
    if (this.prefill !== "") this.buffer.replace(this.prefill);
    this.prefill = "";
    this.historyPos = this.history.length;
    this.savedLine = "";
    this.cursorRow = 0;
    this.rows = 1;
    return new Promise((resolve) => {
      this.finish = resolve;
      const { input, output } = this.term;
      if (input.isTTY) input.setRawMode(true);
      input.setEncoding("utf8");
      input.on("data", this.onData);
      output.on("resize", this.onResize);
      input.resume();
      this.render();
      this.drain();
    });
  }

  /**
   * Keys while the model answers, until the returned function is called: Ctrl+C calls
   * `onInterrupt` and drops what was typed before it (as the tty's SIGINT flushes its input),
   * Ctrl+Z suspends, anything else waits for the next read. Nothing is echoed.
   */
  whileAnswering(onInterrupt: () => void): () => void {
    const { input } = this.term;
    if (!input.isTTY || this.finish) return () => {};
    this.onAnswerInterrupt = onInterrupt;
    input.setRawMode(true);
    input.setEncoding("utf8");
    input.on("data", this.onData);
    input.resume();
    return () => {
      if (this.onAnswerInterrupt !== onInterrupt) return;
      this.onAnswerInterrupt = undefined;
      if (this.finish) return;
      this.stopReading();
      // a lone Esc typed meanwhile must not become Alt+ with the next read's first key
      this.queued.push(...this.decoder.flush());
    };
  }

  private drainWhileAnswering(): void {
    let kept: Key[] = [];
    for (const key of this.queued.splice(0)) {
      if (key.name === "interrupt") {
        kept = [];
        this.onAnswerInterrupt?.();
      } else if (key.name === "suspend") this.suspend();
      else kept.push(key);
    }
    this.queued.push(...kept);
  }

  close(): void {
    this.stopReading();
    this.term.output.write(BRACKETED_PASTE_OFF);
  }

  private stopReading(): void {
    const { input, output } = this.term;
    if (this.escapeTimer) clearTimeout(this.escapeTimer);
    input.off("data", this.onData);
    output.off("resize", this.onResize);
    input.pause();
    if (input.isTTY) input.setRawMode(false);
  }

  private done(r: ReadResult): void {
    const finish = this.finish;
    if (!finish) return;
    this.finish = undefined;
    this.stopReading();
    finish(r);
  }

  /** Handle queued keys until a read completes. */
  private drain(): void {
    while (this.finish && this.queued.length > 0) this.handle(this.queued.shift()!);
  }

  private handle(key: Key): void {
    const b = this.buffer;
    switch (key.name) {
      case "text":
        b.insert(key.text ?? "");
        break;
      case "tab":
        b.insert("\t");
        break;
      case "enter": {
        this.moveToEnd();
        this.term.output.write("\r\n");
        this.done({ kind: "line", line: b.text, pasting: this.pasting });
        return;
      }
      case "interrupt":
        this.moveToEnd();
        this.done({ kind: "interrupt", line: b.text });
        return;
      case "eof":
        if (b.empty) {
          this.moveToEnd();
          this.done({ kind: "eof" });
          return;
        }
        b.delete();
        break;
      case "editor":
        this.erase();
        this.done({ kind: "edit", line: b.text });
        return;
      case "clear-screen":
        this.term.output.write("\x1b[H\x1b[2J");
        this.cursorRow = 0;
        this.rows = 1;
        break;
      case "suspend":
        this.suspend();
        return;
      case "paste-start":
        this.pasting = true;
        break;
      case "paste-end":
        this.pasting = false;
        break;
      case "up":
        this.historyMove(-1);
        break;
      case "down":
        this.historyMove(1);
        break;
      case "left":
        b.left();
        break;
      case "right":
        b.right();
        break;
      case "home":
        b.home();
        break;
      case "end":
        b.end();
        break;
      case "word-left":
        b.wordLeft();
        break;
      case "word-right":
        b.wordRight();
        break;
      case "backspace":
        b.backspace();
        break;
      case "delete":
        b.delete();
        break;
      case "delete-word-before":
        b.deleteWordBefore();
        break;
      case "delete-word-after":
        b.deleteWordAfter();
        break;
      case "kill-after":
        b.killAfter();
        break;
      case "kill-before":
        b.killBefore();
        break;
      case "escape":
        return;
    }
    this.render();
  }

  /** Up (-1) and Down (+1) through the history; below the newest entry is what was being typed. */
  private historyMove(step: number): void {
    const next = this.historyPos + step;
    if (next < 0 || next > this.history.length) return;
    if (this.historyPos === this.history.length) this.savedLine = this.buffer.text;
    this.historyPos = next;
    this.buffer.replace(next === this.history.length ? this.savedLine : (this.history[next] ?? ""));
  }

  /** Ctrl+Z: give the terminal back, stop, and redraw when continued. */
  private suspend(): void {
    const { input } = this.term;
    if (input.isTTY) input.setRawMode(false);
    process.once("SIGCONT", () => {
      if (!this.finish && !this.onAnswerInterrupt) return;
      if (input.isTTY) input.setRawMode(true);
      if (!this.finish) return;
      this.cursorRow = 0;
      this.render();
    });
    process.kill(process.pid, "SIGTSTP");
  }

  private cols(): number {
    return this.term.output.columns || 80;
  }

  /**
   * Redraw the prompt and the line over what was drawn before, then place the cursor. Rows are
   * overwritten and their ends cleared one by one: clearing "to the end of the screen" from the top
   * left corner makes some terminals (tmux's scroll-on-clear) push the screen into the scrollback.
   */
  private render(hintAllowed = true): void {
    const cols = this.cols();
    const { prompt, placeholder, placeholderWhilePasting } = this.opts;
    const promptWidth = displayWidth(prompt);
    let s = up(this.cursorRow) + "\r" + prompt;
    let end = 0;
    const showHint = hintAllowed && this.buffer.empty && placeholder !== "" && (!this.pasting || placeholderWhilePasting === true);
    if (showHint) {
      // the hint never wraps: it is cut to what is left of the prompt's row
      const room = Math.max(0, cols - promptWidth - 1);
      s += `${COLOR_GREY}${[...placeholder].slice(0, room).join("")}${COLOR_DEFAULT}\x1b[K${this.clearBelow(0)}\r${right(promptWidth)}`;
      this.cursorRow = 0;
    } else {
      const l = this.buffer.layout(promptWidth, cols);
      s += l.display;
      // a line that ends at the margin leaves the terminal's cursor there: step onto the next row
      if (l.endsAtMargin) s += " \r";
      end = l.end.row;
      s += "\x1b[K" + this.clearBelow(end) + up(end - l.cursor.row) + "\r" + right(l.cursor.col);
      this.cursorRow = l.cursor.row;
    }
    this.rows = Math.max(end + 1, 1);
    this.term.output.write(s);
  }

  /** Clear the rows below `row` that the previous drawing covered, and come back to `row`. */
  private clearBelow(row: number): string {
    const extra = this.rows - (row + 1);
    return extra > 0 ? "\x1b[B\x1b[2K".repeat(extra) + up(extra) : "";
  }

  /** Put the terminal's cursor after the line's last character (the hint goes: the line is done). */
  private moveToEnd(): void {
    this.buffer.end();
    this.render(false);
  }

  /** Remove the prompt and the line from the screen. */
  private erase(): void {
    this.term.output.write(up(this.cursorRow) + "\r\x1b[2K" + this.clearBelow(0));
    this.cursorRow = 0;
    this.rows = 1;
  }
}
