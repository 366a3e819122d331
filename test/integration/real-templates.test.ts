// Every real chat template in test/fixtures/chat-templates, in a model of its own, through the
// daemon's whole request path up to the prompt (create, capabilities, think defaults, tool
// validation, the render in its worker thread): the conversations clients send render, with no
// 400 from the template. A model's template refusing the think level a thinking model defaults
// to made every chat with Hunyuan's a 400; unit tests render templates with contexts they build
// themselves, which that slipped past.
import { readdirSync, readFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kv, writeGgufCached } from "../../scripts/gguf-writer.js";
import { buildModel, DEFAULT_MODEL_DIR } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

const DIR = path.resolve(__dirname, "../fixtures/chat-templates");
const FILES = readdirSync(DIR).filter((f) => f.endsWith(".jinja")).sort();
const nameOf = (f: string) => f.replace(/\.jinja$/, "").toLowerCase().replace(/[^a-z0-9._-]/g, "-").slice(0, 60);

let d: TestDaemon;

beforeAll(async () => {
  d = await startDaemon();
  const { kvs, tensors } = buildModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  const dir = path.join(DEFAULT_MODEL_DIR, "templates");
  await mkdir(dir, { recursive: true });
  for (const f of FILES) {
    const withTemplate = kvs.filter((e) => e.key !== "tokenizer.chat_template").concat([kv.str("tokenizer.chat_template", readFileSync(path.join(DIR, f), "utf8"))]);
    const file = await writeGgufCached(path.join(dir, f.replace(/\.jinja$/, ".gguf")), withTemplate, tensors);
    const r = await createModelFromFile(d.url, nameOf(f), file);
    expect(r.status, `${f}: ${await r.text()}`).toBe(200);
  }
}, 120_000);

afterAll(async () => {
  await d?.stop();
});

const tools = [{ type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const weather = (city: string) => ({ function: { name: "get_weather", arguments: { city } } });
const CONVERSATIONS: Record<string, { messages: unknown[]; tools?: unknown[]; think?: unknown }> = {
  plain: { messages: [{ role: "user", content: "hi" }] },
  systems: { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }, { role: "assistant", content: "Hello." }, { role: "system", content: "Answer in French." }, { role: "user", content: "ça va?" }] },
  greeting: { messages: [{ role: "assistant", content: "Hi! How can I help?" }, { role: "user", content: "hi" }] },
  "think high": { messages: [{ role: "user", content: "hi" }], think: "high" },
  "system prompt alone": { messages: [{ role: "system", content: "Write a haiku about the sea." }] },
  tools: { messages: [{ role: "user", content: "Weather in Paris?" }], tools },
  // an answer as the daemon gives it (text, thinking, two calls), sent back with the results
  "tool results": {
    messages: [
      { role: "user", content: "Weather in Paris and Lyon?" },
      { role: "assistant", content: "Checking both.", thinking: "Two cities.", tool_calls: [weather("Paris"), weather("Lyon")] },
      { role: "tool", content: "18C", tool_name: "get_weather" },
      { role: "tool", content: "21C", tool_name: "get_weather" },
      { role: "user", content: "And tomorrow?" },
    ],
    tools,
  },
};

describe("real chat templates through the daemon", () => {
  it("render the conversations clients send, the think level a model defaults to included", async () => {
    const refused: string[] = [];
    for (const f of FILES) {
      const model = nameOf(f);
      const show = (await (await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model }) })).json()) as { capabilities: string[]; template?: string };
      // a template Ollama maps to one of its own renders as Ollama's does (Gemma 2's shows a system prompt only with a question)
      const goTemplate = /\{\{-? ?(range|if|\.)/.test(show.template ?? "") && !/\{%/.test(show.template ?? "");
      for (const [name, c] of Object.entries(CONVERSATIONS)) {
        if (c.tools && !show.capabilities.includes("tools")) continue;
        if (c.think && !show.capabilities.includes("thinking")) continue;
        const r = await fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model, stream: false, _debug_render_only: true, ...c }) });
        const body = (await r.json()) as { error?: string; _debug_info?: { rendered_template: string } };
        if (r.status !== 200) refused.push(`${f} / ${name}: ${r.status} ${body.error}`);
        else if (!body._debug_info!.rendered_template.includes((c.messages.at(-1) as { content: string }).content) && !(goTemplate && name === "system prompt alone")) {
          refused.push(`${f} / ${name}: the last message is not in the prompt`);
        }
      }
    }
    expect(refused).toEqual([]);
  });
});
