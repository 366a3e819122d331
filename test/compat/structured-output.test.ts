// Structured output through the real clients, with the zod schemas they are given (zod 4 writes
// minimum/maximum for every z.int(), a pattern for email/uuid/dates, propertyNames for records):
// each answer parses and validates with the same zod schema. Also the curl reproduction.
import { ChatOllama } from "@langchain/ollama";
import { HumanMessage } from "@langchain/core/messages";
import { generateObject } from "ai";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { createOllama } from "ollama-ai-provider-v2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { TestDaemon } from "../helpers/daemon.js";
import { MODELS, startCompatDaemon } from "./helpers.js";

let d: TestDaemon;

const Profile = z.object({
  age: z.int().min(0).max(120),
  email: z.email(),
  id: z.uuid(),
  site: z.url(),
  host: z.hostname(),
  joined: z.iso.date(),
  role: z.enum(["admin", "user"]),
  score: z.number().gt(0).lte(1),
  tags: z.array(z.string().max(5)).min(1).max(3),
  nick: z.string().max(6).nullable(),
});
const profileSchema = z.toJSONSchema(Profile) as Record<string, unknown>;
const options = { seed: 3, num_predict: 400, temperature: 0.9 };

beforeAll(async () => {
  d = await startCompatDaemon();
});

afterAll(async () => {
  await d?.stop();
});

describe("structured output with real clients and zod schemas", () => {
  it("the issue's reproduction: integer minimum/maximum answers 200 and holds", async () => {
    const r = await fetch(`${d.url}/api/chat`, {
      method: "POST",
      body: JSON.stringify({
        model: MODELS.chat,
        stream: false,
        messages: [{ role: "user", content: "x" }],
        format: { type: "object", properties: { legs: { type: "integer", minimum: 0, maximum: 10 } }, required: ["legs"] },
        options,
      }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { message: { content: string }; done_reason: string };
    expect(body.done_reason).toBe("stop");
    const legs = (JSON.parse(body.message.content) as { legs: number }).legs;
    expect(Number.isInteger(legs) && legs >= 0 && legs <= 10).toBe(true);
  });

  it("ollama-js: format from z.toJSONSchema, streamed and not, parses with the zod schema", async () => {
    const ollama = new Ollama({ host: d.url });
    const whole = await ollama.chat({ model: MODELS.chat, messages: [{ role: "user", content: "A profile" }], format: profileSchema, options, stream: false });
    expect(whole.done_reason).toBe("stop");
    expect(() => Profile.parse(JSON.parse(whole.message.content))).not.toThrow();
    const stream = await ollama.generate({ model: MODELS.chat, prompt: "A profile", format: profileSchema, options: { ...options, seed: 4 }, stream: true });
    let text = "";
    for await (const ch of stream) text += ch.response;
    expect(() => Profile.parse(JSON.parse(text))).not.toThrow();
  });

  it("openai: response_format json_schema (strict) parses with the zod schema", async () => {
    const client = new OpenAI({ baseURL: `${d.url}/v1`, apiKey: "ollama", maxRetries: 0 });
    const r = await client.chat.completions.create({
      model: MODELS.chat,
      messages: [{ role: "user", content: "A profile" }],
      response_format: { type: "json_schema", json_schema: { name: "profile", schema: profileSchema, strict: true } },
      seed: 5,
      max_tokens: 400,
    });
    expect(r.choices[0]!.finish_reason).toBe("stop");
    expect(() => Profile.parse(JSON.parse(r.choices[0]!.message.content ?? ""))).not.toThrow();
  });

  it("AI SDK generateObject with a zod schema (the provider sends it as format)", async () => {
    const ollama = createOllama({ baseURL: `${d.url}/api` });
    const r = await generateObject({ model: ollama(MODELS.chat), schema: Profile, prompt: "A profile", providerOptions: { ollama: { options: { ...options, seed: 6 } } }, maxRetries: 0 });
    expect(() => Profile.parse(r.object)).not.toThrow();
  });

  it("LangChain withStructuredOutput(zod schema)", async () => {
    const chat = new ChatOllama({ model: MODELS.chat, baseUrl: d.url, seed: 7, numPredict: 400 });
    const structured = chat.withStructuredOutput(Profile);
    const value = await structured.invoke([new HumanMessage("A profile")]);
    expect(() => Profile.parse(value)).not.toThrow();
  });
});
