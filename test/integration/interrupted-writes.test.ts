// kill -9 of the daemon in the middle of a write: the next start removes what the dead writer left
// in blobs/ (the temp file of a blob upload or of a quantizing create, and its lock directory) as
// soon as the dead writer's lock is stale (10 s), whatever OLLAMA_NOPRUNE says; the write then
// succeeds when repeated. A write still running in another daemon on the same store is left alone.
import { readdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createStreamed, largestFile, uploadBlob, waitFor } from "../../scripts/load-fault/ops.js";
import { startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { verifyBlobs } from "../helpers/registry.js";

let f32: string;
const dirs: string[] = [];
const daemons: TestDaemon[] = [];

beforeAll(async () => {
  // ~21 MB, so an upload or a quantization takes long enough to be killed midway
  f32 = await makeTestModel({ shape: "small", type: "F32", seed: 1 });
});

afterAll(async () => {
  for (const d of daemons) await d.stop().catch(() => undefined);
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function daemonOn(models: string, env: Record<string, string> = {}): Promise<TestDaemon> {
  const d = await startDaemon({ OLLAMA_MODELS: models, ...env });
  daemons.push(d);
  return d;
}

async function kill9(d: TestDaemon): Promise<void> {
  d.proc.kill("SIGKILL");
  await new Promise((r) => d.proc.once("exit", r));
}

async function store(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-interrupted-"));
  dirs.push(dir);
  return dir;
}

/** Waits (generously) until blobs/ holds only finished blobs: no temp file, no lock directory. */
async function onlyBlobs(models: string): Promise<string[]> {
  const blobs = path.join(models, "blobs");
  return waitFor("blobs/ to hold only finished blobs", 40_000, async () => {
    const names = await readdir(blobs);
    return names.every((n) => /^sha256-[0-9a-f]{64}$/.test(n)) ? names : undefined;
  }).catch(async (e: Error) => {
    throw new Error(`${e.message}; blobs/ holds ${JSON.stringify(await readdir(blobs))}`);
  });
}

describe("writes interrupted by kill -9", () => {
  it("a blob upload: the next start removes its temp file and lock, and the upload then succeeds", async () => {
    const models = await store();
    const d1 = await daemonOn(models);
    const up = await uploadBlob(d1, f32, { chunk: 64 << 10, delayMs: 10 });
    up.done.catch(() => undefined);
    await waitFor("the upload's temp file", 60_000, async () => ((await largestFile(path.join(models, "blobs"), /-partial-tmp/)) ?? 0) > 1 << 20 || undefined);
    await kill9(d1);
    expect((await readdir(path.join(models, "blobs"))).some((n) => n.endsWith(".lock"))).toBe(true);

    // OLLAMA_NOPRUNE keeps resumable downloads, not these
    const d2 = await daemonOn(models, { OLLAMA_NOPRUNE: "1" });
    expect(await onlyBlobs(models)).toEqual([]);
    // logged once the sweep is done, just after the files went
    await waitFor("the sweep's log line", 5_000, async () => /removed 1 temp file\(s\) left by interrupted writes/.test(d2.logs()) || undefined);
    const again = await uploadBlob(d2, f32);
    expect((await again.done).status).toBe(201);
    expect(await verifyBlobs(models)).toEqual([again.digest.replace(":", "-")]);
  }, 120_000);

  it("a create quantizing F32 to Q4_0: the next start removes the quantizer's temp file; the create then succeeds", async () => {
    const models = await store();
    const d1 = await daemonOn(models);
    const up = await uploadBlob(d1, f32);
    expect((await up.done).status).toBe(201);
    const body = { model: "q", files: { "m.gguf": up.digest }, quantize: "q4_0" };
    const pending = createStreamed(d1, body).catch(() => undefined);
    await waitFor("the quantizer's temp file", 60_000, async () => ((await largestFile(path.join(models, "blobs"), /^\.quantize-/)) ?? 0) > 0 || undefined);
    await kill9(d1);
    await pending;

    const d2 = await daemonOn(models);
    expect(await onlyBlobs(models)).toEqual([up.digest.replace(":", "-")]);
    const r = await createStreamed(d2, body);
    expect(r.lines.at(-1)).toEqual({ status: "success" });
    expect((await verifyBlobs(models)).length).toBeGreaterThan(2);
    expect((await onlyBlobs(models)).length).toBeGreaterThan(2);
  }, 120_000);

  it("an upload still running in another daemon on the same store is left alone", async () => {
    const models = await store();
    const d1 = await daemonOn(models);
    // ~20 s of upload: past the second sweep of a daemon started meanwhile (11 s after its start)
    const up = await uploadBlob(d1, f32, { chunk: 64 << 10, delayMs: 60 });
    await waitFor("the upload's temp file", 60_000, async () => ((await largestFile(path.join(models, "blobs"), /-partial-tmp/)) ?? 0) > 0 || undefined);
    const d2 = await daemonOn(models);
    expect((await up.done).status).toBe(201);
    expect(d2.logs()).not.toMatch(/temp file/);
    expect(await verifyBlobs(models)).toEqual([up.digest.replace(":", "-")]);
  }, 120_000);
});
