// Models other generators make, not just ours (llama, SPM, ChatML, untied): a byte-level BPE
// ("gpt2") tokenizer with Llama 3's special tokens, the Llama 3, Gemma and Mistral chat templates
// as those families ship them, no chat template at all, a tied output matrix, the qwen2
// architecture. Each goes through the real daemon: create, show (the Go template and stop
// parameters Ollama maps the GGUF's chat template to), chat and generate (the family's prompt
// format, its turn tokens never in the output), tokenize, the OpenAI client, the CLI, embed.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHAT_FORMATS, makeTestModel, type MakeModelOptions } from "../../scripts/make-test-model.js";
import { CLI, createModelFromFile, postJson, REPO, startDaemon, type TestDaemon } from "../helpers/daemon.js";

interface Case {
  name: string;
  opts: MakeModelOptions;
  /** The Ollama template (test/fixtures/templates/ollama-repo/<name>.gotmpl) it maps to; none:
   *  the GGUF's own (Jinja) template, or `{{ .Prompt }}` without one. */
  ollamaTemplate?: string;
  /** Capabilities besides completion. */
  capabilities?: string[];
  stop: string[];
  family: string;
  /** The prompt one user message "Hello there" renders to. */
  prompt: string;
  /** The text of the control tokens this family's turns are made of (never in an answer). */
  turnTokens: string[];
}

/** strftime("%d %b %Y") of today, as Llama 3.2's template writes it. */
function today(): string {
  const d = new Date();
  return `${String(d.getDate()).padStart(2, "0")} ${d.toLocaleString("en-US", { month: "short" })} ${d.getFullYear()}`;
}

/** Llama 3's format over a byte-level BPE tokenizer (what Llama-3.x GGUFs are). */
const LLAMA3: Omit<Case, "name" | "opts"> = {
  ollamaTemplate: "llama3-instruct",
  stop: ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
  family: "llama",
  prompt: "<|start_header_id|>user<|end_header_id|>\n\nHello there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  turnTokens: ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
};

const CASES: Case[] = [
  { name: "llama3-bpe", opts: { tokenizer: "gpt2", template: "llama3" }, ...LLAMA3 },
  { name: "llama3-bpe-tied", opts: { tokenizer: "gpt2", template: "llama3", tied: true }, ...LLAMA3 },
  {
    // Llama 3.2's own template is no template Ollama knows: it runs as Jinja (BOS text first, today's date)
    name: "llama3.2-bpe-tied", opts: { tokenizer: "gpt2", template: "llama3.2", tied: true }, ...LLAMA3, ollamaTemplate: undefined, stop: [], capabilities: ["tools"],
    prompt: `<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: ${today()}\n\n<|eot_id|>` + LLAMA3.prompt,
  },
  {
    name: "gemma", opts: { template: "gemma" }, family: "llama", ollamaTemplate: "gemma-instruct", stop: ["<start_of_turn>", "<end_of_turn>"],
    prompt: "<start_of_turn>user\nHello there<end_of_turn>\n<start_of_turn>model\n", turnTokens: ["<s>", "</s>", "<start_of_turn>", "<end_of_turn>"],
  },
  {
    // Ollama's mistral-instruct.json lists ChatML's stop words
    name: "mistral-tied", opts: { template: "mistral", tied: true }, family: "llama", ollamaTemplate: "mistral-instruct", stop: ["<|im_start|>", "<|im_end|>"],
    prompt: "[INST] Hello there[/INST]", turnTokens: ["<s>", "</s>"],
  },
  {
    name: "qwen2-bpe-chatml", opts: { arch: "qwen2", tokenizer: "gpt2", template: "chatml" }, family: "qwen2", ollamaTemplate: "chatml", stop: ["<|im_start|>", "<|im_end|>"],
    prompt: "<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n", turnTokens: ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"],
  },
  // Ollama's default template: the prompt as it is
  { name: "no-template", opts: { template: "none" }, family: "llama", stop: [], prompt: "Hello there", turnTokens: ["<s>", "</s>"] },
];

let d: TestDaemon;
const creates = new Map<string, { status: number; body: string }>();

beforeAll(async () => {
  d = await startDaemon({ OLLAMA_DEBUG: "1", OLLAMA_KEEP_ALIVE: "30s" });
  for (const c of CASES) {
    const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1, ...c.opts });
    const r = await createModelFromFile(d.url, c.name, file, { stream: true });
    creates.set(c.name, { status: r.status, body: await r.text() });
  }
}, 180_000);

afterAll(async () => {
  await d?.stop();
});

const post = (route: string, body: unknown) => postJson(d.url, route, body);

/** Go's %q of an ASCII string (how the debug log quotes a prompt). */
const goQuote = (s: string) => JSON.stringify(s);

function expectNoTurnTokens(c: Case, text: string): void {
  for (const t of [...c.turnTokens, ...c.stop]) expect(text, `${c.name}: ${JSON.stringify(text)}`).not.toContain(t);
}

const OPTS = { seed: 5, num_predict: 12, temperature: 0.7 };

/** The chat every comparison below is made against, asked once before so that it, and the
 *  request compared with it, both find the prompt in the cache (README, "Same seed, same text"): llama.cpp's sums differ in the
 *  last bits between a prompt evaluated in one batch and its last token evaluated alone (what a
 *  fully cached prompt gets, in Ollama too), and sampling a random model can turn on those bits
 *  a few tokens later. Both from the cache, the same prompt and seed give the same text. */
async function cachedChat(c: Case): Promise<{ status: number; json: any; text: string }> {
  await post("/api/chat", { model: c.name, messages: [{ role: "user", content: "Hello there" }], stream: false, options: OPTS });
  return post("/api/chat", { model: c.name, messages: [{ role: "user", content: "Hello there" }], stream: false, options: OPTS });
}

describe.each(CASES)("$name", (c) => {
  it("creates from the GGUF, with the template Ollama detects", async () => {
    const r = creates.get(c.name)!;
    expect(r.status, r.body).toBe(200);
    const lines = r.body.trim().split("\n").map((l) => JSON.parse(l) as { status: string });
    expect(lines.at(-1)).toEqual({ status: "success" });
    const statuses = lines.map((l) => l.status);
    if (c.ollamaTemplate) expect(statuses).toContain(`using autodetected template ${c.ollamaTemplate}`);
    else expect(statuses.join("\n")).not.toContain("autodetected");
  });

  it("shows Ollama's template, stop parameters, capabilities and details", async () => {
    const { status, json } = await post("/api/show", { model: c.name });
    expect(status).toBe(200);
    const template = c.ollamaTemplate
      ? await readFile(path.join(REPO, "test/fixtures/templates/ollama-repo", `${c.ollamaTemplate}.gotmpl`), "utf8")
      : (CHAT_FORMATS[c.opts.template ?? "chatml"].template ?? "{{ .Prompt }}");
    expect(json.template).toBe(template);
    if (c.stop.length) {
      expect(json.parameters).toBe(c.stop.map((s) => `${"stop".padEnd(30)} ${goQuote(s)}`).join("\n"));
    } else {
      expect(json.parameters).toBeUndefined();
    }
    expect(json.capabilities).toEqual(["completion", ...(c.capabilities ?? [])]);
    expect(json.details.family).toBe(c.family);
    expect(json.details.format).toBe("gguf");
    expect(json.model_info["general.architecture"]).toBe(c.family);
    // the Modelfile re-creates it: its TEMPLATE and its stop parameters
    if (c.ollamaTemplate) expect(json.modelfile).toContain(template.includes('"') ? `TEMPLATE """${template}"""` : `TEMPLATE "${template}"`);
    for (const s of c.stop) expect(json.modelfile).toContain(`PARAMETER stop ${s}`);
  });

  it("chats in the family's prompt format (non-streamed)", async () => {
    const { status, json, text } = await cachedChat(c);
    expect(status, text).toBe(200);
    expect(json.message.role).toBe("assistant");
    expect(json.message.content.length).toBeGreaterThan(0);
    expectNoTurnTokens(c, json.message.content);
    expect(["stop", "length"]).toContain(json.done_reason);
    expect(json.eval_count).toBeGreaterThan(0);
    expect(json.eval_count).toBeLessThanOrEqual(OPTS.num_predict);
    expect(json.prompt_eval_count).toBeGreaterThan(0);
    // the prompt sent is the family's format: the debug log shows it, and the same text sent raw
    // is the same number of tokens
    expect(d.logs()).toContain(`prompt=${goQuote(c.prompt)}`);
    const raw = await post("/api/generate", { model: c.name, prompt: c.prompt, raw: true, stream: false, options: OPTS });
    expect(raw.status, raw.text).toBe(200);
    expect(raw.json.prompt_eval_count).toBe(json.prompt_eval_count);
    expect(raw.json.response).toBe(json.message.content);
  });

  it("chats streamed, the same answer in chunks", async () => {
    const whole = await cachedChat(c);
    const r = await fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: c.name, messages: [{ role: "user", content: "Hello there" }], options: OPTS }) });
    expect(r.status).toBe(200);
    const chunks = (await r.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(chunks.length).toBeGreaterThan(2);
    const last = chunks.at(-1);
    expect(last.done).toBe(true);
    expect(last.done_reason).toBe(whole.json.done_reason);
    expect(last.eval_count).toBe(whole.json.eval_count);
    expect(chunks.map((ch) => ch.message.content).join("")).toBe(whole.json.message.content);
  });

  it("generates with the template, and raw", async () => {
    const templated = await post("/api/generate", { model: c.name, prompt: "Hello there", stream: false, options: OPTS });
    expect(templated.status, templated.text).toBe(200);
    expect(templated.json.response.length).toBeGreaterThan(0);
    expectNoTurnTokens(c, templated.json.response);
    const raw = await post("/api/generate", { model: c.name, prompt: c.prompt, raw: true, stream: false, options: OPTS });
    expect(raw.json.prompt_eval_count).toBe(templated.json.prompt_eval_count);
    const bare = await post("/api/generate", { model: c.name, prompt: "Hello there", raw: true, stream: false, options: OPTS });
    expect(bare.status).toBe(200);
    if (c.prompt !== "Hello there") expect(bare.json.prompt_eval_count).toBeLessThan(templated.json.prompt_eval_count);
    else expect(bare.json.prompt_eval_count).toBe(templated.json.prompt_eval_count);
  });

  it("tokenizes and detokenizes round trip, special tokens included", async () => {
    const content = `${c.prompt}The quick brown fox, 42 times!\n`;
    const t = await post("/api/tokenize", { model: c.name, content });
    expect(t.status, t.text).toBe(200);
    const tokens = t.json.tokens as number[];
    expect(tokens.length).toBeGreaterThan(5);
    expect(tokens.length).toBeLessThan(content.length);
    const back = await post("/api/detokenize", { model: c.name, tokens });
    expect(back.status, back.text).toBe(200);
    expect(back.json.content).toBe(content);
  });

  it("answers the OpenAI client", async () => {
    const client = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "ollama", maxRetries: 0 });
    const r = await client.chat.completions.create({ model: c.name, messages: [{ role: "user", content: "Hello there" }], max_tokens: 12, seed: 5, temperature: 0.7 });
    const text = r.choices[0]!.message.content ?? "";
    expect(text.length).toBeGreaterThan(0);
    expectNoTurnTokens(c, text);
    expect(["stop", "length"]).toContain(r.choices[0]!.finish_reason);
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    const stream = await client.chat.completions.create({ model: c.name, messages: [{ role: "user", content: "Hello there" }], max_tokens: 12, seed: 5, temperature: 0.7, stream: true });
    let streamed = "";
    let finish: string | null | undefined;
    for await (const ch of stream) {
      streamed += ch.choices[0]?.delta?.content ?? "";
      finish = ch.choices[0]?.finish_reason ?? finish;
    }
    // (not always the same text: this prompt is now cached, and a different evaluation batch can
    // tip a near tie of the random weights)
    expect(streamed.length).toBeGreaterThan(0);
    expectNoTurnTokens(c, streamed);
    expect(["stop", "length"]).toContain(finish);
  });

  it("runs from the CLI (a model made from it keeps its template and stop parameters)", async () => {
    // `run` has no options: a model of its own bounds the answer
    const derived = await post("/api/create", { model: `${c.name}-cli`, from: c.name, parameters: { num_predict: 12, seed: 5 }, stream: false });
    expect(derived.status, derived.text).toBe(200);
    const [base, made] = await Promise.all([post("/api/show", { model: c.name }), post("/api/show", { model: `${c.name}-cli` })]);
    expect(made.json.template).toBe(base.json.template);
    for (const s of c.stop) expect(made.json.parameters).toContain(goQuote(s));
    expect(made.json.parameters).toMatch(/^num_predict\s+12$/m);
    const r = await new Promise<{ stdout: string; stderr: string; code: number }>((resolve) => {
      const child = execFile(process.execPath, [CLI, "run", `${c.name}-cli`, "hi"], { env: d.env, timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
      });
      child.stdin?.end();
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().length).toBeGreaterThan(0);
    expectNoTurnTokens(c, r.stdout);
  });
});

describe("create's own template and parameters beside the detected ones (as Ollama merges them)", () => {
  it("a request's template replaces the detected one, its stop replaces the detected stop, other detected parameters stay", async () => {
    const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1, tokenizer: "gpt2", template: "llama3" });
    const own = await createModelFromFile(d.url, "own-template", file, { template: "{{ .Prompt }}!", parameters: { temperature: 0.5 }, stream: true });
    const lines = (await own.text()).trim().split("\n").map((l) => (JSON.parse(l) as { status: string }).status);
    expect(lines.join("\n")).not.toContain("autodetected");
    const show = await post("/api/show", { model: "own-template" });
    expect(show.json.template).toBe("{{ .Prompt }}!");
    expect(show.json.parameters).toContain('"<|eot_id|>"');
    expect(show.json.parameters).toMatch(/^temperature\s+0\.5$/m);
    const ownStop = await createModelFromFile(d.url, "own-stop", file, { parameters: { stop: ["END"] } });
    expect(ownStop.status).toBe(200);
    const shown = await post("/api/show", { model: "own-stop" });
    expect(shown.json.template).toContain("<|start_header_id|>");
    expect(shown.json.parameters).toBe(`${"stop".padEnd(30)} "END"`);
  });
});

describe("an embedding model with a byte-level BPE tokenizer", () => {
  it("embeds", async () => {
    const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1, tokenizer: "gpt2", template: "llama3", embedding: true });
    const created = await createModelFromFile(d.url, "bpe-embed", file);
    expect(created.status, await created.text()).toBe(200);
    const { status, json, text } = await post("/api/embed", { model: "bpe-embed", input: ["Hello there", "The quick brown fox"] });
    expect(status, text).toBe(200);
    expect(json.embeddings).toHaveLength(2);
    expect(json.embeddings[0]).toHaveLength(64);
    const norm = Math.hypot(...(json.embeddings[0] as number[]));
    expect(norm).toBeCloseTo(1, 4);
    expect(json.embeddings[0]).not.toEqual(json.embeddings[1]);
    expect(json.prompt_eval_count).toBeGreaterThan(4);
    const show = await post("/api/show", { model: "bpe-embed" });
    expect(show.json.capabilities).toEqual(["embedding"]);
  });
});

describe("a model whose answers reach its turn tokens", () => {
  // --ends-turns: the Llama 3 turn tokens are likely outputs, as in a real chat model
  const c = { name: "turns", opts: {}, ...LLAMA3 };
  it("ends the answer at <|eot_id|> (end of generation) and at a new turn's header (a stop parameter), never showing either", async () => {
    const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1, tokenizer: "gpt2", template: "llama3", endsTurns: true });
    const created = await createModelFromFile(d.url, "turns", file);
    expect(created.status, await created.text()).toBe(200);
    const chat = async (seed: number, stop?: string[]) => {
      const r = await post("/api/chat", { model: "turns", messages: [{ role: "user", content: "Hello there" }], stream: false, options: { seed, num_predict: 48, ...(stop ? { stop } : {}) } });
      expect(r.status, r.text).toBe(200);
      return r.json as { message: { content: string }; done_reason: string; eval_count: number };
    };
    let byParameter = 0;
    let byEndOfGeneration = 0;
    for (let seed = 1; seed <= 6; seed++) {
      const dflt = await chat(seed);
      // the request's own stop list replaces the model's: only end-of-generation tokens end it
      const other = await chat(seed, ["zzz"]);
      expectNoTurnTokens(c, dflt.message.content);
      expectNoTurnTokens(c, other.message.content);
      expect(other.message.content.startsWith(dflt.message.content)).toBe(true);
      if (dflt.done_reason === "stop" && dflt.eval_count < other.eval_count) byParameter++;
      if (other.done_reason === "stop" && other.eval_count < 48) byEndOfGeneration++;
    }
    expect(byParameter).toBeGreaterThan(0);
    expect(byEndOfGeneration).toBeGreaterThan(0);
  });
});
