// The requests the load part's clients make, each checking the answer's content: a wrong answer is
// an error just like a failed request. A 503 with Ollama's queue-full message is the one designed
// refusal; it is counted apart.
import { QUEUE_FULL } from "../../src/daemon/scheduler/queue.js";

export type OpName = "generate" | "generate-stream" | "chat" | "chat-stream" | "embed" | "tags" | "show" | "pull-existing" | "pull-fresh";

export interface LoadModels {
  chat: string;
  embed: string;
  embedDims: number;
  /** Models in the registry that clients pull fresh (and delete again), one client at a time each. */
  fresh: string[];
  /** `options` of every generate and chat (num_predict 8, plus num_thread when asked for, which
   *  embed gets too). */
  options: Record<string, unknown>;
}

export type Outcome = { kind: "ok" } | { kind: "busy" } | { kind: "error"; detail: string };

/** Per-request time limit: past it the request counts as hung. Generous: with one slot and a
 *  loaded machine a request may wait minutes behind the others, which is not a hang. */
const REQUEST_TIMEOUT_MS = 600_000;

const WORDS = ["the", "cat", "sat", "on", "a", "mat", "while", "rain", "fell", "over", "quiet", "hills", "and", "rivers", "ran", "north"];

export function prompt(rand: () => number, n = 6): string {
  return Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(" ");
}

class OpError extends Error {}

function expect(cond: unknown, what: string): asserts cond {
  if (!cond) throw new OpError(what);
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${base}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
}

type Json = Record<string, unknown>;

async function readJson(res: Response): Promise<Json> {
  return JSON.parse(await res.text()) as Json;
}

/** Every NDJSON line; an `{"error"}` line is a failure. */
async function readLines(res: Response): Promise<Json[]> {
  const lines = (await res.text()).split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as Json);
  const err = lines.find((l) => "error" in l);
  expect(!err, `error line: ${JSON.stringify(err?.error)}`);
  return lines;
}

/** Refusals other than queue-full become errors with the status and body. */
async function refused(res: Response): Promise<Outcome | null> {
  if (res.ok) return null;
  const text = await res.text();
  if (res.status === 503 && text.includes(QUEUE_FULL)) return { kind: "busy" };
  return { kind: "error", detail: `${res.status} ${text.slice(0, 200)}` };
}

type Op = (base: string, m: LoadModels, rand: () => number) => Promise<Outcome>;

const ok: Outcome = { kind: "ok" };

/** The ops any client may run at any time (pull-fresh needs a model to itself: freshPull). */
export const OPS: Record<Exclude<OpName, "pull-fresh">, Op> = {
  generate: async (base, m, rand) => {
    const res = await call(base, "POST", "/api/generate", { model: m.chat, prompt: prompt(rand), stream: false, options: m.options });
    const r = await refused(res);
    if (r) return r;
    const j = await readJson(res);
    expect(j.done === true && typeof j.response === "string" && typeof j.eval_count === "number", `generate: ${JSON.stringify(j).slice(0, 200)}`);
    return ok;
  },
  "generate-stream": async (base, m, rand) => {
    const res = await call(base, "POST", "/api/generate", { model: m.chat, prompt: prompt(rand), options: m.options });
    const r = await refused(res);
    if (r) return r;
    const lines = await readLines(res);
    expect(lines.at(-1)?.done === true && lines.slice(0, -1).every((l) => l.done === false), `generate stream: ${lines.length} lines, last ${JSON.stringify(lines.at(-1))}`);
    return ok;
  },
  chat: async (base, m, rand) => {
    const res = await call(base, "POST", "/api/chat", { model: m.chat, messages: [{ role: "user", content: prompt(rand) }], stream: false, options: m.options });
    const r = await refused(res);
    if (r) return r;
    const j = await readJson(res);
    const msg = j.message as Json | undefined;
    expect(j.done === true && msg?.role === "assistant" && typeof msg.content === "string", `chat: ${JSON.stringify(j).slice(0, 200)}`);
    return ok;
  },
  "chat-stream": async (base, m, rand) => {
    const res = await call(base, "POST", "/api/chat", { model: m.chat, messages: [{ role: "user", content: prompt(rand) }], options: m.options });
    const r = await refused(res);
    if (r) return r;
    const lines = await readLines(res);
    expect(lines.at(-1)?.done === true && lines.every((l) => (l.message as Json | undefined)?.role === "assistant"), `chat stream: last ${JSON.stringify(lines.at(-1))}`);
    return ok;
  },
  embed: async (base, m, rand) => {
    const threads = m.options.num_thread === undefined ? {} : { options: { num_thread: m.options.num_thread } };
    const res = await call(base, "POST", "/api/embed", { model: m.embed, input: [prompt(rand), prompt(rand, 3)], ...threads });
    const r = await refused(res);
    if (r) return r;
    const j = await readJson(res);
    const e = j.embeddings as number[][] | undefined;
    expect(Array.isArray(e) && e.length === 2 && e.every((v) => v.length === m.embedDims && v.every(Number.isFinite)), `embed: ${JSON.stringify(j).slice(0, 200)}`);
    return ok;
  },
  tags: async (base, m) => {
    const res = await call(base, "GET", "/api/tags");
    const r = await refused(res);
    if (r) return r;
    const j = await readJson(res);
    const names = ((j.models as Json[] | undefined) ?? []).map((x) => x.name);
    expect(names.includes(m.chat) && names.includes(m.embed), `tags: ${JSON.stringify(names)}`);
    return ok;
  },
  show: async (base, m) => {
    const res = await call(base, "POST", "/api/show", { model: m.chat });
    const r = await refused(res);
    if (r) return r;
    const j = await readJson(res);
    expect((j.details as Json | undefined)?.family === "llama" && typeof j.modelfile === "string", `show: ${JSON.stringify(j).slice(0, 200)}`);
    return ok;
  },
  "pull-existing": async (base, m) => pull(base, m.chat),
};

async function pull(base: string, model: string): Promise<Outcome> {
  const res = await call(base, "POST", "/api/pull", { model, insecure: true });
  const r = await refused(res);
  if (r) return r;
  const lines = await readLines(res);
  expect(lines[0]?.status === "pulling manifest" && lines.at(-1)?.status === "success", `pull ${model}: ${JSON.stringify(lines.at(-1))}`);
  return ok;
}

/** Pull a model that is not in the store, then delete it so that it is fresh again. */
export async function freshPull(base: string, model: string): Promise<Outcome> {
  const p = await pull(base, model);
  if (p.kind !== "ok") return p;
  const res = await call(base, "DELETE", "/api/delete", { model });
  return (await refused(res)) ?? ok;
}

/** Runs one op; a thrown error (bad content, timeout, connection refused) is an error outcome. */
export async function runOp(op: () => Promise<Outcome>): Promise<Outcome> {
  try {
    return await op();
  } catch (e) {
    const err = e as Error & { cause?: Error };
    return { kind: "error", detail: `${err.name === "TimeoutError" ? "hung: " : ""}${err.message}${err.cause ? ` (${err.cause.message})` : ""}` };
  }
}
