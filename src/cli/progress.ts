// Progress rendering on stderr, after Ollama's progress package: a list of lines (spinners and
// bars) redrawn in place every 100 ms when stderr is a terminal. When it is not, nothing animates:
// each line is printed once, in its final form, when the next one starts or the progress stops.

import { formatGoDuration } from "./duration.js";
import { goFixed, humanBytes } from "./format.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export interface ProgressState {
  render(termWidth: number): string;
  /** The line printed once when output is not a terminal (default: render at 80 columns). */
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

  render(): string {
    let out = "";
    const message = this.message.trim();
    if (message.length > 0) out += message + " ";
    if (!this.stopped) out += FRAMES[Math.floor((Date.now() - this.started) / 100) % FRAMES.length] + " ";
    return out;
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
    let pre = "";
    const message = this.message.trim();
    if (message.length > 0) pre += message + " ";
    pre += lpad(goFixed(this.percent(), 0), 3) + "%";

    const running = this.stoppedAt === 0;
    let suf = "";
    if (running) suf += lpad(humanBytes(this.current), 6) + "/" + lpad(humanBytes(this.max), 6);
    else suf += lpad(humanBytes(this.max), 6) + " ".repeat(7);
    const rate = this.rate();
    if (running && rate > 0) suf += "  " + lpad(humanBytes(Math.trunc(rate)), 6) + "/s";
    else suf += " ".repeat(10);
    if (running && rate > 0) suf += "  " + lpad(formatEta(Math.trunc((this.max - this.current) / rate)), 6);
    else suf += " ".repeat(8);

    const f = termWidth - pre.length - suf.length - 5;
    const n = Math.trunc((f * this.percent()) / 100);
    const mid = " ▕" + "█".repeat(Math.max(n, 0)) + " ".repeat(Math.max(f - n, 0)) + "▏ ";
    return pre + mid + suf;
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
  private pos = 0;
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
    if (this.tty && this.pos > 0) {
      let s = "\x1b[?25l";
      for (let i = 0; i < this.pos; i++) s += (i > 0 ? "\x1b[A" : "") + "\x1b[2K\x1b[1G";
      this.out.write(s + "\x1b[?25h");
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
    const width = this.out.columns || 80;
    for (; this.flushed < upTo; this.flushed++) {
      const state = this.states[this.flushed];
      state?.stop(); // printed once, so in its final form (no spinner frame)
      const line = (state?.plain ? state.plain() : (state?.render(width) ?? "")).trimEnd();
      if (line !== "") this.out.write(line + "\n");
    }
  }

  private render(): void {
    if (this.states.length === 0 && this.pos === 0) return;
    const width = this.out.columns || 80;
    const height = this.out.rows || 24;
    let s = "\x1b[?2026h\x1b[?25l";
    for (let i = 0; i < this.pos - 1; i++) s += "\x1b[A";
    s += "\x1b[1G";
    const first = Math.max(0, this.states.length - height);
    for (let i = first; i < this.states.length; i++) {
      s += this.states[i]!.render(width) + "\x1b[K";
      if (i < this.states.length - 1) s += "\n";
    }
    s += "\x1b[?25h\x1b[?2026l";
    this.out.write(s);
    this.pos = this.states.length;
  }
}
