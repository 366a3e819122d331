// Operations on the real daemon with real runners: a scripted workload, then /metrics read with a
// strict Prometheus text reader, whose counts and sums must be exactly those of the answers the
// workload got; the state of a model mid-stream; eviction, crash and unload counts; request ids
// in answers, in the daemon's log lines and in the runner's; JSON logs that stay JSON under
// OLLAMA_DEBUG, with prompt text only at debug level.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { childPids, createModelFromFile, createTinyPair, eventually, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { Scrape } from "../helpers/prometheus.js";

interface Answer {
  eval_count: number;
  eval_duration: number;
  prompt_eval_count: number;
  prompt_eval_duration: number;
}

/** The machine may be busy: waits are generous (they only detect what never happens). */
const until = <T>(read: () => Promise<T>, check: (v: T) => boolean) => eventually(read, check, 30_000);

async function scrape(d: TestDaemon): Promise<Scrape> {
  const r = await fetch(`${d.url}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return new Scrape(await r.text());
}

function post(d: TestDaemon, path: string, body: object, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${d.url}${path}`, { method: "POST", body: JSON.stringify(body), headers, signal });
}

/** The final object of an NDJSON stream. */
async function lastLine(r: Response): Promise<Answer> {
  const lines = (await r.text()).trim().split("\n");
  return JSON.parse(lines.at(-1) as string) as Answer;
}

let tiny: string;

beforeAll(async () => {
  tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
}, 60_000);

describe("/metrics after a scripted workload (OLLAMA_NUM_PARALLEL=2, OLLAMA_MAX_LOADED_MODELS=1, OLLAMA_DEBUG=1)", () => {
  let d: TestDaemon;
  const answers: Answer[] = [];

  beforeAll(async () => {
    d = await startDaemon({ OLLAMA_NUM_PARALLEL: "2", OLLAMA_MAX_LOADED_MODELS: "1", OLLAMA_KEEP_ALIVE: "10m", OLLAMA_DEBUG: "1" });
    await until(async () => d.logs(), (l) => /GPU|device discovery/.test(l));
    await createTinyPair(d.url);
  }, 60_000);
  afterAll(async () => {
    if (process.env.METRICS_TEST_LOG) await import("node:fs/promises").then((fs) => fs.writeFile(process.env.METRICS_TEST_LOG as string, d.logs()));
    await d?.stop();
  });

  it("counts every request and sums every generation exactly as answered", async () => {
    const options = { num_predict: 4, seed: 3 };
    for (let i = 0; i < 3; i++) {
      const r = await post(d, "/api/generate", { model: "a", prompt: `Question ${i}`, stream: false, options }, { "X-Request-Id": `gen-${i}` });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-request-id")).toBe(`gen-${i}`);
      answers.push((await r.json()) as Answer);
    }
    for (let i = 0; i < 2; i++) {
      const r = await post(d, "/api/generate", { model: "a", prompt: `Streamed ${i}`, options });
      expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      answers.push(await lastLine(r));
    }
    const chat = await post(d, "/api/chat", { model: "a", messages: [{ role: "user", content: "hi" }], stream: false, options });
    answers.push((await chat.json()) as Answer);

    // The answers' own counts and durations give exactly the speeds the histograms summed.
    const native = await scrape(d);
    const decode = native.histogram("ollamats_decode_tokens_per_second", { model: "a:latest" });
    const decoded = answers.filter((a) => a.eval_count > 0 && a.eval_duration > 0);
    expect(decode.count).toBe(decoded.length);
    expect(decode.sum).toBeCloseTo(decoded.reduce((n, a) => n + a.eval_count / (a.eval_duration / 1e9), 0), 6);
    const prompt = native.histogram("ollamats_prompt_eval_tokens_per_second", { model: "a:latest" });
    const evaluated = answers.filter((a) => a.prompt_eval_count > 0 && a.prompt_eval_duration > 0);
    expect(prompt.count).toBe(evaluated.length);
    expect(prompt.sum).toBeCloseTo(evaluated.reduce((n, a) => n + a.prompt_eval_count / (a.prompt_eval_duration / 1e9), 0), 6);
    const ttft = native.histogram("ollamats_time_to_first_token_seconds", { model: "a:latest" });
    expect(ttft.count).toBe(6);
    // The first token comes after the load and before the answer's end.
    expect(ttft.sum).toBeLessThan(answers.reduce((n, a) => n + (a as Answer & { total_duration: number }).total_duration / 1e9, 0));

    const v1 = await post(d, "/v1/chat/completions", { model: "a", messages: [{ role: "user", content: "hello" }], max_tokens: 4 });
    expect(v1.status).toBe(200);
    const usage = ((await v1.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    expect((await post(d, "/api/generate", { model: "missing", prompt: "x" })).status).toBe(404);
    expect((await fetch(`${d.url}/api/tags`)).status).toBe(200);
    expect((await fetch(`${d.url}/no/such/path`)).status).toBe(404);

    const s = await scrape(d);
    expect(s.problems("ollamats_")).toEqual([]);
    const total = (name: string, labels: Record<string, string>) => s.value("ollamats_http_requests_total", labels);
    expect(total("", { route: "/api/generate", method: "POST", status: "200", model: "a:latest" })).toBe(5);
    expect(total("", { route: "/api/chat", status: "200", model: "a:latest" })).toBe(1);
    expect(total("", { route: "/v1/chat/completions", status: "200", model: "a:latest" })).toBe(1);
    expect(total("", { route: "/api/generate", status: "404", model: "" })).toBe(1);
    expect(total("", { route: "/api/tags", method: "GET", status: "200" })).toBe(1);
    expect(total("", { route: "/api/create", status: "200" })).toBe(2);
    expect(total("", { route: "unmatched", status: "404" })).toBe(1);
    expect(s.histogram("ollamats_http_request_duration_seconds", { route: "/api/generate" }).count).toBe(6);

    // Seven generations: five native, one chat, one /v1 (whose usage carries its counts).
    const evalTokens = answers.reduce((n, a) => n + a.eval_count, 0) + usage.completion_tokens;
    const promptTokens = answers.reduce((n, a) => n + a.prompt_eval_count, 0) + usage.prompt_tokens;
    expect(s.value("ollamats_generated_tokens_total", { model: "a:latest" })).toBe(evalTokens);
    expect(s.value("ollamats_prompt_tokens_total", { model: "a:latest" })).toBe(promptTokens);
    expect(s.histogram("ollamats_time_to_first_token_seconds", { model: "a:latest" }).count).toBe(7);
    expect(s.histogram("ollamats_queue_wait_seconds", { model: "a:latest" }).count).toBe(7);
    expect(s.histogram("ollamats_decode_tokens_per_second", { model: "a:latest" }).count).toBe(7);

    expect(s.value("ollamats_model_loads_total", { model: "a:latest", result: "success" })).toBe(1);
    expect(s.histogram("ollamats_model_load_duration_seconds", { model: "a:latest" }).count).toBe(1);
    expect(s.value("ollamats_models_loaded")).toBe(1);
    expect(s.value("ollamats_queue_depth")).toBe(0);
    const ps = (await (await fetch(`${d.url}/api/ps`)).json()) as { models: { name: string; context_length: number; size: number }[] };
    const ctx = ps.models[0]?.context_length ?? 0;
    expect(s.value("ollamats_model_context_tokens", { model: "a:latest" })).toBe(ctx);
    expect(s.value("ollamats_model_slots", { model: "a:latest" })).toBe(2);
    expect(s.value("ollamats_model_kv_cells", { model: "a:latest" })).toBe(2 * ctx);
    expect(s.value("ollamats_model_ram_bytes", { model: "a:latest" })).toBe(ps.models[0]?.size);
    expect(s.value("ollamats_model_slots_busy", { model: "a:latest" })).toBe(0);
    expect(s.value("ollamats_model_requests_active", { model: "a:latest" })).toBe(0);
    const used = s.value("ollamats_model_kv_cells_used", { model: "a:latest" });
    expect(used).toBeGreaterThan(0); // the slots keep their last prompts
    expect(used).toBeLessThanOrEqual(2 * ctx);
    expect(s.value("ollamats_model_expiry_timestamp_seconds", { model: "a:latest" })).toBeGreaterThan(Date.now() / 1000 + 5 * 60);
  }, 180_000);

  it("puts the request id on the daemon's lines of a request and on the runner's", () => {
    const logs = d.logs();
    expect(logs).toMatch(/msg="loading a:latest".* request_id=gen-0\n/);
    expect(logs).toMatch(/msg="load plan for a:latest" .*request_id=gen-0\n/);
    for (let i = 0; i < 3; i++) {
      expect(logs).toMatch(new RegExp(`msg="runner generation" .*request_id=gen-${i} .*prompt_eval_ms=`));
      expect(logs).toMatch(new RegExp(`msg="completion request" model=a:latest .*prompt=".*Question ${i}.*" request_id=gen-${i}\\n`));
      expect(logs).toMatch(new RegExp(`msg="request timings" request_id=gen-${i} model=a:latest total=\\S+ wait=\\S+ first_token=\\S+ prompt_eval=\\S+ eval=\\S+\\n`));
      expect(logs).toMatch(new RegExp(`level=INFO msg=request method=POST path=/api/generate status=200 .*request_id=gen-${i}\\n`));
    }
    // A scrape is a debug line, not an info line every few seconds.
    expect(logs).toMatch(/level=DEBUG msg=request method=GET path=\/metrics status=200/);
    expect(logs).not.toMatch(/level=INFO msg=request method=GET path=\/metrics/);
  });

  it("shows a stream in progress, then counts it canceled when its client leaves", async () => {
    const ac = new AbortController();
    const r = await post(d, "/api/generate", { model: "a", prompt: "a long answer", options: { num_predict: 100_000, temperature: 1 } }, {}, ac.signal);
    const reader = (r.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const s = await scrape(d);
    expect(s.value("ollamats_model_slots_busy", { model: "a:latest" })).toBe(1);
    expect(s.value("ollamats_model_requests_active", { model: "a:latest" })).toBe(1);
    ac.abort();
    // The runner frees the slot as soon as it sees the abort (after its step in flight).
    const after = await until(
      () => scrape(d),
      (x) => x.value("ollamats_http_requests_canceled_total", { route: "/api/generate" }) === 1 && x.value("ollamats_model_slots_busy", { model: "a:latest" }) === 0,
    );
    expect(after.value("ollamats_http_requests_canceled_total", { route: "/api/generate", model: "a:latest" })).toBe(1);
    expect(after.value("ollamats_model_slots_busy", { model: "a:latest" })).toBe(0);
  }, 60_000);

  it("counts an eviction, a runner crash and an unload with their reasons", async () => {
    expect((await post(d, "/api/generate", { model: "b", prompt: "", stream: false })).status).toBe(200);
    let s = await scrape(d);
    expect(s.value("ollamats_model_evictions_total", { model: "a:latest", reason: "max_loaded_models" })).toBe(1);
    expect(s.value("ollamats_model_unloads_total", { model: "a:latest", reason: "evicted" })).toBe(1);
    expect(s.value("ollamats_model_loads_total", { model: "b:latest", result: "success" })).toBe(1);
    expect(s.samples("ollamats_model_slots").map((x) => x.labels.model)).toEqual(["b:latest"]);

    for (const pid of await childPids(d.proc.pid as number)) process.kill(pid, "SIGKILL");
    s = await until(() => scrape(d), (x) => x.value("ollamats_runner_crashes_total", { model: "b:latest" }) === 1 && x.value("ollamats_models_loaded") === 0);
    expect(s.value("ollamats_runner_crashes_total", { model: "b:latest" })).toBe(1);
    expect(s.value("ollamats_models_loaded")).toBe(0);

    // An empty prompt loads the model; with keep_alive 0 it unloads it.
    expect((await post(d, "/api/generate", { model: "a", prompt: "", stream: false })).status).toBe(200);
    expect((await post(d, "/api/generate", { model: "a", prompt: "", keep_alive: 0, stream: false })).status).toBe(200);
    s = await until(() => scrape(d), (x) => x.value("ollamats_model_unloads_total", { model: "a:latest", reason: "unload_requested" }) === 1);
    expect(s.value("ollamats_model_unloads_total", { model: "a:latest", reason: "unload_requested" })).toBe(1);
    expect(s.value("ollamats_model_loads_total", { model: "a:latest", result: "success" })).toBe(2);
    expect(s.value("ollamats_models_loaded")).toBe(0);
    // The crash's line is the daemon's, not that of the request that loaded the model.
    expect(d.logs()).toMatch(/level=WARN msg="b:latest: llama runner process has terminated: signal: killed"\n/);
  }, 120_000);
});

describe("OLLAMATS_LOG_FORMAT=json with OLLAMA_DEBUG=1", () => {
  let d: TestDaemon;
  beforeAll(async () => {
    d = await startDaemon({ OLLAMATS_LOG_FORMAT: "json", OLLAMA_DEBUG: "1" });
    expect((await createModelFromFile(d.url, "a", tiny)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await d?.stop();
  });

  it("writes only JSON lines, runner lines included, and prompt text only at debug level", async () => {
    const r = await post(d, "/api/generate", { model: "a", prompt: "the secret-prompt-text", stream: false, options: { num_predict: 4 } }, { "X-Request-Id": "json-1" });
    expect(r.status).toBe(200);
    // The runner's line comes over its own channel, maybe just after the answer.
    await until(async () => d.logs(), (l) => l.includes('"msg":"request"') && l.includes('"msg":"runner generation"'));
    const records = d
      .logs()
      .trim()
      .split("\n")
      .map((line) => {
        try {
          return JSON.parse(line) as Record<string, unknown>;
        } catch {
          throw new Error(`not a JSON log line: ${line}`);
        }
      });
    for (const rec of records) expect(Object.keys(rec).slice(0, 3)).toEqual(["time", "level", "msg"]);
    const mine = records.filter((x) => x.request_id === "json-1");
    expect(mine.map((x) => x.msg)).toEqual(expect.arrayContaining(["loading a:latest", "completion request", "completion timings", "runner generation", "request", "request timings"]));
    expect(mine.find((x) => x.msg === "request")).toMatchObject({ level: "INFO", method: "POST", path: "/api/generate", status: 200, model: "a" });
    const secret = records.filter((x) => JSON.stringify(x).includes("secret-prompt-text"));
    expect(secret.length).toBeGreaterThan(0);
    for (const x of secret) expect(x.level).toBe("DEBUG");
  }, 120_000);
});
