// Single operations the fault parts interrupt and repeat: a blob upload (optionally throttled, so
// a kill lands mid-body), a create that streams its progress, a short generate, and waiting for
// files in the store to reach a state.
import { readFile } from "node:fs/promises";
import { promises as fs } from "node:fs";
import path from "node:path";
import { sha256File } from "../../test/helpers/daemon.js";
import type { Daemon } from "./daemon.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` every 50 ms until it returns a value (not undefined) or `ms` pass. */
export async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** Size of the largest file in `dir` whose name matches, or undefined when there is none. */
export async function largestFile(dir: string, name: RegExp): Promise<number | undefined> {
  let best: number | undefined;
  for (const e of await fs.readdir(dir).catch(() => [] as string[])) {
    if (!name.test(e)) continue;
    const st = await fs.stat(path.join(dir, e)).catch(() => null);
    if (st?.isFile()) best = Math.max(best ?? 0, st.size);
  }
  return best;
}

export interface Upload {
  digest: string;
  /** Settles with the status, or rejects when the connection dies. */
  done: Promise<{ status: number; text: string }>;
}

/** POST /api/blobs/<digest> with the file's bytes, `chunk` bytes every `delayMs` when throttled. */
export async function uploadBlob(daemon: { url: string }, file: string, throttle?: { chunk: number; delayMs: number }): Promise<Upload> {
  const digest = await sha256File(file);
  const bytes = await readFile(file);
  let body: Uint8Array | ReadableStream<Uint8Array> = bytes;
  if (throttle) {
    let off = 0;
    body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        if (off >= bytes.length) return ctl.close();
        await sleep(throttle.delayMs);
        ctl.enqueue(bytes.subarray(off, off + throttle.chunk));
        off += throttle.chunk;
      },
    });
  }
  const done = fetch(`${daemon.url}/api/blobs/${digest}`, { method: "POST", body, duplex: "half", signal: AbortSignal.timeout(300_000) } as RequestInit).then(
    async (r) => ({ status: r.status, text: await r.text() }),
  );
  return { digest, done };
}

/** POST /api/create; `onLine` sees each progress object. Resolves to every line (with
 *  stream:false, the one object), or to the error object of a refusal. */
export async function createStreamed(
  daemon: { url: string },
  body: Record<string, unknown>,
  onLine: (l: Record<string, unknown>) => void = () => undefined,
): Promise<{ status: number; lines: Array<Record<string, unknown>> }> {
  const res = await fetch(`${daemon.url}/api/create`, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(300_000) });
  const lines: Array<Record<string, unknown>> = [];
  if (!res.ok) return { status: res.status, lines: [(await res.json()) as Record<string, unknown>] };
  let rest = "";
  const take = (line: string) => {
    if (line.trim() === "") return;
    const obj = JSON.parse(line) as Record<string, unknown>;
    lines.push(obj);
    onLine(obj);
  };
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    rest += Buffer.from(chunk).toString();
    let i: number;
    while ((i = rest.indexOf("\n")) >= 0) {
      take(rest.slice(0, i));
      rest = rest.slice(i + 1);
    }
  }
  take(rest); // with stream:false, one object and no newline
  return { status: res.status, lines };
}

/** A short non-streamed generate; throws unless it answers 200 with text. */
export async function generateShort(daemon: Daemon, model: string): Promise<string> {
  const res = await fetch(`${daemon.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model, prompt: "the cat sat", stream: false, options: { num_predict: 4, seed: 1 } }),
    signal: AbortSignal.timeout(120_000),
  });
  const j = (await res.json()) as { response?: string; error?: string };
  if (res.status !== 200 || typeof j.response !== "string") throw new Error(`generate ${model}: ${res.status} ${j.error ?? JSON.stringify(j)}`);
  return j.response;
}

/** Bytes the saved part states of the store's downloads say are done. */
export async function partCompleted(models: string): Promise<number> {
  const dir = path.join(models, "blobs");
  let sum = 0;
  for (const e of await fs.readdir(dir).catch(() => [] as string[])) {
    if (!/-partial-\d+$/.test(e)) continue;
    try {
      sum += (JSON.parse(await fs.readFile(path.join(dir, e), "utf8")) as { Completed: number }).Completed;
    } catch {
      // being replaced
    }
  }
  return sum;
}
