// Daemon CPU per streamed token through a remote model (llama-server upstream): the front's own
// cost, read from /proc/<daemon pid>/stat around long streams, so it does not depend on how
// loaded the machine is (unlike the bench's wall-clock figures).
//   tsx scripts/profile-remote.ts [--streams 6] [--tokens 512] [--api chat|v1]
//   PROFILE_CPU_PROF=dir: the daemon writes a V8 CPU profile there (node --cpu-prof).
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { makeTestModel } from "./make-test-model.js";
import { spawn } from "node:child_process";
import { CLI, freePort } from "../test/helpers/daemon.js";
import { startLlamaServer } from "../test/helpers/llama-server.js";

const TICK_US = 10_000; // USER_HZ is 100 on Linux

/** utime + stime of a process, µs. */
export function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_US;
}

/** Reads a whole stream; returns the engine's token count from its last line. */
async function stream(url: string, body: object, api: "chat" | "v1"): Promise<number> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const text = await res.text();
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  if (api === "chat") return (JSON.parse(lines.at(-1)!) as { eval_count: number }).eval_count;
  const usage = lines.filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)) as { usage?: { completion_tokens: number } }).findLast((j) => j.usage);
  return usage?.usage?.completion_tokens ?? 0;
}

/** The daemon with node flags of its own (NODE_OPTIONS refuses --cpu-prof). */
async function serve(nodeArgs: string[]) {
  const models = await mkdtemp(path.join(os.tmpdir(), "ollamats-profile-"));
  const host = `127.0.0.1:${await freePort()}`;
  // PROFILE_STRACE=file: the daemon runs under `strace -c` (its syscall counts, into that file).
  const strace = process.env.PROFILE_STRACE;
  const cmd = strace ? ["strace", ...(process.env.PROFILE_STRACE_ARGS ?? "-c").split(" "), "-f", "-o", strace, process.execPath] : [process.execPath];
  const proc = spawn(cmd[0]!, [...cmd.slice(1), ...nodeArgs, CLI, "serve"], { env: { ...process.env, OLLAMA_HOST: host, OLLAMA_MODELS: models, OLLAMA_REMOTES: "127.0.0.1" }, stdio: "ignore" });
  const url = `http://${host}`;
  for (let i = 0; ; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) break;
    if (i > 200) throw new Error("daemon did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    proc,
    stop: async () => {
      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
      await rm(models, { recursive: true, force: true });
    },
  };
}

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : (process.argv[i + 1] ?? fallback);
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const streams = Number(arg("streams", "6"));
  const tokens = Number(arg("tokens", "512"));
  const api = arg("api", "chat") as "chat" | "v1";
  const model = await makeTestModel({ shape: "small", type: "Q4_0", seed: 1 });
  const server = await startLlamaServer(model, { alias: "m", slots: 2, ctx: 4096, threads: 1 });
  const prof = process.env.PROFILE_CPU_PROF;
  let daemon: Awaited<ReturnType<typeof serve>> | undefined;
  try {
    const d = await serve(prof ? [`--cpu-prof`, `--cpu-prof-dir=${prof}`] : []);
    daemon = d;
    const c = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ model: "one", from: "m", remote_host: `${server.url}/v1`, stream: false }) });
    if (!c.ok) throw new Error(await c.text());
    const pid = d.proc.pid!;
    const req = (i: number) => {
      const messages = [{ role: "user", content: `profile ${i}: tell a long story` }];
      return api === "chat"
        ? { url: `${d.url}/api/chat`, body: { model: "one", messages, options: { num_predict: tokens, temperature: 0 }, stream: true } }
        : { url: `${d.url}/v1/chat/completions`, body: { model: "one", messages, max_tokens: tokens, temperature: 0, stream: true, stream_options: { include_usage: true } } };
    };
    for (let i = 0; i < 2; i++) await stream(req(-1 - i).url, req(-1 - i).body, api);
    let total = 0;
    const cpu0 = cpuUs(pid);
    const t0 = performance.now();
    for (let i = 0; i < streams; i++) {
      const r = req(i);
      total += await stream(r.url, r.body, api);
    }
    const wall = performance.now() - t0;
    const cpu = cpuUs(pid) - cpu0;
    console.log(JSON.stringify({ api, streams, tokens: total, daemonCpuMs: cpu / 1000, cpuUsPerToken: +(cpu / total).toFixed(1), wallTokPerS: +(total / (wall / 1000)).toFixed(0) }));
  } finally {
    await daemon?.stop();
    await server.stop();
  }
}
