// The line being edited at the REPL prompt, and where it lands on the screen. Pure. The cursor is
// a string offset that always sits on a grapheme boundary, so text (typed, pasted or composed by an
// IME) is inserted exactly at the cursor, and moves and deletes take whole characters: a CJK
// character, an emoji, a letter with its combining accents.

import { charWidth } from "./table.js";

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** The string offsets where graphemes start, plus the end. */
function boundaries(text: string): number[] {
  const out: number[] = [];
  for (const s of segmenter.segment(text)) out.push(s.index);
  out.push(text.length);
  return out;
}

const TAB_WIDTH = 4;

/** Columns one grapheme takes: its first code point's width (a variation selector 16 makes an emoji wide). */
export function graphemeWidth(g: string): number {
  if (g === "\t") return TAB_WIDTH;
  const first = String.fromCodePoint(g.codePointAt(0) ?? 0);
  const w = charWidth(first);
  return g.includes("\ufe0f") && w === 1 ? 2 : w;
}

/** What the terminal shows for a grapheme. */
export function graphemeDisplay(g: string): string {
  return g === "\t" ? " ".repeat(TAB_WIDTH) : g;
}

const isSpace = (g: string | undefined) => g !== undefined && /^\s$/.test(g);

export class LineBuffer {
  text = "";
  cursor = 0;

  /** Graphemes and the index of the one the cursor is before. */
  private split(): { graphemes: string[]; at: number } {
    const b = boundaries(this.text);
    const graphemes: string[] = [];
    let at = 0;
    for (let i = 0; i < b.length - 1; i++) {
      if (b[i]! < this.cursor) at = i + 1;
      graphemes.push(this.text.slice(b[i], b[i + 1]));
    }
    return { graphemes, at };
  }

  private setFrom(graphemes: string[], at: number): void {
    this.text = graphemes.join("");
    this.cursor = graphemes.slice(0, at).join("").length;
  }

  get empty(): boolean {
    return this.text === "";
  }

  replace(text: string): void {
    this.text = text;
    this.cursor = text.length;
  }

  insert(s: string): void {
    const text = this.text.slice(0, this.cursor) + s + this.text.slice(this.cursor);
    const end = this.cursor + s.length;
    this.text = text;
    // a combining mark joins the character before it: the cursor goes after the whole grapheme
    this.cursor = boundaries(text).find((b) => b >= end) ?? text.length;
  }

  left(): void {
    const { graphemes, at } = this.split();
    this.setFrom(graphemes, Math.max(0, at - 1));
  }

  right(): void {
    const { graphemes, at } = this.split();
    this.setFrom(graphemes, Math.min(graphemes.length, at + 1));
  }

  home(): void {
    this.cursor = 0;
  }

  end(): void {
    this.cursor = this.text.length;
  }

  /** Back over spaces, then over the word (Alt+B). */
  wordLeft(): void {
    const { graphemes, at } = this.split();
    this.setFrom(graphemes, this.wordStart(graphemes, at));
  }

  /** Forward over spaces, then over the word (Alt+F). */
  wordRight(): void {
    const { graphemes, at } = this.split();
    this.setFrom(graphemes, this.wordEnd(graphemes, at));
  }

  backspace(): void {
    const { graphemes, at } = this.split();
    if (at === 0) return;
    graphemes.splice(at - 1, 1);
    this.setFrom(graphemes, at - 1);
  }

  /** Delete the character under the cursor. */
  delete(): void {
    const { graphemes, at } = this.split();
    graphemes.splice(at, 1);
    this.setFrom(graphemes, at);
  }

  /** Ctrl+W: the word before the cursor. */
  deleteWordBefore(): void {
    const { graphemes, at } = this.split();
    const start = this.wordStart(graphemes, at);
    graphemes.splice(start, at - start);
    this.setFrom(graphemes, start);
  }

  /** Alt+D: the word after the cursor. */
  deleteWordAfter(): void {
    const { graphemes, at } = this.split();
    graphemes.splice(at, this.wordEnd(graphemes, at) - at);
    this.setFrom(graphemes, at);
  }

  /** Ctrl+K */
  killAfter(): void {
    this.text = this.text.slice(0, this.cursor);
  }

  /** Ctrl+U */
  killBefore(): void {
    this.text = this.text.slice(this.cursor);
    this.cursor = 0;
  }

  private wordStart(graphemes: string[], at: number): number {
    let i = at;
    while (i > 0 && isSpace(graphemes[i - 1])) i--;
    while (i > 0 && !isSpace(graphemes[i - 1])) i--;
    return i;
  }

  private wordEnd(graphemes: string[], at: number): number {
    let i = at;
    while (i < graphemes.length && isSpace(graphemes[i])) i++;
    while (i < graphemes.length && !isSpace(graphemes[i])) i++;
    return i;
  }

  /** Where everything lands after a prompt `promptWidth` wide, in a terminal `cols` wide. */
  layout(promptWidth: number, cols: number): Layout {
    return layoutText(this.text, this.cursor, promptWidth, cols);
  }
}

export interface Layout {
  /** What to write after the prompt (tabs as spaces); every row it covers is written in full. */
  display: string;
  cursor: { row: number; col: number };
  /** Where the terminal's cursor is after writing everything (row counted from the prompt's). */
  end: { row: number; col: number };
  /** The text ends exactly at the right margin: the terminal holds its cursor there until the next character. */
  endsAtMargin: boolean;
}

/**
 * Place each grapheme as the terminal will: left to right, a character that does not fit in what
 * is left of a row goes to the next one (a wide character leaves the last column empty).
 */
export function layoutText(text: string, cursor: number, promptWidth: number, cols: number): Layout {
  const width = Math.max(1, cols);
  let row = Math.floor(promptWidth / width);
  let col = promptWidth % width;
  let display = "";
  let cursorPos = { row, col };
  const b = boundaries(text);
  let cursorSet = false;
  for (let i = 0; i < b.length - 1; i++) {
    const start = b[i]!;
    const g = text.slice(start, b[i + 1]);
    const w = graphemeWidth(g);
    if (col + w > width) {
      // spaces over what is left of the row, so a redraw leaves nothing old there
      display += " ".repeat(width - col);
      row++;
      col = 0;
    }
    if (!cursorSet && start >= cursor) {
      cursorPos = { row, col };
      cursorSet = true;
    }
    display += graphemeDisplay(g);
    col += w;
  }
  const endsAtMargin = col >= width && text !== "";
  if (col >= width) {
    row++;
    col = 0;
  }
  if (!cursorSet) cursorPos = { row, col };
  return { display, cursor: cursorPos, end: { row, col }, endsAtMargin };
}
