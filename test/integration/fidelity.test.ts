// Answers clients compare with Ollama's: /api/version (the Ollama API version, ollamats' own in
// another field) and /api/show with `options` (the model's parameters, not the request's).
import { Ollama } from "ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { OLLAMA_API_VERSION } from "../../src/daemon/api-version.js";
import { packageVersion } from "../../src/daemon/serve.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
let ollama: Ollama;

beforeAll(async () => {
  d = await startDaemon();
  ollama = new Ollama({ host: d.url });
  const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  expect((await createModelFromFile(d.url, "tiny", file, { parameters: { temperature: 0.3, stop: ["<|im_end|>"] } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await d?.stop();
});

describe("/api/version", () => {
  it("is the Ollama API version ollamats serves, with ollamats' own version beside it", async () => {
    expect(OLLAMA_API_VERSION).toMatch(/^0\.(\d+)\.(\d+)$/);
    const [, minor] = /^0\.(\d+)/.exec(OLLAMA_API_VERSION)!;
    // Clients gate tools, thinking and logprobs on 0.3, 0.9 and 0.12.11: never a 2023 version.
    expect(Number(minor)).toBeGreaterThanOrEqual(13);
    const r = await fetch(`${d.url}/api/version`);
    expect(await r.json()).toEqual({ version: OLLAMA_API_VERSION, ollamats_version: packageVersion() });
    expect((await ollama.version()).version).toBe(OLLAMA_API_VERSION);
    const head = await fetch(`${d.url}/api/version`, { method: "HEAD" });
    expect(head.status).toBe(200);
  });
});

describe("/api/show with options", () => {
  it("parameters are the model's; the request's options only go into the Modelfile", async () => {
    const plain = await ollama.show({ model: "tiny" });
    const withOptions = await ollama.show({ model: "tiny", options: { temperature: 0.9, num_ctx: 1024, seed: 7 } });
    expect(withOptions.parameters).toBe(plain.parameters);
    expect(withOptions.parameters).toContain("temperature");
    expect(withOptions.parameters).not.toContain("num_ctx");
    expect(withOptions.parameters).not.toContain("0.9");
    // Ollama merges the request's options into the generated Modelfile (a model to re-create).
    expect(withOptions.modelfile).toMatch(/^PARAMETER num_ctx 1024$/m);
    expect(withOptions.modelfile).toMatch(/^PARAMETER temperature 0.9$/m);
    expect(plain.modelfile).not.toMatch(/num_ctx/);
  });

  it("a model without parameters shows none, whatever the options", async () => {
    // no chat template: a GGUF with one Ollama knows gets that template's stop parameters
    const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1, template: "none" });
    expect((await createModelFromFile(d.url, "bare", file)).status).toBe(200);
    const r = await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model: "bare", options: { top_k: 5 } }) });
    const body = (await r.json()) as Record<string, unknown>;
    expect("parameters" in body).toBe(false);
    expect(body.modelfile).toMatch(/^PARAMETER top_k 5$/m);
  });
});
