// API keys and inference-only mode against the real daemon and runner: the real `ollama` and
// `openai` clients with a key work and get 401 without one; an inference-scoped key and
// OLLAMA_NO_MANAGEMENT refuse management with 403; the CLI sends OLLAMA_API_KEY and reports a 401
// in one line; a bad keys file stops the daemon with one line; no key ever reaches the log.
import { execFile } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { CLI, freePort, startDaemon, type TestDaemon } from "../helpers/daemon.js";

const ALL = "all-scope-key-5f0e3c2a9b7d41e8";
const INFER = "inference-key-8c1d7e4f2a6b93d0";
const WRONG = "wrong-key-3e9a1c7b5d2f80e4";
const SECRETS = [ALL, INFER, WRONG];
const MISSING = /^unauthorized: this server requires an API key/;
const options = { num_predict: 6, seed: 3 };

let d: TestDaemon; // OLLAMA_API_KEYS (scope all) + a keys file (an inference key)
let inferenceOnly: TestDaemon | undefined; // OLLAMA_NO_MANAGEMENT, no keys, the same store
let dir: string;

interface Run {
  stdout: string;
  stderr: string;
  code: number;
}

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
    });
    child.stdin?.end(); // `run` reads a piped stdin to its end
  });
}

/** The error a promise rejects with. */
async function rejection(p: Promise<unknown>): Promise<Error & { status_code?: number; status?: number; code?: string | null }> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "expected a rejection").toBeInstanceOf(Error);
  return err as Error;
}

/** Every management call ollama-js makes, each started only when called. */
const management = (c: Ollama): (() => Promise<unknown>)[] => [
  () => c.pull({ model: "nothing-here", stream: false }),
  () => c.push({ model: "keyed", stream: false }),
  () => c.create({ model: "copy-of-keyed", from: "keyed", stream: false }),
  () => c.copy({ source: "keyed", destination: "copy-of-keyed" }),
  () => c.delete({ model: "keyed" }),
];

const ollama = (url: string, key?: string) => new Ollama({ host: url, ...(key !== undefined ? { headers: { Authorization: `Bearer ${key}` } } : {}) });
const openai = (url: string, apiKey: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "ollamats-keys-"));
  const keysFile = path.join(dir, "api-keys");
  await writeFile(keysFile, `# the web UI may only run models\n${INFER} inference\n`, { mode: 0o600 });
  d = await startDaemon({ OLLAMA_API_KEYS: ALL, OLLAMA_API_KEYS_FILE: keysFile, OLLAMA_DEBUG: "1" });
  const tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  const embed = await makeTestModel({ embedding: true, type: "F32" });
  // The CLI creates the models, with the key from OLLAMA_API_KEY (blob HEAD and upload, create).
  for (const [name, gguf] of [
    ["keyed", tiny],
    ["keyed-embed", embed],
  ] as const) {
    await writeFile(path.join(dir, name), `FROM ${gguf}\nPARAMETER num_thread 1\nPARAMETER num_predict 6\n`);
    const r = await cli(["create", name, "-f", path.join(dir, name)], { ...d.env, OLLAMA_API_KEY: ALL });
    expect(r.code, r.stderr).toBe(0);
  }
}, 120_000);

afterAll(async () => {
  await inferenceOnly?.stop();
  await d?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("a daemon with API keys", () => {
  it("answers the health check without a key", async () => {
    expect(await (await fetch(d.url)).text()).toBe("Ollama is running");
    expect((await fetch(d.url, { method: "HEAD" })).status).toBe(200);
    expect(d.logs()).toMatch(/msg="API keys required" keys=2 inference_only=1 file=/);
  });

  it("ollama-js with `headers: {Authorization: 'Bearer …'}` works; without a key or with a wrong one it gets 401", async () => {
    const client = ollama(d.url, ALL);
    const gen = await client.generate({ model: "keyed", prompt: "Hello", options, stream: false });
    expect(gen.done).toBe(true);
    expect(gen.response?.length).toBeGreaterThan(0);
    let streamed = "";
    for await (const part of await client.chat({ model: "keyed", messages: [{ role: "user", content: "Hi" }], options, stream: true })) {
      streamed += part.message.content;
    }
    expect(streamed.length).toBeGreaterThan(0);
    expect((await client.embed({ model: "keyed-embed", input: ["a", "b"] })).embeddings).toHaveLength(2);
    expect((await client.list()).models.map((m) => m.name).sort()).toEqual(["keyed-embed:latest", "keyed:latest"]);
    expect((await client.show({ model: "keyed" })).parameters).toMatch(/num_thread/);

    for (const refused of [ollama(d.url), ollama(d.url, WRONG)]) {
      const err = await rejection(refused.generate({ model: "keyed", prompt: "Hello", options, stream: false }));
      expect(err.name).toBe("ResponseError");
      expect(err.status_code).toBe(401);
      expect(err.message).toMatch(/^unauthorized: /);
      expect((await rejection(refused.list())).status_code).toBe(401);
    }
  });

  it("the openai client with apiKey works; a wrong apiKey gets OpenAI's 401 (invalid_api_key)", async () => {
    for (const key of [ALL, INFER]) {
      const client = openai(d.url, key);
      const r = await client.chat.completions.create({ model: "keyed", messages: [{ role: "user", content: "Hi" }], max_tokens: 6, seed: 3 });
      expect(r.choices[0]!.message.content?.length).toBeGreaterThan(0);
      expect((await client.embeddings.create({ model: "keyed-embed", input: "a" })).data).toHaveLength(1);
      expect((await client.models.list()).data.map((m) => m.id)).toContain("keyed:latest");
    }
    const err = await rejection(openai(d.url, WRONG).chat.completions.create({ model: "keyed", messages: [{ role: "user", content: "Hi" }] }));
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.status).toBe(401);
    expect(err.code).toBe("invalid_api_key");
    expect(err.message).not.toContain(WRONG);
  });

  it("an inference-scoped key runs models but every management call gets 403", async () => {
    const client = ollama(d.url, INFER);
    expect((await client.generate({ model: "keyed", prompt: "Hello", options, stream: false })).done).toBe(true);
    expect((await client.show({ model: "keyed" })).details.format).toBe("gguf");
    for (const call of management(client)) {
      const err = await rejection(call());
      expect(err.status_code).toBe(403);
      expect(err.message).toMatch(/^this API key may only run models \(scope inference\)/);
    }
    const blob = await fetch(`${d.url}/api/blobs/sha256:${"0".repeat(64)}`, { method: "POST", body: "x", headers: { authorization: `Bearer ${INFER}` } });
    expect(blob.status).toBe(403);
    // Nothing changed; a key with scope all may manage.
    const all = ollama(d.url, ALL);
    expect((await all.list()).models).toHaveLength(2);
    await all.copy({ source: "keyed", destination: "copy-of-keyed" });
    await all.delete({ model: "copy-of-keyed" });
    expect((await all.list()).models).toHaveLength(2);
  });

  it("the CLI sends OLLAMA_API_KEY; without it, or with a wrong one, it says so in one line", { timeout: 120_000 }, async () => {
    const ok = await cli(["list"], { ...d.env, OLLAMA_API_KEY: INFER });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/keyed:latest/);
    const run = await cli(["run", "keyed", "Hello"], { ...d.env, OLLAMA_API_KEY: ALL });
    expect(run.code, run.stderr).toBe(0);

    const none = await cli(["list"], d.env);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe("Error: the server requires an API key; set OLLAMA_API_KEY to one of its keys\n");
    const wrong = await cli(["run", "keyed", "Hello"], { ...d.env, OLLAMA_API_KEY: WRONG });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(
      "Error: the server did not accept the API key in OLLAMA_API_KEY; set OLLAMA_API_KEY to one of the keys it was given (OLLAMA_API_KEYS)\n",
    );
    const create = await cli(["create", "again", "-f", path.join(dir, "keyed")], d.env);
    expect(create.code).toBe(1);
    expect(create.stderr.trim().split("\n").at(-1)).toBe("Error: the server requires an API key; set OLLAMA_API_KEY to one of its keys");
    const scoped = await cli(["rm", "keyed"], { ...d.env, OLLAMA_API_KEY: INFER });
    expect(scoped.code).toBe(1);
    expect(scoped.stderr).toMatch(/^Error: this API key may only run models \(scope inference\)[^\n]*\n$/);
  });

  it("no key appears in the daemon's log (debug level) after requests with right and wrong keys", async () => {
    for (const key of SECRETS) {
      await fetch(`${d.url}/api/tags`, { headers: { authorization: `Bearer ${key}` } });
      await fetch(`${d.url}/api/pull`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ model: key }) });
    }
    const logs = d.logs();
    expect(logs).toMatch(/status=401/);
    expect(logs).toMatch(/status=403/);
    for (const key of SECRETS) expect(logs).not.toContain(key);
  });
});

describe("OLLAMA_NO_MANAGEMENT", () => {
  it("serves inference without a key and refuses pull, push, create, copy, delete and blobs with 403", { timeout: 120_000 }, async () => {
    inferenceOnly = await startDaemon({ OLLAMA_NO_MANAGEMENT: "1", OLLAMA_MODELS: d.models });
    const client = ollama(inferenceOnly.url);
    expect((await client.generate({ model: "keyed", prompt: "Hello", options, stream: false })).done).toBe(true);
    expect((await client.list()).models).toHaveLength(2);
    expect((await client.ps()).models.map((m) => m.name)).toEqual(["keyed:latest"]);
    for (const call of management(client)) {
      const err = await rejection(call());
      expect(err.status_code).toBe(403);
      expect(err.message).toMatch(/^this server runs models but does not manage them \(OLLAMA_NO_MANAGEMENT is set\)/);
    }
    expect((await fetch(`${inferenceOnly.url}/api/blobs/sha256:${"0".repeat(64)}`, { method: "POST", body: "x" })).status).toBe(403);
    // The CLI reports it in one line, with the server's reason.
    const create = await cli(["create", "again", "-f", path.join(dir, "keyed")], inferenceOnly.env);
    expect(create.code).toBe(1);
    expect(create.stderr.trim().split("\n").at(-1)).toMatch(/^Error: this server runs models but does not manage them/);
    expect((await client.list()).models).toHaveLength(2);
    expect(inferenceOnly.logs()).toMatch(/inference only \(OLLAMA_NO_MANAGEMENT\)/);
  });
});

describe("a bad key setting stops the daemon with one line that names the variable, not the key", () => {
  async function serve(env: Record<string, string>): Promise<Run> {
    const port = await freePort();
    return cli(["serve"], { ...process.env, OLLAMA_HOST: `127.0.0.1:${port}`, OLLAMA_MODELS: path.join(dir, "no-models"), ...env });
  }

  it("a keys file other users can read", async () => {
    const open = path.join(dir, "open-keys");
    await writeFile(open, `${ALL}\n`);
    await chmod(open, 0o644);
    const r = await serve({ OLLAMA_API_KEYS_FILE: open });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`Error: OLLAMA_API_KEYS_FILE: ${open} can be read or changed by other users (mode 0644); make it private: chmod 600 ${open}\n`);
  });

  it("a key that cannot be sent in a header, a file without keys", async () => {
    const bad = await serve({ OLLAMA_API_KEYS: `${ALL}, has space` });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^Error: OLLAMA_API_KEYS: key 2: the key has a character a key may not have[^\n]*\n$/);
    expect(bad.stderr).not.toContain(ALL);
    expect(bad.stderr).not.toContain("has space");
    const empty = path.join(dir, "empty-keys");
    await writeFile(empty, "# none yet\n", { mode: 0o600 });
    const none = await serve({ OLLAMA_API_KEYS_FILE: empty });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^Error: OLLAMA_API_KEYS_FILE: .* holds no keys, so every request would be refused/);
  });
});
