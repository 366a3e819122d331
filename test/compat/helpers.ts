// Shared setup of the compatibility suite: the real built daemon with generated models, driven by
// the real client libraries (each test file is one client).
//
// The models are random-weight tiny llamas, so what they say is noise; what the suite checks is
// the protocol and the parts the daemon controls. Where a test needs a specific shape of output it
// forces it: a JSON schema with `const`/`enum` values makes the grammar-constrained output short
// and deterministic, and the same schema shaped like a Llama 3.2 tool call, on a model with the
// Llama 3.2 TEMPLATE, makes the daemon's tool-call parser see a real call.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { expect } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, REPO, startDaemon, type TestDaemon } from "../helpers/daemon.js";

/** Generated models: name → how it is made. */
export const MODELS = {
  /** ChatML Jinja template from the GGUF; a SYSTEM prompt. */
  chat: "tiny",
  /** Llama 3.2's TEMPLATE (tools; JSON tool calls, tag "{"). */
  tools: "tools",
  /** A template whose prompt ends with <think> when thinking: all output is thinking. */
  thinker: "thinker",
  /** Mean-pooled embedding model, 64 dimensions. */
  embed: "embed",
  /** The chat model with PARAMETER num_predict 12, for clients that cannot send options. */
  short: "short",
} as const;

export const EMBED_DIM = 64;
export const SYSTEM = "You are a tiny test model.";

/** Only tags can be inferred from it: `{{ if .Thinking }}<think>…</think>{{ end }}`. */
const THINKING_TEMPLATE =
  "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n{{ if .Think }}<think>{{ end }}";

export const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Get the current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string", description: "The city" } }, required: ["city"] },
  },
};

export const CITIES = ["Paris", "Rome"];

/** Output format that makes the model emit a Llama 3.2 tool call for get_weather. */
export const CALL_FORMAT = {
  type: "object",
  properties: {
    name: { const: "get_weather" },
    parameters: { type: "object", properties: { city: { enum: CITIES } }, required: ["city"] },
  },
  required: ["name", "parameters"],
};

/** Tools whose arguments are finite (an enum), so a call that tool_choice forces ends: the
 *  random test model writes strings that go on until num_predict. */
export const FINITE_TOOLS = [
  { type: "function" as const, function: { name: "get_weather", description: "Get the current weather in a city", parameters: { type: "object", properties: { city: { enum: CITIES } }, required: ["city"] } } },
  { type: "function" as const, function: { name: "get_time", description: "Get the time in a zone", parameters: { type: "object", properties: { zone: { enum: ["UTC", "CET"] } }, required: ["zone"] } } },
];

/** A structured answer with finite values: the grammar keeps the output short and parseable. */
export const ANSWER_SCHEMA = {
  type: "object",
  properties: { answer: { enum: ["yes", "no"] }, sure: { type: "boolean" } },
  required: ["answer", "sure"],
};

export function expectAnswer(value: unknown): void {
  expect(value).toEqual({ answer: expect.stringMatching(/^(yes|no)$/), sure: expect.any(Boolean) });
}

/**
 * The daemon the clients talk to. With OLLAMATS_COMPAT_REMOTE=1 (test/compat-remote) every model
 * is a remote model of a second daemon that holds the real ones, so the same tests check that a
 * remote model behaves, to each client, exactly as a local one.
 */
export async function startCompatDaemon(): Promise<TestDaemon> {
  const local = await startLocalCompatDaemon();
  if (process.env.OLLAMATS_COMPAT_REMOTE !== "1") return local;
  let front: TestDaemon | undefined;
  try {
    front = await startDaemon({ OLLAMA_REMOTES: "127.0.0.1" });
    for (const name of Object.values(MODELS)) {
      const r = await fetch(`${front.url}/api/create`, { method: "POST", body: JSON.stringify({ model: name, from: name, remote_host: local.url, stream: false }) });
      expect(r.status, await r.clone().text()).toBe(200);
    }
  } catch (err) {
    await front?.stop();
    await local.stop();
    throw err;
  }
  const f = front;
  return { ...f, stop: async () => (await f.stop(), await local.stop()) };
}

async function startLocalCompatDaemon(): Promise<TestDaemon> {
  const d = await startDaemon();
  try {
    const tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
    const embed = await makeTestModel({ embedding: true, type: "F32" });
    const llama32 = await readFile(path.join(REPO, "test/fixtures/templates/llama3.2.gotmpl"), "utf8");
    // One thread: llama.cpp's worker threads spin while they wait for each other, and on a busy
    // 2-core machine two of them make a 2-layer model a hundred times slower than one.
    const parameters = { num_thread: 1 };
    const made = [
      await createModelFromFile(d.url, MODELS.chat, tiny, { system: SYSTEM, parameters }),
      await createModelFromFile(d.url, MODELS.tools, tiny, { template: llama32, parameters }),
      await createModelFromFile(d.url, MODELS.thinker, tiny, { template: THINKING_TEMPLATE, parameters }),
      await createModelFromFile(d.url, MODELS.embed, embed, { parameters }),
      await createModelFromFile(d.url, MODELS.short, tiny, { parameters: { ...parameters, num_predict: 12, seed: 13 } }),
    ];
    for (const r of made) expect(r.status, await r.clone().text()).toBe(200);
  } catch (err) {
    await d.stop();
    throw err;
  }
  return d;
}

export function norm(v: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  return Math.sqrt(s);
}

/** Text long enough to overflow a 64-token context many times over. */
export const LONG_TEXT = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");
