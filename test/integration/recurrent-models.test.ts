// Recurrent models (Mamba: no attention, no KV cache; Jamba: Mamba and attention layers in turn,
// llama.cpp's hybrid memory): each sequence's state summarises every token so far and cannot be
// cut back to an earlier position, so everything the runner does with cached prompts (prefix
// reuse, a shorter prompt than what is cached, the prefix kept over an unload) has to fall back to
// evaluating again instead; and one runner serves one sequence (src/backends/llamacpp/one-slot.ts). Every answer is compared with plain
// node-llama-cpp on a fresh sequence, greedy.
import { getLlama, LlamaCompletion, LlamaLogLevel, type Llama, type LlamaContext, type LlamaModel, type Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel, type Architecture } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
let llama: Llama;

const OPTIONS = { temperature: 0, num_predict: 12, repeat_penalty: 1 };

beforeAll(async () => {
  // flash attention off on both sides: Jamba's attention layers would otherwise differ in the
  // last bits between the engine's kernels (docs/architecture.md, output order)
  d = await startDaemon({ OLLAMA_NUM_PARALLEL: "2", OLLAMA_KEEP_ALIVE: "30s", OLLAMA_FLASH_ATTENTION: "0" });
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
}, 60_000);

afterAll(async () => {
  await d?.stop();
  await llama?.dispose();
});

describe.each(["mamba", "jamba"] as Architecture[])("a %s model", (arch) => {
  let model: LlamaModel;
  let engine: LlamaContext;

  beforeAll(async () => {
    const file = await makeTestModel({ arch });
    const r = await createModelFromFile(d.url, arch, file);
    expect(r.status, await r.text()).toBe(200);
    model = await llama.loadModel({ modelPath: file });
    // one thread: node-llama-cpp's default spins more threads than a busy 2-core machine has free
    // (3 s an answer here instead of 10 ms); the arithmetic is the same
    engine = await model.createContext({ contextSize: 512, threads: 1, flashAttention: false });
  }, 60_000);

  afterAll(async () => {
    // another daemon request's model gets the memory (OLLAMA_KEEP_ALIVE holds this one 30 s)
    await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: arch, keep_alive: 0 }) });
  });

  async function generate(prompt: string, extra: Record<string, unknown> = {}): Promise<{ response: string; prompt_eval_count: number }> {
    const r = await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: arch, prompt, raw: true, stream: false, options: OPTIONS, ...extra }) });
    const text = await r.text();
    expect(r.status, text).toBe(200);
    return JSON.parse(text);
  }

  async function direct(prompt: string | Token[]): Promise<string> {
    const sequence = engine.getSequence();
    try {
      return await new LlamaCompletion({ contextSequence: sequence }).generateCompletion(prompt, { maxTokens: OPTIONS.num_predict, temperature: 0, repeatPenalty: false });
    } finally {
      sequence.dispose();
    }
  }

  it("is a completion model of its family", async () => {
    const r = await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model: arch }) });
    const show = (await r.json()) as { capabilities: string[]; details: { family: string } };
    expect(show.capabilities).toEqual(["completion"]);
    expect(show.details.family).toBe(arch);
  });

  it("answers as the engine does on a fresh sequence, whatever the runner has cached", async () => {
    const asked: string[] = [];
    const check = async (prompt: string, extra: Record<string, unknown> = {}) => {
      const got = await generate(prompt, extra);
      expect(got.response, JSON.stringify(prompt)).toBe(await direct(prompt));
      asked.push(prompt);
      return got;
    };
    // each prompt extends the last answer (what a client's next turn is)
    let prompt = "Hello there";
    for (let turn = 0; turn < 4; turn++) prompt += (await check(prompt)).response + " and then";
    // shorter than what is cached: a state cannot be cut back, so all of it is evaluated again
    const again = await check("Hello there");
    expect(again.prompt_eval_count).toBeGreaterThan(1);
    await check("Hello th");
    // over an unload and a load
    await check(prompt, { keep_alive: 0 });
    await check(`${prompt} again`);
    // asked at once, with shared beginnings: one slot whatever OLLAMA_NUM_PARALLEL says (as in
    // Ollama for its recurrent families; on some CPUs llama.cpp's states mixed across sequences)
    const together = ["Hello there my", "Hello there your", prompt, "Hello"];
    const answers = await Promise.all(together.map((p) => generate(p)));
    for (const [i, p] of together.entries()) expect(answers[i]!.response, p).toBe(await direct(p));
    expect(new Set(asked).size).toBeGreaterThan(6);
    const metrics = await (await fetch(`${d.url}/metrics`)).text();
    expect(metrics).toContain(`ollamats_model_slots{model="${arch}:latest"} 1\n`);
  });

  it("holds a conversation (chat turns after turns)", async () => {
    const messages: { role: string; content: string }[] = [{ role: "user", content: "Hello there" }];
    for (let turn = 0; turn < 3; turn++) {
      const r = await fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: arch, messages, stream: false, options: OPTIONS }) });
      const body = (await r.json()) as { message: { role: string; content: string }; prompt_eval_count: number; eval_count: number };
      expect(r.status).toBe(200);
      expect(body.eval_count).toBeGreaterThan(0);
      // the whole ChatML conversation so far is what the model was given
      const rendered = messages.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join("") + "<|im_start|>assistant\n";
      // (LlamaCompletion puts the BOS in front of a token list itself)
      expect(body.message.content).toBe(await direct(model.tokenize(rendered, true)));
      messages.push(body.message, { role: "user", content: `more ${turn}` });
    }
  });
});
