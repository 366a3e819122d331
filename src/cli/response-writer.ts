// Streams a model's answer to the terminal as `ollama run` does (cmd.go displayResponse and the
// generate/chat callbacks): optional word wrap at terminal width − 5 that moves a partial word to
// the next line, a grey "Thinking..." block for thinking text, and a note for tool calls.

import type { ToolCall } from "../api/types.js";
import { charWidth, displayWidth } from "./table.js";
import { terminalSafe } from "./terminal-text.js";

export const COLOR_GREY = "\x1b[38;5;245m";
export const COLOR_DEFAULT = "\x1b[0m";
export const COLOR_BOLD = "\x1b[1m";

export function thinkingOpeningText(plain: boolean): string {
  const text = "Thinking...\n";
  return plain ? text : COLOR_GREY + COLOR_BOLD + text + COLOR_DEFAULT + COLOR_GREY;
}

export function thinkingClosingText(plain: boolean): string {
  const text = "...done thinking.\n\n";
  return plain ? text : COLOR_GREY + COLOR_BOLD + text + COLOR_DEFAULT;
}

export function renderToolCalls(calls: ToolCall[], plain: boolean): string {
  const explain = plain ? "" : COLOR_GREY + COLOR_BOLD;
  const values = plain ? "" : COLOR_DEFAULT;
  let out = explain;
  calls.forEach((call, i) => {
    if (i > 0) out += "\n";
    out +=
      `  Model called a non-existent function '${values}${call.function.name}${explain}()' ` +
      `with arguments: ${values}${JSON.stringify(call.function.arguments ?? {})}${explain}`;
  });
  if (!plain) out += COLOR_DEFAULT;
  return out;
}

/** Word-wrapping writer state (displayResponseState). */
export class WrapWriter {
  private lineLength = 0;
  private wordBuffer = "";

  constructor(
    private readonly write: (s: string) => void,
    private readonly width: () => number,
  ) {}

  reset(): void {
    this.lineLength = 0;
    this.wordBuffer = "";
  }

  display(content: string, wordWrap: boolean): void {
    let termWidth = this.width();
    if (!termWidth) termWidth = 80;
    if (!(wordWrap && termWidth >= 10)) {
      this.write(this.wordBuffer + content);
      this.wordBuffer = "";
      return;
    }
    let out = "";
    for (const ch of content) {
      const w = charWidth(ch);
      if (this.lineLength + 1 > termWidth - 5) {
        if (displayWidth(this.wordBuffer) > termWidth - 10) {
          out += this.wordBuffer + ch;
          this.wordBuffer = "";
          this.lineLength = 0;
          continue;
        }
        // move the partial word to the next line
        const a = displayWidth(this.wordBuffer);
        if (a > 0) out += `\x1b[${a}D`;
        out += "\x1b[K\n" + this.wordBuffer + ch;
        this.lineLength = a + w;
      } else {
        out += ch;
        this.lineLength += w;
        if (w >= 2) {
          this.wordBuffer = "";
          continue;
        }
        if (ch === " " || ch === "\t") this.wordBuffer = "";
        else if (ch === "\n" || ch === "\r") {
          this.lineLength = 0;
          this.wordBuffer = "";
        } else this.wordBuffer += ch;
      }
    }
    this.write(out);
  }
}

export interface ResponseWriterOptions {
  wordWrap: boolean;
  hideThinking: boolean;
  /** No colours (stdout is not a terminal). */
  plain: boolean;
  /** Chat prints tool calls before the content of a chunk, generate after it. */
  toolCallsFirst: boolean;
}

export interface ResponsePart {
  content: string;
  thinking?: string;
  toolCalls?: ToolCall[];
}

/** Feeds streamed chunks to the terminal; collects the thinking and content it saw. */
export class ResponseWriter {
  private readonly wrap: WrapWriter;
  private thinkingOpen = false;
  private thinkingClosed = false;
  thinking = "";
  content = "";

  constructor(
    private readonly write: (s: string) => void,
    width: () => number,
    private readonly opts: ResponseWriterOptions,
  ) {
    this.wrap = new WrapWriter(write, width);
  }

  /** True if the chunk makes visible output (callers stop their spinner first). */
  visible(part: ResponsePart): boolean {
    return part.content !== "" || !this.opts.hideThinking;
  }

  push(part: ResponsePart): void {
    // What is kept (the conversation's history) is what the model said; what is shown is safe.
    const shown = (text: string) => (this.opts.plain ? text : terminalSafe(text));
    if (part.thinking && !this.opts.hideThinking) {
      if (!this.thinkingOpen) {
        this.write(thinkingOpeningText(this.opts.plain));
        this.thinkingOpen = true;
        this.thinkingClosed = false;
      }
      this.thinking += part.thinking;
      this.wrap.display(shown(part.thinking), this.opts.wordWrap);
    }
    const calls = part.toolCalls ?? [];
    if (this.thinkingOpen && !this.thinkingClosed && (part.content !== "" || calls.length > 0)) {
      if (!this.thinking.endsWith("\n")) this.write("\n");
      this.write(thinkingClosingText(this.opts.plain));
      this.thinkingOpen = false;
      this.thinkingClosed = true;
      this.wrap.reset();
    }
    this.content += part.content;
    if (this.opts.toolCallsFirst && calls.length > 0) this.write(renderToolCalls(calls, this.opts.plain));
    this.wrap.display(shown(part.content), this.opts.wordWrap);
    if (!this.opts.toolCallsFirst && calls.length > 0) this.write(renderToolCalls(calls, this.opts.plain));
  }
}
