// llama.cpp's own llama-server (scripts/build-llama-server.sh builds it from the llama.cpp source
// node-llama-cpp ships, into .cache/) started on a GGUF file on an ephemeral port. A random-weight
// model needs `--no-jinja --chat-template chatml`: the Jinja path's output parser refuses noise.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { freePort, REPO } from "./daemon.js";
import { reapOnExit } from "./reap.js";

export interface LlamaServer {
  url: string;
  port: number;
  proc: ChildProcess;
  logs: () => string;
  stop(): Promise<void>;
}

/** The binary's path, built first when it is not cached (minutes: run .ci/run or the script once). */
export function llamaServerBinary(): string {
  return execFileSync(path.join(REPO, "scripts/build-llama-server.sh"), { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
}

export async function startLlamaServer(model: string, opts: { alias: string; slots?: number; ctx?: number; threads?: number; extra?: string[] }): Promise<LlamaServer> {
  const port = await freePort();
  const args = [
    "-m", model, "--alias", opts.alias, "--host", "127.0.0.1", "--port", String(port),
    "-np", String(opts.slots ?? 2), "-c", String((opts.ctx ?? 1024) * (opts.slots ?? 2)), "-t", String(opts.threads ?? 1),
    "--no-jinja", "--chat-template", "chatml", "--no-webui", "--metrics", ...(opts.extra ?? []),
  ];
  const proc = spawn(llamaServerBinary(), args, { stdio: ["ignore", "pipe", "pipe"] });
  reapOnExit(proc);
  let out = "";
  proc.stdout?.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  proc.stderr?.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`llama-server exited early: ${out}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`llama-server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    port,
    proc,
    logs: () => out,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGKILL");
        await new Promise((r) => proc.once("exit", r));
      }
    },
  };
}

/** A counter of llama-server's Prometheus /metrics (`llamacpp:<name>`). */
export async function llamaMetric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^llamacpp:${name}\\s+([0-9.e+]+)$`, "m").exec(text);
  return m ? Number(m[1]) : NaN;
}
