// Every route the daemon serves, with a valid request for it built from the fixtures: the starting
// point of each request-body case. Registry routes only ever name 127.0.0.1:1 (nothing listens
// there): `remoteSafe` rewrites any other registry a mutation produced.
import type { JsonObject, JsonTree } from "./json-text.js";
import { isObject } from "./json-text.js";
import type { Rng } from "./prng.js";

/** Where pulls and pushes go: a loopback port nobody listens on. */
export const NOWHERE = "127.0.0.1:1";

export interface Fixtures {
  /** A completion model (tiny llama, PARAMETER num_predict 4) and an embedding model. */
  base: string;
  embed: string;
  /** The digest of the base model's GGUF blob. */
  baseBlob: string;
}

export interface RouteSpec {
  method: string;
  path: string;
  /** A valid body; absent for bodiless routes. */
  body?: (rng: Rng, fx: Fixtures) => JsonObject;
  /** Runs a model (loads a runner). */
  inference?: boolean;
  /** Creates, copies, deletes or fetches models. */
  changesModels?: boolean;
  /** Requests that must run first (a model to delete or push). */
  setup?: (fx: Fixtures) => Array<{ method: string; path: string; body: JsonObject }>;
}

const maybe = <T extends JsonTree>(rng: Rng, p: number, v: () => T): T | undefined => (rng.chance(p) ? v() : undefined);

/** Drops the undefined fields of an object literal. */
function obj(fields: Record<string, JsonTree | undefined>): JsonObject {
  const o: JsonObject = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) o[k] = v;
  return o;
}

const SCHEMA: JsonObject = { type: "object", properties: { answer: { type: "string" }, n: { type: "integer" } }, required: ["answer"] };
const TOOL_PARAMETERS: JsonObject = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const TOOL: JsonObject = { type: "function", function: { name: "get_weather", description: "Weather in a city", parameters: TOOL_PARAMETERS } };

function options(rng: Rng): JsonObject {
  return obj({
    num_predict: 2,
    temperature: maybe(rng, 0.5, () => 0.5),
    seed: maybe(rng, 0.5, () => 7),
    top_k: maybe(rng, 0.3, () => 20),
    top_p: maybe(rng, 0.3, () => 0.9),
    stop: maybe(rng, 0.3, () => ["\n\n"]),
    num_ctx: maybe(rng, 0.1, () => 512),
  });
}

function messages(rng: Rng): JsonTree[] {
  const m: JsonTree[] = [];
  if (rng.chance(0.5)) m.push({ role: "system", content: "Be brief." });
  if (rng.chance(0.3)) m.push({ role: "user", content: "Hello" }, { role: "assistant", content: "Hi." });
  if (rng.chance(0.15)) {
    m.push({ role: "assistant", content: "", tool_calls: [{ function: { name: "get_weather", arguments: { city: "Paris" } } }] }, { role: "tool", content: "sunny", tool_name: "get_weather" });
  }
  m.push({ role: "user", content: "Why is the sky blue?" });
  return m;
}

export const ROUTES: readonly RouteSpec[] = [
  { method: "GET", path: "/" },
  { method: "GET", path: "/api/version" },
  { method: "GET", path: "/api/tags" },
  { method: "GET", path: "/api/ps" },
  { method: "GET", path: "/v1/models" },
  { method: "GET", path: "/v1/models/fuzz-base" },
  {
    method: "POST", path: "/api/generate", inference: true,
    body: (rng, fx) => obj({
      model: fx.base, prompt: rng.pick(["hi", "Why is the sky blue?", "<|im_start|>user\nhi<|im_end|>\n"]), stream: rng.chance(0.5),
      options: options(rng), keep_alive: maybe(rng, 0.2, () => rng.pick(["5m", 300, "1h"])),
      system: maybe(rng, 0.2, () => "Be brief."), template: maybe(rng, 0.1, () => "{{ .System }} {{ .Prompt }}"),
      format: maybe(rng, 0.15, () => rng.pick<JsonTree>(["json", SCHEMA])), raw: maybe(rng, 0.1, () => true),
      suffix: maybe(rng, 0.05, () => " end"), context: maybe(rng, 0.1, () => [1, 300, 301]), images: maybe(rng, 0.05, () => []),
      think: maybe(rng, 0.05, () => false), logprobs: maybe(rng, 0.05, () => true), top_logprobs: maybe(rng, 0.05, () => 2),
    }),
  },
  {
    method: "POST", path: "/api/chat", inference: true,
    body: (rng, fx) => obj({
      model: fx.base, messages: messages(rng), stream: rng.chance(0.5), options: options(rng),
      tools: maybe(rng, 0.2, () => [TOOL]), format: maybe(rng, 0.1, () => rng.pick<JsonTree>(["json", SCHEMA])),
      tool_choice: maybe(rng, 0.1, () => toolChoice(rng)),
      keep_alive: maybe(rng, 0.1, () => "5m"), think: maybe(rng, 0.05, () => false),
    }),
  },
  {
    method: "POST", path: "/api/embed", inference: true,
    body: (rng, fx) => obj({
      model: fx.embed, input: rng.pick<JsonTree>(["hello", ["a", "b c"], []]), truncate: maybe(rng, 0.3, () => true),
      dimensions: maybe(rng, 0.2, () => 16), options: maybe(rng, 0.2, () => ({})),
    }),
  },
  { method: "POST", path: "/api/embeddings", inference: true, body: (_rng, fx) => obj({ model: fx.embed, prompt: "hello" }) },
  {
    method: "POST", path: "/api/create", changesModels: true,
    body: (rng, fx) => {
      switch (rng.int(3)) {
        case 0:
          return obj({
            model: "fuzz-new", from: fx.base, system: maybe(rng, 0.5, () => "You are terse."), stream: rng.chance(0.5),
            parameters: maybe(rng, 0.5, () => ({ temperature: 0.2, stop: ["x"], num_ctx: 1024 })),
            template: maybe(rng, 0.3, () => "{{ .System }}{{ .Prompt }}"), license: maybe(rng, 0.2, () => "MIT"),
            messages: maybe(rng, 0.2, () => [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }]),
          });
        case 1:
          return obj({ model: "fuzz-new", files: { "model.gguf": fx.baseBlob }, stream: false, quantize: maybe(rng, 0.1, () => "q4_0") });
        default:
          return obj({ model: "fuzz-new", modelfile: `FROM ${fx.base}\nPARAMETER temperature 0.1\nSYSTEM "terse"\n`, stream: false });
      }
    },
  },
  { method: "POST", path: "/api/show", body: (rng, fx) => obj({ model: fx.base, verbose: maybe(rng, 0.4, () => true), options: maybe(rng, 0.1, () => ({ temperature: 1 })), system: maybe(rng, 0.1, () => "x") }) },
  { method: "POST", path: "/api/copy", changesModels: true, body: (_rng, fx) => obj({ source: fx.base, destination: "fuzz-copy" }) },
  {
    method: "DELETE", path: "/api/delete", changesModels: true,
    setup: (fx) => [{ method: "POST", path: "/api/copy", body: { source: fx.base, destination: "fuzz-victim" } }],
    body: () => obj({ model: "fuzz-victim" }),
  },
  {
    method: "POST", path: "/api/pull", changesModels: true,
    body: (rng) => obj({ model: `${NOWHERE}/library/fuzz:latest`, insecure: true, stream: rng.chance(0.5) }),
  },
  {
    method: "POST", path: "/api/push", changesModels: true,
    setup: (fx) => [{ method: "POST", path: "/api/copy", body: { source: fx.base, destination: `${NOWHERE}/library/fuzz-push:latest` } }],
    body: (rng) => obj({ model: `${NOWHERE}/library/fuzz-push:latest`, insecure: true, stream: rng.chance(0.5) }),
  },
  { method: "POST", path: "/api/tokenize", inference: true, body: (_rng, fx) => obj({ model: fx.base, content: "hello world" }) },
  { method: "POST", path: "/api/detokenize", inference: true, body: (_rng, fx) => obj({ model: fx.base, tokens: [1, 300, 301] }) },
  {
    method: "POST", path: "/v1/chat/completions", inference: true,
    body: (rng, fx) => obj({
      model: fx.base, messages: rng.chance(0.2) ? [{ role: "user", content: [{ type: "text", text: "hi" }] }] : [{ role: "user", content: "hi" }],
      max_tokens: 2, stream: rng.chance(0.5), temperature: maybe(rng, 0.5, () => 0.5),
      stream_options: maybe(rng, 0.2, () => ({ include_usage: true })),
      response_format: maybe(rng, 0.15, () => rng.pick<JsonTree>([{ type: "json_object" }, { type: "json_schema", json_schema: { name: "a", schema: SCHEMA } }])),
      tools: maybe(rng, 0.15, () => [TOOL]), stop: maybe(rng, 0.2, () => ["\n"]), seed: maybe(rng, 0.2, () => 3),
      tool_choice: maybe(rng, 0.1, () => toolChoice(rng)),
      reasoning_effort: maybe(rng, 0.05, () => "none"),
    }),
  },
  {
    method: "POST", path: "/v1/completions", inference: true,
    body: (rng, fx) => obj({ model: fx.base, prompt: "hi", max_tokens: 2, stream: rng.chance(0.5), temperature: maybe(rng, 0.5, () => 0.5), stop: maybe(rng, 0.2, () => ["\n"]), suffix: maybe(rng, 0.05, () => "x") }),
  },
  {
    method: "POST", path: "/v1/embeddings", inference: true,
    body: (rng, fx) => obj({ model: fx.embed, input: rng.pick<JsonTree>(["hi", ["a", "b"]]), encoding_format: maybe(rng, 0.3, () => rng.pick(["float", "base64"])), dimensions: maybe(rng, 0.1, () => 8) }),
  },
  {
    method: "POST", path: "/v1/responses", inference: true,
    body: (rng, fx) => obj({
      model: fx.base, max_output_tokens: 2, stream: rng.chance(0.5), temperature: maybe(rng, 0.5, () => 0.5),
      instructions: maybe(rng, 0.3, () => "Be brief."),
      input: rng.chance(0.4)
        ? "hi"
        : [
            { type: "message", role: "user", content: [{ type: "input_text", text: "Weather?" }] },
            ...(rng.chance(0.3)
              ? [{ type: "function_call", call_id: "c1", name: "get_weather", arguments: '{"city":"Paris"}' }, { type: "function_call_output", call_id: "c1", output: "sunny" }]
              : []),
            // a stored item that is not there: a 400 that says so
            ...(rng.chance(0.05) ? [{ type: "item_reference", id: "msg_missing" }] : []),
          ],
      text: maybe(rng, 0.15, () => ({ format: { type: "json_schema", name: "a", schema: SCHEMA } })),
      tools: maybe(rng, 0.15, () => [{ type: "function", name: "get_weather", parameters: TOOL_PARAMETERS }]),
      tool_choice: maybe(rng, 0.1, () => rng.pick<JsonTree>(["auto", "none", "required", { type: "function", name: "get_weather" }])),
      store: maybe(rng, 0.3, () => rng.chance(0.5)),
      previous_response_id: maybe(rng, 0.05, () => "resp_missing"),
    }),
  },
  {
    method: "POST", path: "/v1/messages", inference: true,
    body: (rng, fx) => obj({
      model: fx.base, max_tokens: 2, stream: rng.chance(0.5), temperature: maybe(rng, 0.5, () => 0.5),
      system: maybe(rng, 0.3, () => rng.pick<JsonTree>(["Be brief.", [{ type: "text", text: "Be brief." }]])),
      messages: rng.chance(0.4)
        ? [{ role: "user", content: "hi" }]
        : [
            { role: "user", content: [{ type: "text", text: "Weather?" }] },
            ...(rng.chance(0.3)
              ? [
                  { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "get_weather", input: { city: "Paris" } }] },
                  { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "sunny" }] },
                ]
              : []),
          ],
      stop_sequences: maybe(rng, 0.2, () => ["\n"]),
      thinking: maybe(rng, 0.1, () => ({ type: "enabled", budget_tokens: 64 })),
      tools: maybe(rng, 0.15, () => [{ name: "get_weather", input_schema: TOOL_PARAMETERS }]),
    }),
  },
];

/** tool_choice in the shapes clients send (the native body takes them all). */
function toolChoice(rng: Rng): JsonTree {
  return rng.pick<JsonTree>(["auto", "none", "required", { type: "function", function: { name: "get_weather" } }]);
}

const REMOTE_FIELDS: Record<string, readonly string[]> = { "/api/pull": ["model", "name"], "/api/push": ["model", "name"] };

/** A model name that reaches no registry but 127.0.0.1:1 (local fixture names stay for create). */
function guardName(v: JsonTree | undefined, localOk: (s: string) => boolean): JsonTree | undefined {
  if (typeof v !== "string" || v.toLowerCase().startsWith(`${NOWHERE}/`) || localOk(v)) return v;
  return `${NOWHERE}/${v}`;
}

/**
 * Rewrites, in place, the names a mutation may have pointed at another registry: pull and push
 * names, and create's `from` and legacy Modelfile FROM lines unless they name a fixture (or a
 * blob). Returns whether it rewrote anything.
 */
export function remoteSafe(path: string, body: JsonTree, fx: Fixtures): boolean {
  if (!isObject(body)) return false;
  const fixture = (s: string) => {
    const n = s.toLowerCase().replace(/:latest$/, "");
    return n === fx.base || n === fx.embed || s.startsWith("@") || s === "";
  };
  let changed = false;
  const guard = (key: string, localOk: (s: string) => boolean) => {
    const v = body[key];
    const safe = guardName(v, localOk);
    if (safe !== v) {
      body[key] = safe ?? null;
      changed = true;
    }
  };
  for (const f of REMOTE_FIELDS[path] ?? []) guard(f, () => false);
  if (path === "/api/create") {
    guard("from", fixture);
    if (typeof body.modelfile === "string") {
      const mf = body.modelfile.replace(/^(\s*from\s+)(\S+)/gim, (_m, pre: string, name: string) => pre + String(guardName(name, fixture)));
      if (mf !== body.modelfile) {
        body.modelfile = mf;
        changed = true;
      }
    }
  }
  return changed;
}
