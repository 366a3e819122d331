// Progress rendering on stderr, after Ollama's progress package: a list of lines (spinners and
// bars) redrawn in place every 100 ms when stderr is a terminal. When it is not, nothing animates:
// each line is printed once, in its final form, when the next one starts or the progress stops.
//
// Every line is fitted to the terminal's width (less one column), so none wraps: a bar drops its
// ETA, then its rate, then the bar itself, then shortens its label. A redraw still counts the rows
// the previous lines take at the current width, so a terminal that reflowed them after a resize
// is redrawn in place too.

import { formatGoDuration } from "./duration.js";
import { goFixed, humanBytes } from "./format.js";
import { displayWidth } from "./table.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** The narrowest bar worth drawing, in cells. */
const MIN_BAR = 10;

/** `label` + `tail` in at most `width` columns: the label is shortened (with …) first. */
export function fitLine(label: string, tail: string, width: number): string {
  const room = width - displayWidth(tail);
  if (displayWidth(label) <= room) return label + tail;
  if (room <= 1) return [...(label + tail).trimStart()].slice(0, Math.max(0, width)).join("");
  let cut = "";
  for (const ch of label) {
    if (displayWidth(cut + ch) > room - 1) break;
    cut += ch;
  }
  return cut + "…" + tail;
}

export interface ProgressState {
  /** One line, at most `termWidth − 1` columns wide. */
  render(termWidth: number): string;
  /** The line printed once when output is not a terminal (default: render without a width limit). */
  plain?(): string;
  stop(): void;
}

export class Spinner implements ProgressState {
  private message: string;
  private readonly started = Date.now();
  private stopped = false;

  constructor(message: string) {
    this.message = message;
  }

  setMessage(message: string): void {
    this.message = message;
  }

  stop(): void {
    this.stopped = true;
  }

  render(termWidth = 80): string {
    const message = this.message.trim();
    const frame = this.stopped ? "" : FRAMES[Math.floor((Date.now() - this.started) / 100) % FRAMES.length] + " ";
    return fitLine(message, (message.length > 0 ? " " : "") + frame, termWidth - 1);
  }
}

/** ETA text limited to two units: "59m59s", "1h2m", "99h+". */
export function formatEta(seconds: number): string {
  if (seconds >= 100 * 3600) return "99h+";
  if (seconds >= 3600) return `${Math.floor(seconds / 3600)}h${Math.floor(seconds / 60) % 60}m`;
  return formatGoDuration(Math.round(seconds) * 1e9);
}

function lpad(s: string, width: number): string {
  return s.length < width ? " ".repeat(width - s.length) + s : s;
}

/** `<msg> NN% ▕████    ▏ 1.2 GB/4.7 GB  12 MB/s  4m51s` */
export class Bar implements ProgressState {
  private current: number;
  private readonly initial: number;
  private readonly started = Date.now();
  private stoppedAt = 0;
  private readonly buckets: { updated: number; value: number }[] = [];

  constructor(
    private readonly message: string,
    private readonly max: number,
    initial: number,
  ) {
    this.initial = initial;
    this.current = initial;
    if (initial >= max) this.stoppedAt = Date.now();
  }

  set(value: number): void {
    if (value >= this.max) value = this.max;
    this.current = value;
    if (this.current >= this.max && this.stoppedAt === 0) this.stoppedAt = Date.now();
    const last = this.buckets[this.buckets.length - 1];
    if (last === undefined || Date.now() - last.updated > 1000) {
      this.buckets.push({ updated: Date.now(), value });
      if (this.buckets.length > 10) this.buckets.shift();
    }
  }

  stop(): void {
    // a bar stops by reaching its total; stopping the progress just freezes it where it is
  }

  /** `pulling 0123456789ab: 100% 2.0 GB` (or `45% 0.9 GB/2.0 GB` if unfinished): no bar characters. */
  plain(): string {
    const message = this.message.trim();
    const pct = goFixed(this.percent(), 0) + "%";
    const done = this.stoppedAt !== 0;
    const size = done ? humanBytes(this.max) : `${humanBytes(this.current)}/${humanBytes(this.max)}`;
    return `${message ? message + " " : ""}${pct} ${size}`;
  }

  private percent(): number {
    return this.max > 0 ? (this.current / this.max) * 100 : 0;
  }

  private rate(): number {
    let num = 0;
    let den = 0;
    if (this.stoppedAt !== 0) {
      num = this.current - this.initial;
      den = Math.round((this.stoppedAt - this.started) / 1000);
    } else if (this.buckets.length === 1) {
      const b = this.buckets[0]!;
      num = b.value - this.initial;
      den = Math.round((b.updated - this.started) / 1000);
    } else if (this.buckets.length > 1) {
      const first = this.buckets[0]!;
      const last = this.buckets[this.buckets.length - 1]!;
      num = last.value - first.value;
      den = Math.round((last.updated - first.updated) / 1000);
    }
    return den !== 0 ? num / den : 0;
  }

  render(termWidth: number): string {
    const message = this.message.trim();
    const pct = lpad(goFixed(this.percent(), 0), 3) + "%";

    const running = this.stoppedAt === 0;
    const sizes = running ? lpad(humanBytes(this.current), 6) + "/" + lpad(humanBytes(this.max), 6) : lpad(humanBytes(this.max), 6) + " ".repeat(7);
    const rate = this.rate();
    const moving = running && rate > 0;
    const rateText = moving ? "  " + lpad(humanBytes(Math.trunc(rate)), 6) + "/s" : " ".repeat(10);
    const etaText = moving ? "  " + lpad(formatEta(Math.trunc((this.max - this.current) / rate)), 6) : " ".repeat(8);

    // Ollama's layout when it fits; narrower, the ETA goes, then the rate, then the bar itself
    const pre = (message.length > 0 ? message + " " : "") + pct;
    for (const suf of [sizes + rateText + etaText, sizes + rateText, sizes]) {
      const f = termWidth - displayWidth(pre) - displayWidth(suf) - 5;
      if (f < MIN_BAR) continue;
      const n = Math.trunc((f * this.percent()) / 100);
      return pre + " ▕" + "█".repeat(Math.max(n, 0)) + " ".repeat(Math.max(f - n, 0)) + "▏ " + suf;
    }
    return fitLine(message, `${message.length > 0 ? " " : ""}${pct} ${sizes.trim()}`, termWidth - 1);
  }
}

export interface ProgressOptions {
  /** Animate in place; defaults to whether the stream is a terminal. */
  tty?: boolean;
}

export class Progress {
  private readonly states: ProgressState[] = [];
  private readonly tty: boolean;
  private timer: NodeJS.Timeout | undefined;
  /** The lines drawn last, to count the rows they take now. */
  private drawn: string[] = [];
  private flushed = 0;
  private stopped = false;

  constructor(
    private readonly out: NodeJS.WritableStream & { columns?: number; rows?: number; isTTY?: boolean } = process.stderr,
    opts: ProgressOptions = {},
  ) {
    this.tty = opts.tty ?? out.isTTY === true;
    if (this.tty) {
      this.timer = setInterval(() => this.render(), 100);
      this.timer.unref();
    }
  }

  add(state: ProgressState): void {
    if (this.stopped) return;
    if (!this.tty) this.flushPlain(this.states.length);
    this.states.push(state);
  }

  /** Stop, leave the final lines on screen and end the line. Returns false if already stopped. */
  stop(): boolean {
    if (!this.finish()) return false;
    if (this.tty) {
      this.render();
      this.out.write("\n");
    } else {
      this.flushPlain(this.states.length);
    }
    return true;
  }

  /** Stop and erase every line this progress drew. Returns false if already stopped. */
  stopAndClear(): boolean {
    if (!this.finish()) return false;
    if (this.tty && this.drawn.length > 0) {
      const rows = this.rowsDrawn(this.width());
      let s = "\x1b[?25l";
      for (let i = 0; i < rows; i++) s += (i > 0 ? "\x1b[A" : "") + "\x1b[2K\x1b[1G";
      this.out.write(s + "\x1b[?25h");
      this.drawn = [];
    }
    return true;
  }

  private finish(): boolean {
    if (this.stopped) return false;
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const s of this.states) s.stop();
    return true;
  }

  private flushPlain(upTo: number): void {
    for (; this.flushed < upTo; this.flushed++) {
      const state = this.states[this.flushed];
      state?.stop(); // printed once, so in its final form (no spinner frame)
      // a file or a pipe has no width: nothing is shortened
      const line = (state?.plain ? state.plain() : (state?.render(Number.MAX_SAFE_INTEGER) ?? "")).trimEnd();
      if (line !== "") this.out.write(line + "\n");
    }
  }

  private width(): number {
    return this.out.columns || 80;
  }

  /** Rows the last drawing takes at `width` (a terminal may have reflowed it since). */
  private rowsDrawn(width: number): number {
    return this.drawn.reduce((rows, line) => rows + Math.max(1, Math.ceil(displayWidth(line) / width)), 0);
  }

  private render(): void {
    if (this.states.length === 0 && this.drawn.length === 0) return;
    const width = this.width();
    const height = this.out.rows || 24;
    let s = "\x1b[?2026h\x1b[?25l";
    const up = this.rowsDrawn(width) - 1;
    if (up > 0) s += `\x1b[${up}A`;
    s += "\x1b[1G";
    const first = Math.max(0, this.states.length - height);
    const lines = this.states.slice(first).map((st) => st.render(width));
    s += lines.map((l) => l + "\x1b[K").join("\n");
    s += "\x1b[?25h\x1b[?2026l";
    this.out.write(s);
    this.drawn = lines;
  }
}
