// Models for the suite: generated GGUF files created in a daemon and pushed to the local
// docker-registry, so the daemon under test can pull them.
import { createModelFromFile } from "../../test/helpers/daemon.js";
import { postJson } from "../../test/helpers/registry.js";
import type { Daemon } from "./daemon.js";

/** Creates `name` in `daemon` from `file` (extra /api/create fields allowed) and checks the answer. */
export async function createModel(daemon: Daemon, name: string, file: string, extra: Record<string, unknown> = {}): Promise<void> {
  const res = await createModelFromFile(daemon.url, name, file, extra);
  if (res.status !== 200) throw new Error(`create ${name}: ${res.status} ${await res.text()}`);
}

export async function pushModel(daemon: Daemon, name: string): Promise<void> {
  const res = await postJson(`${daemon.url}/api/push`, { model: name, insecure: true, stream: false });
  if (res.status !== 200) throw new Error(`push ${name}: ${res.status} ${await res.text()}`);
}

export async function deleteModel(daemon: Daemon, name: string): Promise<void> {
  const res = await postJson(`${daemon.url}/api/delete`, { model: name }, "DELETE");
  if (res.status !== 200) throw new Error(`delete ${name}: ${res.status} ${await res.text()}`);
}

/** Pull with `stream: false`: the final status (or error) and how long it took. */
export async function pullOnce(daemon: Daemon, name: string, timeoutMs = 300_000): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`${daemon.url}/api/pull`, {
    method: "POST",
    body: JSON.stringify({ model: name, insecure: true, stream: false }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body, ms: Date.now() - t0 };
}
