// The completion event stream (daemon/completion.ts) over a scripted fake runner: thinking and
// tool-call parsing, the format restart after thinking, errors before the first token, and the
// heartbeat of a slow start.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GenerateJob, Logprob, PromptJob, Runner, RunnerEvent } from "../../src/backends/backend.js";
import { EngineError, PROMPT_TOO_LONG } from "../../src/backends/errors.js";
import { startCompletion, type CompletionEvent, type CompletionRequest } from "../../src/daemon/services/completion.js";
import { resolveOptions } from "../../src/daemon/options.js";
import { selectTemplate, type RenderInput } from "../../src/daemon/prompt/render.js";
import type { Scheduler } from "../../src/daemon/scheduler/scheduler.js";
import { createLogger } from "../../src/daemon/log.js";
import type { ModelSpec } from "../../src/registry/model-spec.js";

const FIXTURES = path.resolve(__dirname, "../fixtures/templates");
const qwen3 = selectTemplate(readFileSync(path.join(FIXTURES, "qwen3.gotmpl"), "utf8"), undefined, "", "");
const qwen25 = selectTemplate(readFileSync(path.join(FIXTURES, "qwen2.5.gotmpl"), "utf8"), undefined, "", "");

const DONE: RunnerEvent = { type: "done", doneReason: "stop", promptEvalCount: 5, promptEvalDurationNs: 10, evalCount: 3, evalDurationNs: 20 };

/** A runner whose output is chosen per job; records every job it ran. */
function fakeRunner(script: (job: GenerateJob) => Array<string | { text: string; logprobs: Logprob[] }> | Error, opts: { delayMs?: number } = {}) {
  const jobs: GenerateJob[] = [];
  const runner = {
    slots: 1,
    info: { contextLength: 4096, gpuLayers: 0, sizeBytes: 0, vramBytes: 0, threads: 1 },
    async *generate(job: GenerateJob): AsyncIterable<RunnerEvent> {
      jobs.push(job);
      const out = script(job);
      if (out instanceof Error) throw out;
      for (const t of out) yield typeof t === "string" ? { type: "text", text: t } : { type: "text", ...t };
      yield DONE;
    },
    tokenize: async (t: string) => [...t].map((_, i) => i),
    detokenize: async () => "",
    embed: async () => ({ embeddings: [], promptEvalCount: 0 }),
    close: async () => undefined,
    exited: new Promise(() => undefined),
  } as unknown as Runner;
  let released = 0;
  const scheduler = {
    log: createLogger(0, () => undefined),
    acquire: async () => {
      if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
      return { runner, spec: {} as ModelSpec, release: () => released++ };
    },
  } as unknown as Scheduler;
  return { jobs, scheduler, released: () => released };
}

const input = (extra: Partial<RenderInput> = {}): RenderInput => ({ messages: [{ role: "user", content: "hi" }], ...extra });

function request(template: typeof qwen3, extra: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    spec: {} as ModelSpec,
    options: resolveOptions({ numCtx: 4096 }, undefined, undefined),
    keepAliveMs: undefined,
    signal: new AbortController().signal,
    startedAt: process.hrtime.bigint(),
    prompt: { template, input: input() },
    wantContext: false,
    ...extra,
  };
}

async function all(events: AsyncIterable<CompletionEvent>): Promise<CompletionEvent[]> {
  const out: CompletionEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

const textOf = (evs: CompletionEvent[], type: "content" | "thinking") =>
  evs
    .filter((e): e is Extract<CompletionEvent, { type: "content" | "thinking" }> => e.type === type)
    .map((e) => e.text)
    .join("");

afterEach(() => {
  delete process.env.OLLAMATS_HEARTBEAT_MS;
  delete process.env.OLLAMATS_HEARTBEAT_INTERVAL_MS;
});

describe("completion event stream", () => {
  it("separates thinking (qwen3 tags) from content; done carries the stats; the runner is released", async () => {
    const f = fakeRunner(() => ["<thi", "nk>\nPonder", "ing.</th", "ink>\n\nHello", "!"]);
    const c = await startCompletion(f.scheduler, request(qwen3, { think: true }));
    const evs = await all(c.events);
    expect(textOf(evs, "thinking")).toBe("Pondering.");
    expect(textOf(evs, "content")).toBe("Hello!");
    const done = evs.at(-1);
    expect(done).toMatchObject({ type: "done", doneReason: "stop", promptEvalCount: 5, evalCount: 3, evalDurationNs: 20 });
    expect(done?.type === "done" && done.totalDurationNs).toBeGreaterThanOrEqual(done?.type === "done" ? done.loadDurationNs : 0);
    expect(f.released()).toBe(1);
  });

  it("drops the tokens the model wraps its answer in, after the thinking", async () => {
    const f = fakeRunner(() => ["<think>hm</think><|START_RES", "PONSE|>Hel", "lo<|END_RESPONSE|>"]);
    const evs = await all((await startCompletion(f.scheduler, request(qwen3, { think: true, wrapper: ["<|START_RESPONSE|>", "<|END_RESPONSE|>"] }))).events);
    expect(textOf(evs, "thinking")).toBe("hm");
    expect(textOf(evs, "content")).toBe("Hello");
  });

  it("think off: the tags stay in the content", async () => {
    const f = fakeRunner(() => ["<think>x</think>y"]);
    const evs = await all((await startCompletion(f.scheduler, request(qwen3, { think: false }))).events);
    expect(textOf(evs, "content")).toBe("<think>x</think>y");
    expect(evs.some((e) => e.type === "thinking")).toBe(false);
  });

  it("parses tool calls after the thinking, in the chunk where they complete", async () => {
    const tools = [{ type: "function", function: { name: "get_weather" } }];
    const f = fakeRunner(() => ["<think>need weather</think>", "<tool_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"]);
    const evs = await all((await startCompletion(f.scheduler, request(qwen3, { think: true, tools, prompt: { template: qwen3, input: input({ tools }) } }))).events);
    expect(evs.map((e) => e.type)).toEqual(["thinking", "tool_calls", "done"]);
    const calls = evs.find((e) => e.type === "tool_calls");
    expect(calls?.type === "tool_calls" && calls.calls).toEqual([{ id: expect.stringMatching(/^call_[a-z0-9]{8}$/), function: { index: 0, name: "get_weather", arguments: { city: "Oslo" } } }]);
  });

  it("without tools in the request, tool-call text is content", async () => {
    const f = fakeRunner(() => ['<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>']);
    const evs = await all((await startCompletion(f.scheduler, request(qwen25))).events);
    expect(evs.map((e) => e.type)).toEqual(["content", "done"]);
  });

  it("format on a thinking model: generation restarts with the grammar once thinking ends, from prompt + thinking", async () => {
    const f = fakeRunner((job) => ("format" in job && job.format ? ['{"a": true}'] : ["<think>plan</think>", "Sure! Here"]));
    const format = { backend: "fake", value: { kind: "schema" as const, schema: { type: "object", properties: { a: { type: "boolean" } } } } };
    const evs = await all((await startCompletion(f.scheduler, request(qwen3, { think: true, format, formatAfterThinking: true }))).events);
    expect(textOf(evs, "thinking")).toBe("plan");
    expect(textOf(evs, "content")).toBe('{"a": true}');
    expect(f.jobs).toHaveLength(2);
    const prompts = f.jobs as PromptJob[];
    expect(prompts[0]?.format).toBeUndefined();
    expect(prompts[1]?.format).toEqual(format);
    expect(prompts[1]?.prompt).toBe(prompts[0]!.prompt + "<think>plan</think>");
  });

  it("format without thinking applies at once", async () => {
    const f = fakeRunner(() => ["{}"]);
    await all((await startCompletion(f.scheduler, request(qwen3, { think: false, format: { backend: "fake", value: { kind: "json" } }, formatAfterThinking: true }))).events);
    expect(f.jobs.map((j) => j.format)).toEqual([{ backend: "fake", value: { kind: "json" } }]);
  });

  it("logprobs go with the events their text became; a parser holding text back sends them on an empty content event", async () => {
    const lp = (token: string): Logprob[] => [{ token, logprob: -1, bytes: [...Buffer.from(token)] }];
    const tools = [{ type: "function", function: { name: "get_weather" } }];
    const parts = ["<think>hm</think>", '<tool_call>\n{"name": "get_weather", ', '"arguments": {}}\n</tool_call>'];
    const f = fakeRunner(() => parts.map((text) => ({ text, logprobs: lp(text) })));
    const req = request(qwen3, { think: true, tools, prompt: { template: qwen3, input: input({ tools }) }, logprobs: 2 });
    const evs = await all((await startCompletion(f.scheduler, req)).events);
    expect(f.jobs[0]?.logprobs).toBe(2);
    expect(evs.map((e) => [e.type, "logprobs" in e ? (e.logprobs as Logprob[])[0]!.token : undefined])).toEqual([
      ["thinking", parts[0]],
      ["content", parts[1]],
      ["content", parts[2]],
      ["tool_calls", undefined],
      ["done", undefined],
    ]);
    expect(evs.filter((e) => e.type === "content").map((e) => (e as { text: string }).text)).toEqual(["", ""]);
  });

  it("truncate/shift/num_keep reach the runner job", async () => {
    const f = fakeRunner(() => ["x"]);
    await all((await startCompletion(f.scheduler, request(qwen3, { truncate: false, shift: false }))).events);
    expect(f.jobs[0]).toMatchObject({ truncate: false, shift: false, numKeep: 4 });
  });

  it("a prompt that does not fit (runner error before the first token) is a 400 thrown at start", async () => {
    const f = fakeRunner(() => new EngineError("prompt_too_long", PROMPT_TOO_LONG));
    await expect(startCompletion(f.scheduler, request(qwen3, { shift: false }))).rejects.toMatchObject({ status: 400, message: PROMPT_TOO_LONG });
    expect(f.released()).toBe(1);
  });

  it("a slow start commits early and sends empty content heartbeats until the first token", async () => {
    process.env.OLLAMATS_HEARTBEAT_MS = "0";
    process.env.OLLAMATS_HEARTBEAT_INTERVAL_MS = "5";
    const f = fakeRunner(() => ["Hi"], { delayMs: 60 });
    const c = await startCompletion(f.scheduler, request(qwen25, { heartbeat: true }));
    const evs = await all(c.events);
    expect(evs[0]).toEqual({ type: "content", text: "" });
    expect(textOf(evs, "content")).toBe("Hi");
    expect(evs.at(-1)?.type).toBe("done");
  });

  it("an error after committing to the stream comes out of the events", async () => {
    process.env.OLLAMATS_HEARTBEAT_MS = "0";
    const f = fakeRunner(() => new EngineError("prompt_too_long", PROMPT_TOO_LONG), { delayMs: 20 });
    const c = await startCompletion(f.scheduler, request(qwen25, { heartbeat: true }));
    await expect(all(c.events)).rejects.toMatchObject({ status: 400 });
  });

  it("without heartbeat a slow start just waits", async () => {
    process.env.OLLAMATS_HEARTBEAT_MS = "0";
    const f = fakeRunner(() => ["Hi"], { delayMs: 20 });
    const evs = await all((await startCompletion(f.scheduler, request(qwen25))).events);
    expect(evs.map((e) => e.type)).toEqual(["content", "done"]);
  });
});
