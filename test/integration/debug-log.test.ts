// OLLAMA_DEBUG=1 logs what Ollama logs at debug level: the load plan and the runner's options,
// the prompt as rendered by the template, the request's options, and the timings. Without it none
// of that (and no prompt text) reaches the log.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let debug: TestDaemon;
let quiet: TestDaemon;
let gguf: string;

const TEMPLATE = "<|user|>{{ .Prompt }}<|assistant|>";

async function generate(d: TestDaemon): Promise<void> {
  const r = await fetch(`${d.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model: "dbg", prompt: "a secret question", stream: false, options: { temperature: 0.25, num_predict: 3, seed: 7 } }),
  });
  expect(r.status).toBe(200);
}

beforeAll(async () => {
  gguf = await makeTestModel({ shape: "tiny", type: "Q8_0", seed: 1 });
  debug = await startDaemon({ OLLAMA_DEBUG: "1" });
  quiet = await startDaemon({ OLLAMA_DEBUG: "" });
  for (const d of [debug, quiet]) expect((await createModelFromFile(d.url, "dbg", gguf, { template: TEMPLATE })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await debug?.stop();
  await quiet?.stop();
});

describe("OLLAMA_DEBUG", () => {
  it("logs the load plan, the rendered prompt, the options and the timings at debug level", async () => {
    await generate(debug);
    const log = debug.logs();
    const line = (msg: RegExp) => log.split("\n").find((l) => /level=DEBUG/.test(l) && msg.test(l)) ?? "";
    const plan = line(/msg="load plan for dbg:latest"/);
    expect(plan, log).toMatch(/placement="\{.*\\"gpuLayers\\":\d+.*\\"fitsRam\\":true/);
    expect(plan).toMatch(/\\"numCtx\\":\d+.*\\"slots\\":\d+/);
    expect(plan).not.toContain("tokenizer."); // the GGUF header is not repeated
    expect(line(/msg="runner started for dbg:latest" duration=\S+/)).not.toBe("");
    const request = line(/msg="completion request"/);
    expect(request).toContain('prompt="<|user|>a secret question<|assistant|>"');
    expect(request).toMatch(/options="\{.*\\"temperature\\":0\.25.*\\"num_predict\\":3/);
    expect(request).toMatch(/\\"seed\\":7/);
    const timings = line(/msg="completion timings"/);
    expect(timings).toMatch(/prompt_eval_count=\d+ .*eval_count=3 eval_duration=\S+ eval_rate="[\d.]+ tokens\/s" total_duration=\S+/);
  });

  it("logs none of it, and no prompt text, at info level", async () => {
    await generate(quiet);
    const log = quiet.logs();
    expect(log).not.toContain("level=DEBUG");
    expect(log).not.toContain("secret question");
    expect(log).toMatch(/msg="loaded dbg:latest"/);
  });
});
