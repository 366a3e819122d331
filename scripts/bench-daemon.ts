// A daemon for one `npm run bench` case: started with the case's environment and the test model
// created in it; the model loaded, and unloaded again (keep_alive 0, waiting for the runner
// process to exit) so that a direct side can run next with the cores to itself.
import type http from "node:http";
import { childPids, createModelFromFile, startDaemon, type TestDaemon } from "../test/helpers/daemon.js";
import { generate } from "./bench-stream.js";

export interface BenchDaemon {
  d: TestDaemon;
  model: string;
}

export async function startWithModel(env: Record<string, string>, model: string, modelPath: string): Promise<BenchDaemon> {
  const d = await startDaemon(env);
  try {
    const created = await createModelFromFile(d.url, model, modelPath);
    if (!created.ok) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    await created.text();
  } catch (err) {
    await d.stop();
    throw err;
  }
  return { d, model };
}

/** Loads the model (an empty prompt) with these options; returns the load's wall time in ms. */
export async function loadModel(agent: http.Agent, b: BenchDaemon, options: Record<string, unknown>): Promise<number> {
  const g = await generate(agent, b.d.url, { model: b.model, prompt: "", keep_alive: "10m", options: { ...options, num_predict: 0 } });
  return g.tEnd - g.tSent;
}

/** Unloads the model and waits (up to 15 s) until the daemon has no runner process left. */
export async function unloadModel(agent: http.Agent, b: BenchDaemon, options: Record<string, unknown>): Promise<void> {
  await generate(agent, b.d.url, { model: b.model, prompt: "", keep_alive: 0, options: { ...options, num_predict: 0 } });
  const pid = b.d.proc.pid!;
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    if ((await childPids(pid)).length === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Flash attention and KV cache types of the last load, from the daemon's "loaded" log line. */
export function loadedSettings(b: BenchDaemon): { flashAttention: string; kv: string } {
  const line = b.d.logs().split("\n").filter((l) => /msg="?loaded /.test(l)).at(-1) ?? "";
  return { flashAttention: /flash_attention=(\S+)/.exec(line)?.[1] ?? "?", kv: /\bkv=(\S+)/.exec(line)?.[1] ?? "?" };
}
