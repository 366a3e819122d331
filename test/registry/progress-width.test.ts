// `ollamats pull` and `ollamats push` in real terminals (tmux) 40, 60 and 120 columns wide, against
// a real registry behind a proxy that slows the download, so the progress is redrawn many times:
// every line stays within the width and each is on the screen (scrollback included) exactly once.
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { displayWidth } from "../../src/cli/table.js";
import { CLI, createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { postJson, registryEnv, startFaultProxy, startRegistry, type FaultProxy, type TestRegistry } from "../helpers/registry.js";

const haveTmux = spawnSync("sh", ["-c", "command -v tmux"]).status === 0;
if (!haveTmux) throw new Error("tmux is not installed (apt-get install -y tmux)");
const run = describe;

const SOCKET = `ollamats-progress-${process.pid}`;
let reg: TestRegistry;
let proxy: FaultProxy;
let src: TestDaemon;
let home: string;
const daemons: TestDaemon[] = [];

function tmux(...args: string[]): string {
  const r = spawnSync("tmux", ["-L", SOCKET, ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Run the CLI in a tmux window `width` columns wide until it exits; the whole screen and scrollback. */
async function inTerminal(session: string, width: number, host: string, args: string[]): Promise<string[]> {
  const env = { OLLAMA_HOST: host, HOME: home, TERM: "xterm-256color", PATH: process.env.PATH ?? "/usr/bin:/bin" };
  const words = Object.entries(env).map(([k, v]) => quote(`${k}=${v}`));
  tmux("new-session", "-d", "-s", session, "-x", String(width), "-y", "50", `env -i ${words.join(" ")} ${quote(process.execPath)} ${quote(CLI)} ${args.map(quote).join(" ")}; echo EXITED:$?; sleep 600`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const text = tmux("capture-pane", "-p", "-t", session, "-S", "-", "-E", "-");
    if (text.includes("EXITED:")) {
      expect(text).toContain("EXITED:0");
      return text.split("\n").map((l) => l.replace(/\s+$/, "")).filter((l) => l !== "" && !l.startsWith("EXITED:"));
    }
    if (Date.now() > deadline) throw new Error(`timed out; screen:\n${text}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Each line once, none wider than the terminal. */
function expectDrawnOnce(lines: string[], width: number, first: string): void {
  const text = lines.join("\n");
  for (const l of lines) expect(displayWidth(l), `${l}\n---\n${text}`).toBeLessThan(width);
  const labels = lines.map((l) => l.replace(/\s+\d+%.*$/, "").replace(/ [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]$/, ""));
  expect(new Set(labels).size, text).toBe(labels.length);
  expect(labels[0], text).toBe(first);
  expect(labels.at(-1), text).toBe("success");
}

run("progress in terminals of several widths (tmux)", () => {
  beforeAll(async () => {
    reg = await startRegistry();
    proxy = await startFaultProxy(reg.url);
    home = await mkdtemp(path.join(os.tmpdir(), "ollamats-progress-home-"));
    src = await startDaemon(registryEnv(home));
    daemons.push(src);
    const file = await makeTestModel({ shape: "small", type: "F16", seed: 1 });
    expect((await createModelFromFile(src.url, `${reg.host}/test/prog:latest`, file, { parameters: { seed: 1 } })).status).toBe(200);
    const pushed = await postJson(`${src.url}/api/push`, { model: `${reg.host}/test/prog:latest`, insecure: true, stream: false });
    expect(pushed.status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    spawnSync("tmux", ["-L", SOCKET, "kill-server"]);
    for (const d of daemons) await d.stop();
    await proxy?.stop();
    await reg?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  for (const width of [40, 60, 120]) {
    it(`pull redraws in place at ${width} columns`, async () => {
      const dst = await startDaemon(registryEnv(home));
      daemons.push(dst);
      proxy.faults = { throttleMs: 15 }; // a few seconds: dozens of redraws
      const lines = await inTerminal(`pull${width}`, width, dst.host, ["pull", "--insecure", `${proxy.host}/test/prog:latest`]);
      expectDrawnOnce(lines, width, "pulling manifest");
      expect(lines.filter((l) => /^pulling [0-9a-f]{12}/.test(l)).length).toBeGreaterThanOrEqual(2); // weights and more
      proxy.faults = {};
    }, 180_000);
  }

  it("push redraws in place at 40 columns", async () => {
    const name = `${proxy.host}/test/pushed:latest`;
    expect((await postJson(`${src.url}/api/copy`, { source: `${reg.host}/test/prog:latest`, destination: name })).status).toBe(200);
    const lines = await inTerminal("push40", 40, src.host, ["push", "--insecure", name]);
    const drawn = lines.slice(0, lines.indexOf("You can find your model at:"));
    expectDrawnOnce(drawn, 40, "retrieving manifest");
  }, 180_000);
});
