// Model output shown on a terminal is text, not terminal commands. A model can emit any byte (its
// vocabulary has byte tokens <0x00>..<0xFF>), and an escape sequence in an answer would move the
// cursor, clear the screen or retitle the window; a bare carriage return would overwrite the line.
// On a terminal, control characters are shown in caret notation (ESC as ^[, as `cat -v` does),
// C1 controls as U+FFFD, and carriage returns are dropped (CR LF, perhaps split across two tokens,
// is a line break). Piped output stays byte for byte what the model said.

const CONTROL = /[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]/g;

export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    if (code === 0x0d) return "";
    if (code === 0x7f) return "^?";
    if (code < 0x20) return `^${String.fromCharCode(code + 0x40)}`;
    return "\ufffd";
  });
}
