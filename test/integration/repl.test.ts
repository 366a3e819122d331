// `ollamats run MODEL` in a real terminal: tmux runs the REPL against the built daemon, the test
// types with send-keys and reads the screen with capture-pane. Covers multi-line input, /set
// parameter, /save then /load, Ctrl+C in the middle of an answer then another question, word
// wrap at the terminal width, a bracketed paste (at the prompt and while the model answers), /bye
// and Ctrl+D; and the daemon's request log.
import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { float32Json } from "../../src/cli/format.js";
import { CLI, createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

const haveTmux = spawnSync("sh", ["-c", "command -v tmux"]).status === 0;
if (!haveTmux && process.env.CI) throw new Error("tmux is not installed (apt-get install -y tmux)");

const SOCKET = `ollamats-repl-${process.pid}`;
const WIDTH = 70;
let d: TestDaemon;
let home: string;

function tmux(...args: string[]): string {
  const r = spawnSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Start `ollamats run <args>` in a fresh tmux window; the shell prints EXITED:<code> when it ends. */
function startRun(session: string, args: string[], extraEnv: Record<string, string> = {}, width = WIDTH): void {
  const env = { OLLAMA_HOST: d.host, HOME: home, TERM: "xterm-256color", PATH: process.env.PATH ?? "/usr/bin:/bin", ...extraEnv };
  const envWords = Object.entries(env).map(([k, v]) => shellQuote(`${k}=${v}`));
  const cmd = `env -i ${envWords.join(" ")} ${shellQuote(process.execPath)} ${shellQuote(CLI)} run ${args.map(shellQuote).join(" ")}; echo EXITED:$?; sleep 600`;
  tmux("new-session", "-d", "-s", session, "-x", String(width), "-y", "200", cmd);
}

function screen(session: string): string {
  return tmux("capture-pane", "-p", "-t", session, "-S", "-1000");
}

/** The screen's lines, trailing blanks removed. */
function lines(session: string): string[] {
  return screen(session)
    .split("\n")
    .map((l) => l.replace(/\s+$/, ""))
    .filter((l, i, all) => l !== "" || all.slice(i).some((x) => x.trim() !== ""));
}

async function waitFor(session: string, test: (text: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = screen(session);
    if (test(text)) return text;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; screen:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the last non-empty line is an idle prompt (the answer is complete). */
function idlePrompt(session: string, what: string, timeoutMs?: number): Promise<string> {
  return waitFor(session, (t) => /(^|\n)>>> Send a message \(\/\? for help\)\s*$/.test(t), what, timeoutMs);
}

function keys(session: string, ...k: string[]): void {
  tmux("send-keys", "-t", session, ...k);
}

/** Type a line literally, then Enter. */
function type(session: string, text: string): void {
  tmux("send-keys", "-t", session, "-l", text);
  tmux("send-keys", "-t", session, "Enter");
}

async function show(model: string): Promise<{ parameters?: string; messages?: { role: string; content: string }[] }> {
  const r = await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model }) });
  return (await r.json()) as { parameters?: string; messages?: { role: string; content: string }[] };
}

/** Sets num_predict, asks `question` and waits until more than `atLeast` lines follow it;
 *  returns the line count before the question. */
async function startAnswer(session: string, numPredict: number, question: string, atLeast: number): Promise<number> {
  type(session, `/set parameter num_predict ${numPredict}`);
  await idlePrompt(session, "the prompt after /set");
  const before = lines(session).length;
  type(session, question);
  await waitFor(session, () => lines(session).length > before + atLeast, "the answer to start");
  return before;
}

/** `/save name` in the REPL, then the saved model as /api/show reads it. */
async function save(session: string, name: string): ReturnType<typeof show> {
  type(session, `/save ${name}`);
  await waitFor(session, (t) => t.includes(`Created new model '${name}'`), "the /save confirmation");
  return show(name);
}

// Needs tmux (.ci/run installs it): without it the suite fails and says so.
describe("ollamats run in a terminal (tmux)", () => {
  if (!haveTmux) throw new Error("tmux is not installed (apt-get install -y tmux)");
  beforeAll(async () => {
    const gguf = await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1 });
    d = await startDaemon();
    home = await mkdtemp(path.join(os.tmpdir(), "ollamats-repl-home-"));
    const r = await createModelFromFile(d.url, "repl-model", gguf, { parameters: { seed: 5, num_predict: 12 } });
    expect(r.status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    spawnSync("tmux", ["-L", SOCKET, "kill-server"]);
    await d?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it("chats: multi-line input, /set parameter, /save and /load, Ctrl+C mid-answer, another question, /bye", async () => {
    const s = "main";
    startRun(s, ["repl-model"]);
    await idlePrompt(s, "the first prompt");

    type(s, "/set parameter temperature 0.5");
    await waitFor(s, (t) => t.includes("Set parameter 'temperature' to '0.5'"), "the /set confirmation");

    // a """ block: the first line opens it, the continuation prompt says how it ends (Ollama's
    // words: Enter does not send here), the closing line sends it
    type(s, '"""first line');
    await waitFor(s, (t) => /\n\.\.\. Use """ to end multi-line input\s*$/.test(t), "the continuation prompt");
    expect(screen(s)).not.toContain("Press Enter to send");
    type(s, 'second line"""');
    await idlePrompt(s, "the answer to the multi-line message");
    expect(lines(s)).toContain('>>> """first line');
    expect(lines(s)).toContain('... second line"""');

    // /save: the session (parameters, the multi-line message as one user message, the answer)
    const saved = await save(s, "repl-saved");
    expect(saved.parameters).toMatch(/^temperature\s+0\.5$/m);
    expect(saved.messages?.[0]).toEqual({ role: "user", content: "first line\nsecond line" });
    expect(saved.messages?.[1]?.role).toBe("assistant");

    // /load it back and see its parameters
    type(s, "/load repl-saved");
    await waitFor(s, (t) => t.includes("Loading model 'repl-saved'"), "the /load message");
    await idlePrompt(s, "the prompt after /load");
    type(s, "/show parameters");
    await waitFor(s, (t) => /Model defined parameters:\n(\s+\S+\s+\S+\n)*\s+temperature\s+0\.5\n/.test(t), "the loaded model's parameters");
    await idlePrompt(s, "the prompt after /show");

    // a long answer, interrupted with Ctrl+C once it has started
    const before = await startAnswer(s, 100000, "Tell me a very long story about the sea.", 3);
    keys(s, "C-c");
    const after = await idlePrompt(s, "the prompt after Ctrl+C", 15_000);
    expect(after).not.toContain("EXITED:"); // still running
    // it was the answer that stopped, not an idle Ctrl+C: the CLI marks the stop right after the
    // last text it wrote, and nothing follows it but the next prompt
    expect(after).toMatch(/\^C\n>>> /);
    expect(after).not.toContain("Use Ctrl + d or /bye to exit.");
    // the answer was word-wrapped at the terminal width
    const answer = lines(s).slice(before + 1, -1);
    expect(answer.length).toBeGreaterThan(2);
    for (const l of answer) expect(l.length, l).toBeLessThanOrEqual(WIDTH - 5 + 2); // + the "^C" echo

    // the next question is answered normally
    type(s, "/set parameter num_predict 6");
    await idlePrompt(s, "the prompt after /set");
    const mark = lines(s).length;
    type(s, "And another question?");
    await idlePrompt(s, "the answer to the next question");
    expect(lines(s).length).toBeGreaterThan(mark + 1);

    type(s, "/bye");
    await waitFor(s, (t) => t.includes("EXITED:0"), "the REPL to exit with code 0");
  }, 180_000);

  it("keeps a bracketed paste as one message, composes one in $OLLAMA_EDITOR (Ctrl+G), exits on Ctrl+D", async () => {
    const s = "paste";
    const editor = path.join(home, "editor.sh");
    await writeFile(editor, `#!/bin/sh\nprintf ' and more\\nfrom the editor\\n' >> "$1"\n`, { mode: 0o755 });
    startRun(s, ["repl-model"], { OLLAMA_EDITOR: editor });
    await idlePrompt(s, "the first prompt");
    tmux("set-buffer", "-b", "p", "pasted one\npasted two\npasted three");
    tmux("paste-buffer", "-p", "-b", "p", "-t", s);
    await waitFor(s, (t) => t.includes("... pasted three"), "the pasted lines");
    expect(screen(s)).not.toMatch(/pasted one\n(?!\.\.\. pasted two)/); // nothing sent before Enter
    keys(s, "Enter");
    await idlePrompt(s, "the answer to the paste");
    expect((await save(s, "pasted")).messages?.[0]).toEqual({ role: "user", content: "pasted one\npasted two\npasted three" });

    // Ctrl+G: what was typed goes to the editor; its lines come back, the last one waiting for Enter
    tmux("send-keys", "-t", s, "-l", "typed");
    keys(s, "C-g");
    await waitFor(s, (t) => /\n>>> typed and more\n\.\.\. from the editor\s*$/.test(t), "the editor's text on the prompt");
    keys(s, "Enter");
    await idlePrompt(s, "the answer to the edited message");
    expect((await save(s, "edited")).messages?.at(-2)).toEqual({ role: "user", content: "typed and more\nfrom the editor" });

    keys(s, "C-d");
    await waitFor(s, (t) => t.includes("EXITED:0"), "the REPL to exit on Ctrl+D");
  }, 120_000);

  it("keeps what is pasted while the model answers out of the answer, for the next prompt", async () => {
    const s = "ahead";
    startRun(s, ["repl-model"]);
    await idlePrompt(s, "the first prompt");
    const before = await startAnswer(s, 400, "Tell me a long story.", 1);
    tmux("set-buffer", "-b", "p", "ahead one\nahead two");
    tmux("paste-buffer", "-p", "-b", "p", "-t", s);
    // the answer goes on undisturbed; the paste shows on the next prompt, not sent yet
    await waitFor(s, (t) => /\n>>> ahead one\n\.\.\. ahead two\s*$/.test(t), "the paste on the next prompt");
    const answer = lines(s).slice(before + 1, -2);
    expect(answer.length).toBeGreaterThan(1);
    expect(answer.join("\n")).not.toMatch(/ahead|\^\[|200~/);
    keys(s, "Enter");
    await idlePrompt(s, "the answer to the paste");
    expect((await save(s, "ahead")).messages?.at(-2)).toEqual({ role: "user", content: "ahead one\nahead two" });
    type(s, "/bye");
    await waitFor(s, (t) => t.includes("EXITED:0"), "the REPL to exit");
  }, 120_000);

  // Text inserted in the middle of a line lands at the cursor however it arrives: a bracketed
  // paste, fast typing (several characters in one read), IME text (wide characters); a line longer
  // than the terminal wraps and is redrawn in place.
  for (const width of [40, 60, 120]) {
    it(`edits at the cursor at ${width} columns: pasted, fast-typed and wide text, a wrapped line`, async () => {
      const s = `edit${width}`;
      startRun(s, ["repl-model"], {}, width);
      await idlePrompt(s, "the first prompt");
      const send = async (what: string) => {
        keys(s, "Enter");
        await idlePrompt(s, `the answer to ${what}`);
      };

      tmux("send-keys", "-t", s, "-l", "short line here");
      keys(s, "Left", "Left", "Left", "Left");
      tmux("set-buffer", "-b", "xyz", "xyz");
      tmux("paste-buffer", "-p", "-b", "xyz", "-t", s);
      await waitFor(s, (t) => t.includes(">>> short line xyzhere"), "the paste at the cursor");
      await send("the pasted line");

      tmux("send-keys", "-t", s, "-l", "fast typed");
      keys(s, "Left", "Left", "Left", "Left", "Left");
      tmux("send-keys", "-t", s, "-l", "and "); // one write: the way fast typing arrives
      await waitFor(s, (t) => t.includes(">>> fast and typed"), "the typed text at the cursor");
      await send("the typed line");

      tmux("send-keys", "-t", s, "-l", "日本語テキスト");
      keys(s, "Home", "Right", "Right");
      tmux("send-keys", "-t", s, "-l", "中文");
      await waitFor(s, (t) => t.includes(">>> 日本中文語テキスト"), "the wide text at the cursor");
      await send("the wide line");

      // longer than the terminal: wraps; an edit near its start redraws it in place, once
      const long = Array.from({ length: Math.ceil((width * 1.5) / 6) }, (_, i) => `w${String(i).padStart(3, "0")}`).join(" ");
      tmux("send-keys", "-t", s, "-l", long);
      keys(s, "Home", "Right", "Right", "Right", "Right");
      tmux("send-keys", "-t", s, "-l", "[x]");
      const edited = long.slice(0, 4) + "[x]" + long.slice(4);
      await waitFor(s, (t) => t.replace(/\n/g, "").includes(`>>> ${edited}`), "the wrapped line edited");
      const joined = tmux("capture-pane", "-p", "-J", "-t", s, "-S", "-1000");
      expect(joined.split(long.slice(-10)).length - 1, joined).toBe(1); // drawn once, no stale copies
      for (const l of lines(s)) expect(l.length, l).toBeLessThanOrEqual(width);
      await send("the long line");

      const users = ((await save(s, `edited-${width}`)).messages ?? []).filter((m) => m.role === "user").map((m) => m.content);
      expect(users).toEqual(["short line xyzhere", "fast and typed", "日本中文語テキスト", edited]);
      type(s, "/bye");
      await waitFor(s, (t) => t.includes("EXITED:0"), "the REPL to exit");
    }, 120_000);
  }

  it("prints an embedding model's vector, and the server version for -v", async () => {
    const v = spawnSync(process.execPath, [CLI, "-v"], { encoding: "utf8", env: { ...process.env, OLLAMA_HOST: d.host } });
    expect(v.stdout).toMatch(/^ollamats version is \d+\.\d+\.\d+\S*\n$/);

    const gguf = await makeTestModel({ shape: "tiny", type: "F16", seed: 1, embedding: true });
    expect((await createModelFromFile(d.url, "repl-embed", gguf)).status).toBe(200);
    const run = (args: string[]) => spawnSync(process.execPath, [CLI, "run", ...args], { encoding: "utf8", env: { ...process.env, OLLAMA_HOST: d.host }, input: "" });
    const full = run(["repl-embed", "hello world"]);
    expect(full.stderr).toBe("");
    expect(full.stdout).toMatch(/^\[-?\d[^\]]*\]\n$/);
    const vec = JSON.parse(full.stdout) as number[];
    expect(vec).toHaveLength(64);
    // float32 values printed as Go's json.Marshal prints them: the shortest float32 decimal
    for (const word of full.stdout.trim().slice(1, -1).split(",")) expect(float32Json(Number(word))).toBe(word);
    const cut = run(["repl-embed", "hello world", "--dimensions", "4"]);
    expect(JSON.parse(cut.stdout)).toHaveLength(4);
    const none = run(["repl-embed"]);
    expect(none.status).toBe(1);
    expect(none.stderr).toBe('Error: embedding models require input text. Usage: ollamats run repl-embed "your text here"\n');
  });

  it("logs one line per request, chat streams when they end, without prompt text", async () => {
    const log = d.logs();
    expect(log).not.toContain("first line");
    expect(log).not.toContain("long story");
    expect(log).not.toContain("pasted one");
    expect(log).toMatch(/level=INFO msg=request method=POST path=\/api\/chat status=200 .*duration=\S+/);
    // the interrupted answer: logged when the client went away
    const requests = log.split("\n").filter((l) => l.includes("msg=request")).join("\n");
    expect(requests, requests).toMatch(/path=\/api\/chat status=200 .*canceled=true/);
    expect(log).toMatch(/path=\/api\/create status=200/);
  });
});
