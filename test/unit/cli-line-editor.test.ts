// The REPL's line editor, its pure parts: keys decoded from raw terminal input (sequences split
// across reads, pastes, CRLF), the edited line (insertion at the cursor, whole graphemes), and the
// layout of a line that wraps.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { KeyDecoder } from "../../src/cli/key-decoder.js";
import { LineBuffer, layoutText } from "../../src/cli/line-buffer.js";
import { LineEditor, type Terminal } from "../../src/cli/line-editor.js";

describe("KeyDecoder", () => {
  it("keeps a run of text as one key and decodes controls and sequences", () => {
    const d = new KeyDecoder();
    expect(d.push("abc\x1b[D\x1b[Dxy\r")).toEqual([
      { name: "text", text: "abc" },
      { name: "left" },
      { name: "left" },
      { name: "text", text: "xy" },
      { name: "enter" },
    ]);
    expect(d.push("\x01\x05\x0b\x15\x17\x03\x04\x07\x7f\x1b[3~\x1bOH\x1b[F\x1b[1;5C\x1bb\x1b\x7f")).toEqual(
      ["home", "end", "kill-after", "kill-before", "delete-word-before", "interrupt", "eof", "editor", "backspace", "delete", "home", "end", "word-right", "word-left", "delete-word-before"].map((name) => ({ name })),
    );
  });

  it("waits for the rest of a sequence split across reads; a lone Esc is flushed", () => {
    const d = new KeyDecoder();
    expect(d.push("ab\x1b[")).toEqual([{ name: "text", text: "ab" }]);
    expect(d.incomplete).toBe(true);
    expect(d.push("20")).toEqual([]);
    expect(d.push("0~pasted\x1b[201~")).toEqual([{ name: "paste-start" }, { name: "text", text: "pasted" }, { name: "paste-end" }]);
    expect(d.push("\x1b")).toEqual([]);
    expect(d.flush()).toEqual([{ name: "escape" }]);
  });

  it("reads CRLF as one line end, drops other control characters, keeps wide and astral characters", () => {
    const d = new KeyDecoder();
    expect(d.push("a\r\nb\n\x00日本🙂\x1f")).toEqual([
      { name: "text", text: "a" },
      { name: "enter" },
      { name: "text", text: "b" },
      { name: "enter" },
      { name: "text", text: "日本🙂" },
    ]);
  });
});

describe("LineBuffer", () => {
  it("inserts at the cursor however much text arrives at once", () => {
    const b = new LineBuffer();
    b.insert("short line here");
    for (let i = 0; i < 4; i++) b.left();
    b.insert("xyz");
    expect(b.text).toBe("short line xyzhere");
    b.insert("日本");
    b.left();
    b.insert("中");
    expect(b.text).toBe("short line xyz日中本here");
  });

  it("moves and deletes whole graphemes: a combining accent stays with its letter", () => {
    const b = new LineBuffer();
    b.insert("e");
    b.insert("\u0301"); // typed on its own, it joins the e
    b.insert("x");
    b.left();
    b.left();
    expect(b.cursor).toBe(0);
    b.right();
    b.backspace();
    expect(b.text).toBe("x");
    b.replace("a 👍🏽 b");
    b.left();
    b.left();
    b.backspace();
    expect(b.text).toBe("a  b");
  });

  it("word moves and deletes skip spaces then a word (Ollama's readline)", () => {
    const b = new LineBuffer();
    b.insert("one two  three");
    b.wordLeft();
    expect(b.text.slice(b.cursor)).toBe("three");
    b.wordLeft();
    b.deleteWordAfter();
    expect(b.text).toBe("one   three");
    b.end();
    b.deleteWordBefore();
    expect(b.text).toBe("one   ");
    b.home();
    b.killAfter();
    expect(b.text).toBe("");
  });
});

describe("layoutText", () => {
  it("wraps at the margin and places the cursor on the right row", () => {
    // prompt 4 + 16 characters fill a 20-column row exactly
    const l = layoutText("0123456789abcdef", 2, 4, 20);
    expect(l).toMatchObject({ cursor: { row: 0, col: 6 }, end: { row: 1, col: 0 }, endsAtMargin: true });
    const m = layoutText("0123456789abcdefghij", 20, 4, 20);
    expect(m).toMatchObject({ cursor: { row: 1, col: 4 }, end: { row: 1, col: 4 }, endsAtMargin: false });
  });

  it("moves a wide character that does not fit to the next row, padding the one it left", () => {
    const l = layoutText("abc日本", 4, 4, 8); // ">>> abc" leaves one column
    expect(l.display).toBe("abc 日本");
    expect(l.end).toEqual({ row: 1, col: 4 });
    expect(l.cursor).toEqual({ row: 1, col: 2 });
  });
});

describe("LineEditor while the model answers", () => {
  // a terminal as Node gives it: raw mode switched by setRawMode, keys as "data" events
  function fakeTerminal() {
    const input = Object.assign(new PassThrough(), { isTTY: true, raw: false, setRawMode(v: boolean) { this.raw = v; return this; } });
    const written: string[] = [];
    const output = Object.assign(new PassThrough(), { columns: 80, write: (s: string) => (written.push(s), true) });
    return { input, output, written, term: { input, output } as unknown as Terminal };
  }

  it("keeps the terminal raw, turns Ctrl+C into the interrupt, drops keys typed before it and keeps those after", async () => {
    const t = fakeTerminal();
    const editor = new LineEditor(t.term, []);
    let interrupts = 0;
    const stop = editor.whileAnswering(() => interrupts++);
    expect(t.input.raw).toBe(true); // no SIGINT and no "^C" echo from the tty
    t.input.write("typed ahead");
    await new Promise((r) => setImmediate(r));
    expect(interrupts).toBe(0);
    t.input.write("\x03kept");
    await new Promise((r) => setImmediate(r));
    expect(interrupts).toBe(1);
    stop();
    expect(t.input.raw).toBe(false);
    expect(t.written.join("")).not.toContain("typed ahead"); // nothing echoed into the answer
    const read = editor.read({ prompt: ">>> ", placeholder: "" });
    t.input.write("\r");
    expect(await read).toEqual({ kind: "line", line: "kept", pasting: false });
    editor.close();
  });

  it("gives typed-ahead text to the next read when nothing interrupted", async () => {
    const t = fakeTerminal();
    const editor = new LineEditor(t.term, []);
    const stop = editor.whileAnswering(() => {
      throw new Error("no interrupt expected");
    });
    t.input.write("next question\x1b"); // and a lone Esc, which must not swallow the next key
    await new Promise((r) => setImmediate(r));
    stop();
    const read = editor.read({ prompt: ">>> ", placeholder: "" });
    t.input.write("b\r");
    expect(await read).toEqual({ kind: "line", line: "next questionb", pasting: false });
    editor.close();
  });
});
