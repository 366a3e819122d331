// Terminal input (raw mode) decoded into keys for the line editor. Pure: bytes in, keys out. A run
// of printable characters is one key, so pasted, fast-typed and IME text is inserted in one piece;
// an escape sequence split across reads is kept until the rest arrives.

export type KeyName =
  | "text"
  | "enter"
  | "tab"
  | "backspace"
  | "delete"
  | "left"
  | "right"
  | "up"
  | "down"
  | "home"
  | "end"
  | "word-left"
  | "word-right"
  | "delete-word-before"
  | "delete-word-after"
  | "kill-after"
  | "kill-before"
  | "interrupt"
  | "eof"
  | "clear-screen"
  | "editor"
  | "suspend"
  | "paste-start"
  | "paste-end"
  | "escape";

export interface Key {
  name: KeyName;
  /** The characters, for "text". */
  text?: string;
}

const CONTROL: Record<string, KeyName> = {
  "\x01": "home",
  "\x02": "left",
  "\x03": "interrupt",
  "\x04": "eof",
  "\x05": "end",
  "\x06": "right",
  "\x07": "editor",
  "\x08": "backspace",
  "\t": "tab",
  "\n": "enter",
  "\x0b": "kill-after",
  "\x0c": "clear-screen",
  "\r": "enter",
  "\x0e": "down",
  "\x10": "up",
  "\x15": "kill-before",
  "\x17": "delete-word-before",
  "\x1a": "suspend",
  "\x7f": "backspace",
};

const CSI_FINAL: Record<string, KeyName> = { A: "up", B: "down", C: "right", D: "left", H: "home", F: "end" };
const CSI_TILDE: Record<string, KeyName> = { "1": "home", "7": "home", "4": "end", "8": "end", "3": "delete", "200": "paste-start", "201": "paste-end" };
const ALT: Record<string, KeyName> = { b: "word-left", f: "word-right", d: "delete-word-after", "\x7f": "delete-word-before", "\x08": "delete-word-before" };

/** What one escape sequence at the start of `s` is: its length and key, or null if incomplete. */
function escapeSequence(s: string): { length: number; key: KeyName | undefined } | null {
  if (s.length < 2) return null;
  const second = s[1]!;
  if (second === "[") {
    const m = /^\x1b\[([0-9;:<=>?]*)([ -/]*)([@-~])/.exec(s);
    if (!m) return /^\x1b\[[0-9;:<=>?]*[ -/]*$/.test(s) ? null : { length: 2, key: undefined };
    const [all, params = "", , final = ""] = m;
    const parts = params.split(";");
    let key: KeyName | undefined = final === "~" ? CSI_TILDE[parts[0] ?? ""] : CSI_FINAL[final];
    // Ctrl or Alt with an arrow (`1;5D`, `1;3C`) moves by words
    const modifier = Number(parts[1] ?? "1");
    if (modifier > 1 && (key === "left" || key === "right")) key = key === "left" ? "word-left" : "word-right";
    return { length: all.length, key };
  }
  if (second === "O") {
    if (s.length < 3) return null;
    return { length: 3, key: CSI_FINAL[s[2]!] };
  }
  if (second === "\x1b") return { length: 1, key: "escape" };
  const cp = s.codePointAt(1) ?? 0;
  return { length: cp > 0xffff ? 3 : 2, key: ALT[second] };
}

export class KeyDecoder {
  private pending = "";
  /** The previous key was a CR: a following LF is the same line end (CRLF from a paste). */
  private afterCr = false;

  /** Decode what arrived; keys still incomplete stay for the next call. */
  push(chunk: string): Key[] {
    const s = this.pending + chunk;
    this.pending = "";
    const keys: Key[] = [];
    let i = 0;
    let text = "";
    const flushText = () => {
      if (text !== "") keys.push({ name: "text", text });
      text = "";
    };
    while (i < s.length) {
      const ch = s[i]!;
      if (ch === "\x1b") {
        const seq = escapeSequence(s.slice(i));
        if (seq === null) {
          this.pending = s.slice(i);
          break;
        }
        flushText();
        if (seq.key) keys.push({ name: seq.key });
        i += seq.length;
        this.afterCr = false;
        continue;
      }
      const control = CONTROL[ch];
      if (control !== undefined) {
        flushText();
        if (!(ch === "\n" && this.afterCr)) keys.push({ name: control });
        this.afterCr = ch === "\r";
        i++;
        continue;
      }
      this.afterCr = false;
      const cp = s.codePointAt(i) ?? 0;
      const width = cp > 0xffff ? 2 : 1;
      // other C0/C1 controls have no meaning here and are dropped
      if (cp >= 0x20 && !(cp >= 0x80 && cp < 0xa0)) text += s.slice(i, i + width);
      i += width;
    }
    flushText();
    return keys;
  }

  /** An escape sequence left incomplete for a while: a lone Esc key. */
  flush(): Key[] {
    if (this.pending === "") return [];
    const rest = this.pending.slice(1);
    this.pending = "";
    return [{ name: "escape" }, ...this.push(rest)];
  }

  get incomplete(): boolean {
    return this.pending !== "";
  }
}
