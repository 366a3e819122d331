// Modelfile ADAPTER (LoRA) against the real daemon: a model created with the tiny test GGUF plus a
// synthetic LoRA adapter (scripts/make-test-adapter.ts), through /api/blobs + /api/create
// `adapters` and through `ollamats create -f` with an ADAPTER line, generates different text from
// the plain model under the same seed, deterministically, and /api/show lists the ADAPTER.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestAdapter } from "../../scripts/make-test-adapter.js";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { CLI, createModelFromFile, sha256File, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
let dir: string;
let gguf: string;
let adapter: string;

const OPTIONS = { seed: 42, temperature: 0.8, num_predict: 16, num_ctx: 512 };

async function generate(model: string): Promise<string> {
  const r = await fetch(`${d.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model, prompt: "Hello there", raw: true, stream: false, options: OPTIONS }),
  });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return (JSON.parse(text) as { response: string }).response;
}

async function show(model: string): Promise<{ modelfile: string }> {
  const r = await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model }) });
  const text = await r.text();
  expect(r.status, text).toBe(200);
  return JSON.parse(text) as { modelfile: string };
}

async function cli(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: d.env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
    });
    child.stdin?.end();
  });
}

beforeAll(async () => {
  [gguf, adapter] = await Promise.all([makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }), makeTestAdapter({ seed: 1 })]);
  d = await startDaemon();
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-adapter-"));
}, 60_000);

afterAll(async () => {
  await d?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("ADAPTER layers", () => {
  it("the generated adapter is deterministic and a llama.cpp LoRA GGUF", async () => {
    const again = await makeTestAdapter({ seed: 1, outDir: dir });
    expect(await readFile(again)).toEqual(await readFile(adapter));
    const other = await makeTestAdapter({ seed: 2, outDir: dir });
    expect(await sha256File(other)).not.toBe(await sha256File(adapter));
  });

  it("a model created with /api/create `adapters` generates different text from the base, deterministically", async () => {
    const base = await createModelFromFile(d.url, "base", gguf);
    expect(base.status, await base.text()).toBe(200);

    const digest = await sha256File(adapter);
    const up = await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: await readFile(adapter) });
    expect([200, 201]).toContain(up.status);
    const tuned = await createModelFromFile(d.url, "tuned", gguf, { adapters: { [path.basename(adapter)]: digest } });
    expect(tuned.status, await tuned.text()).toBe(200);

    const a = await generate("base");
    const b = await generate("tuned");
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    expect(b).not.toBe(a);
    expect(await generate("tuned")).toBe(b);
    // and the base model is unaffected by the adapter having been loaded for `tuned`
    expect(await generate("base")).toBe(a);

    const s = await show("tuned");
    expect(s.modelfile).toMatch(new RegExp(`^ADAPTER .*${digest.replace(":", "-")}$`, "m"));
    expect((await show("base")).modelfile).not.toMatch(/^ADAPTER /m);
  });

  it("`ollamats create -f` with an ADAPTER line builds the same model", async () => {
    const mf = path.join(dir, "Modelfile");
    await writeFile(mf, [`FROM ${gguf}`, `ADAPTER ${adapter}`].join("\n"));
    const r = await cli(["create", "tuned-cli", "-f", mf]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stderr + r.stdout).toMatch(/success/);

    const s = await show("tuned-cli");
    const digest = await sha256File(adapter);
    expect(s.modelfile).toMatch(new RegExp(`^ADAPTER .*${digest.replace(":", "-")}$`, "m"));
    expect(await generate("tuned-cli")).toBe(await generate("tuned"));
    expect(await generate("tuned-cli")).not.toBe(await generate("base"));
  });
});
