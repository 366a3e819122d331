// The daemon under test: the built CLI (`node dist/cli/main.js serve`) on loopback with a given
// OLLAMA_MODELS, started through the test helper, plus what the suite asks of its logs: a clean
// start has only INFO lines, and no line anywhere is an ERROR or a stack trace.
import { DAEMON_NODE_FLAGS } from "../../src/daemon/node-flags.js";
import { rm, writeFile } from "node:fs/promises";
import { makeDirs } from "../../src/fs/make-dirs.js";
import os from "node:os";
import path from "node:path";
import { startDaemon, type TestDaemon } from "../../test/helpers/daemon.js";
import { registryEnv } from "../../test/helpers/registry.js";

export interface Daemon {
  url: string;
  pid: number;
  models: string;
  logs(): string;
  alive(): boolean;
  kill9(): Promise<void>;
  /** SIGTERM and wait for the exit (a daemon already dead is fine). */
  stop(): Promise<void>;
}

/** Starts the daemon on `models`; `home` holds its identity key. */
export async function launch(models: string, home: string, env: Record<string, string> = {}): Promise<Daemon> {
  // started as the service files start it (DAEMON_NODE_FLAGS: the heap sized for a server)
  const nodeOptions = [process.env.NODE_OPTIONS ?? "", ...DAEMON_NODE_FLAGS].join(" ").trim();
  const d: TestDaemon = await startDaemon(registryEnv(home, { OLLAMA_MODELS: models, NODE_OPTIONS: nodeOptions, ...env }));
  // startDaemon made a models directory of its own that this daemon does not use
  await rm(d.models, { recursive: true, force: true });
  const exited = new Promise<void>((r) => d.proc.once("exit", () => r()));
  const alive = () => d.proc.exitCode === null && d.proc.signalCode === null;
  return {
    url: d.url,
    pid: d.proc.pid!,
    models,
    logs: d.logs,
    alive,
    kill9: async () => {
      if (alive()) d.proc.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      if (alive()) d.proc.kill("SIGTERM");
      await exited;
    },
  };
}

const SLOG = /^time=\S+ level=(TRACE|DEBUG|INFO|WARN|ERROR) msg=/;

/** Log lines that are not INFO (or quieter) slog lines: warnings, errors, stack traces, stray output. */
export function unexpectedLogLines(text: string, allow: RegExp[] = []): string[] {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .filter((l) => {
      const m = SLOG.exec(l);
      return !m || m[1] === "WARN" || m[1] === "ERROR";
    })
    .filter((l) => !allow.some((a) => a.test(l)));
}

/** ERROR lines and anything that looks like a stack trace or a crash; `allow` names expected ones. */
export function errorLogLines(text: string, allow: RegExp[] = []): string[] {
  return text
    .split("\n")
    .filter((l) => / level=ERROR /.test(l) || /^\s+at /.test(l) || /Uncaught|FATAL|Aborted|Segmentation/.test(l))
    .filter((l) => !allow.some((a) => a.test(l)));
}

const LOG_DIR = path.join(os.tmpdir(), "ollamats-load-fault-logs");

/** Keeps a daemon's log for reading after the run; returns the file. */
export async function saveLog(daemon: Daemon, name: string): Promise<string> {
  await makeDirs(LOG_DIR);
  const file = path.join(LOG_DIR, `${name}.log`);
  await writeFile(file, daemon.logs());
  return file;
}

/** Starts the daemon again on the same store and waits for the start to settle (the GPU probe
 *  logs once after the listener is up); returns it with the log lines that make it unclean. */
export async function restartClean(models: string, home: string, env: Record<string, string> = {}): Promise<{ daemon: Daemon; unclean: string[] }> {
  const daemon = await launch(models, home, env);
  const deadline = Date.now() + 10_000;
  while (!/msg="(no GPU found|GPUs: |device discovery failed)/.test(daemon.logs()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 300));
  return { daemon, unclean: unexpectedLogLines(daemon.logs()) };
}

export const shortLines = (lines: string[], n = 3): string => lines.slice(0, n).map((l) => l.slice(0, 200)).join(" | ") + (lines.length > n ? ` (+${lines.length - n} more)` : "");
