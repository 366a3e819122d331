// Starts the real built daemon (`node dist/cli/main.js serve`) on an ephemeral port with a
// temporary OLLAMA_MODELS, and creates models in it from generated GGUF files.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { reapOnExit } from "./reap.js";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const CLI = path.join(REPO, "dist/cli/main.js");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface TestDaemon {
  url: string;
  host: string;
  models: string;
  proc: ChildProcess;
  logs: () => string;
  env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

export async function startDaemon(extraEnv: Record<string, string> = {}): Promise<TestDaemon> {
  const models = await mkdtemp(path.join(os.tmpdir(), "ollamats-models-"));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const env = { ...process.env, OLLAMA_HOST: host, OLLAMA_MODELS: models, ...extraEnv };
  const proc = spawn(process.execPath, [CLI, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
  reapOnExit(proc);
  let out = "";
  proc.stdout?.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr?.on("data", (d: Buffer) => (out += d.toString()));
  const url = `http://${host}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`daemon exited early: ${out}`);
    try {
      const r = await fetch(url);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`daemon did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    host,
    models,
    proc,
    env,
    logs: () => out,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        await new Promise((r) => proc.once("exit", r));
      }
      await rm(models, { recursive: true, force: true });
    },
  };
}

export async function sha256File(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return `sha256:${h.digest("hex")}`;
}

/** Uploads a GGUF as a blob and creates a model from it, as `ollamats create` does. */
/** Uploads a file as a blob; its digest, and what the daemon answered. */
export async function uploadFile(url: string, file: string): Promise<{ digest: string; status: number; text: string }> {
  const digest = await sha256File(file);
  const up = await fetch(`${url}/api/blobs/${digest}`, { method: "POST", body: await readFile(file) });
  return { digest, status: up.status, text: await up.text() };
}

export async function createModelFromFile(url: string, name: string, file: string, extra: Record<string, unknown> = {}): Promise<Response> {
  const { digest, status, text } = await uploadFile(url, file);
  if (status !== 201 && status !== 200) throw new Error(`blob upload failed: ${status} ${text}`);
  return fetch(`${url}/api/create`, {
    method: "POST",
    body: JSON.stringify({ model: name, files: { [path.basename(file)]: digest }, stream: false, ...extra }),
  });
}

/** Two different tiny models (seeds 1 and 2; generated once, then cached), as `a` and `b`:
 *  what switching, eviction and spare tests load in turn. */
export async function createTinyPair(url: string): Promise<{ a: string; b: string }> {
  const { makeTestModel } = await import("../../scripts/make-test-model.js");
  const files = { a: await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }), b: await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 2 }) };
  for (const [name, file] of Object.entries(files)) {
    const r = await createModelFromFile(url, name, file);
    if (r.status !== 200) throw new Error(`create ${name} failed: ${r.status} ${await r.text()}`);
  }
  return files;
}

async function children(pid: number): Promise<Array<{ pid: number; spare: boolean }>> {
  const text = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => "");
  const pids = text.trim().split(/\s+/).filter(Boolean).map(Number);
  return Promise.all(
    pids.map(async (p) => {
      const cmdline = await readFile(`/proc/${p}/cmdline`, "utf8").catch(() => "");
      return { pid: p, spare: cmdline.split("\0").join(" ").includes("--spare") };
    }),
  );
}

/** The runner processes serving models (the daemon's direct children, the warm spare left out). */
export async function childPids(pid: number): Promise<number[]> {
  return (await children(pid)).filter((c) => !c.spare).map((c) => c.pid);
}

/** The warm spare runner processes (no model yet; src/backends/llamacpp/spare-runner.ts). */
export async function sparePids(pid: number): Promise<number[]> {
  return (await children(pid)).filter((c) => c.spare).map((c) => c.pid);
}

/** Polls until `check` holds or `ms` have gone by; returns the last value read (a failure shows it). */
export async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!check(v) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

/** POST a JSON body; the answer's status, text and JSON (undefined when it is none). */
export async function postJson(base: string, route: string, body: unknown): Promise<{ status: number; json: any; text: string }> {
  const r = await fetch(`${base}${route}`, { method: "POST", body: JSON.stringify(body) });
  const text = await r.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, json, text };
}
