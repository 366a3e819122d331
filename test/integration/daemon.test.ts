// The real daemon, a real runner on a generated GGUF, driven by the real `ollama` npm client.
import { readdir } from "node:fs/promises";
import path from "node:path";
import { Ollama } from "ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { childPids, createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
const errorOf = async (r: Response) => ((await r.json()) as { error: string }).error;
let ollama: Ollama;
const opts = { seed: 7, num_predict: 12, temperature: 0.8 };

beforeAll(async () => {
  const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  d = await startDaemon();
  ollama = new Ollama({ host: d.url });
  const res = await createModelFromFile(d.url, "tiny", file, { system: "You are a tiny test model." });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: "success" });
}, 60_000);

afterAll(async () => {
  await d?.stop();
});

/** A raw connection that sends with `send`, reads nothing for 300 ms (the server answers and
 *  closes its side meanwhile), then `later` and reads everything until the server's end. */
async function readLate(send: (sock: import("node:net").Socket) => void, later?: (sock: import("node:net").Socket) => void): Promise<string> {
  const net = await import("node:net");
  const { port } = new URL(d.url);
  return new Promise<string>((resolve, reject) => {
    let got = "";
    const sock = net.connect(Number(port), "127.0.0.1", () => {
      sock.pause();
      send(sock);
      setTimeout(() => {
        later?.(sock);
        sock.setEncoding("utf8");
        sock.on("data", (t: string) => (got += t));
        sock.resume();
      }, 300);
    });
    sock.on("error", (e) => reject(new Error(`${e.message} after reading ${JSON.stringify(got)}`)));
    sock.on("end", () => {
      sock.destroy();
      resolve(got);
    });
    setTimeout(() => reject(new Error(`no end after ${JSON.stringify(got)}`)), 20_000).unref();
  });
}

describe("generate", () => {
  it("answers non-streamed with content and stats", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "Tell me a story", options: opts, stream: false });
    expect(r.model).toBe("tiny");
    expect(r.response?.length).toBeGreaterThan(0);
    expect(r.done).toBe(true);
    expect(["stop", "length"]).toContain(r.done_reason);
    expect(r.eval_count).toBeGreaterThan(0);
    expect(r.eval_count).toBeLessThanOrEqual(12);
    expect(r.prompt_eval_count).toBeGreaterThan(0);
    for (const k of ["total_duration", "load_duration", "prompt_eval_duration", "eval_duration"] as const) {
      expect(Number.isInteger(r[k])).toBe(true);
      expect(r[k]).toBeGreaterThan(0);
    }
    expect(r.total_duration).toBeGreaterThanOrEqual(r.load_duration);
    expect(Array.isArray(r.context) && r.context.length).toBeGreaterThan(r.prompt_eval_count);
    expect(new Date(r.created_at).getTime()).not.toBeNaN();
  });

  it("streams chunks whose text equals the non-streamed answer for the same seed", async () => {
    await ollama.generate({ model: "tiny", prompt: "Same seed", options: opts, stream: false }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const whole = await ollama.generate({ model: "tiny", prompt: "Same seed", options: opts, stream: false });
    const stream = await ollama.generate({ model: "tiny", prompt: "Same seed", options: opts, stream: true });
    let text = "";
    let chunks = 0;
    let last;
    for await (const ch of stream) {
      chunks++;
      text += ch.response;
      last = ch;
    }
    expect(chunks).toBeGreaterThan(1);
    expect(last?.done).toBe(true);
    expect(last?.eval_count).toBe(whole.eval_count);
    expect(text).toBe(whole.response);
  });

  it("different seeds give different text; the model echo is exact", async () => {
    const a = await ollama.generate({ model: "tiny:latest", prompt: "Seeds", options: { ...opts, seed: 1, num_predict: 24 }, stream: false });
    const b = await ollama.generate({ model: "tiny:latest", prompt: "Seeds", options: { ...opts, seed: 2, num_predict: 24 }, stream: false });
    expect(a.model).toBe("tiny:latest");
    expect(a.response).not.toBe(b.response);
  });

  it("num_predict ends with done_reason length", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "Count", options: { ...opts, num_predict: 3 }, stream: false });
    expect(r.eval_count).toBeLessThanOrEqual(3);
    if (r.eval_count === 3) expect(r.done_reason).toBe("length");
  });

  it("loads with an empty prompt and unloads with keep_alive 0", async () => {
    const load = await ollama.generate({ model: "tiny", prompt: "", stream: false });
    expect(load.done_reason).toBe("load");
    expect((await ollama.ps()).models.map((m) => m.name)).toContain("tiny:latest");
    const unload = await ollama.generate({ model: "tiny", prompt: "", keep_alive: 0, stream: false });
    expect(unload.done_reason).toBe("unload");
    expect((await ollama.ps()).models).toHaveLength(0);
  });
});

describe("chat", () => {
  it("answers with a system prompt, non-streamed and streamed, deterministically", async () => {
    const messages = [
      { role: "system", content: "You are terse." },
      { role: "user", content: "Hi there" },
    ];
    await ollama.chat({ model: "tiny", messages, options: opts, stream: false }); // asked once first: compared answers both find the prompt in the cache (README, "Same seed, same text")
    const a = await ollama.chat({ model: "tiny", messages, options: opts, stream: false });
    const b = await ollama.chat({ model: "tiny", messages, options: opts, stream: false });
    expect(a.message.role).toBe("assistant");
    expect(a.message.content.length).toBeGreaterThan(0);
    expect(a.message.content).toBe(b.message.content);
    expect(a.done).toBe(true);
    expect(a.eval_count).toBeGreaterThan(0);
    expect(a.prompt_eval_count).toBeGreaterThan(0);

    const stream = await ollama.chat({ model: "tiny", messages, options: opts, stream: true });
    let text = "";
    let final;
    for await (const ch of stream) {
      expect(ch.message.role).toBe("assistant");
      expect(typeof ch.message.content).toBe("string");
      text += ch.message.content;
      final = ch;
    }
    expect(text).toBe(a.message.content);
    expect(final?.done_reason).toBeDefined();
    expect(final?.eval_duration).toBeGreaterThan(0);
  });

  it("the model's SYSTEM changes the prompt unless the request sends its own", async () => {
    const user = [{ role: "user", content: "Hello" }];
    const withModelSystem = await ollama.chat({ model: "tiny", messages: user, options: opts, stream: false });
    const withOwn = await ollama.chat({ model: "tiny", messages: [{ role: "system", content: "x" }, ...user], options: opts, stream: false });
    expect(withModelSystem.prompt_eval_count).not.toBe(withOwn.prompt_eval_count);
  });
});

describe("bad input", () => {
  const post = (p: string, body: string) => fetch(`${d.url}${p}`, { method: "POST", body });

  it("malformed JSON and empty bodies are 400 with an error message", async () => {
    const r = await post("/api/generate", "{nope");
    expect(r.status).toBe(400);
    expect((await errorOf(r))).toMatch(/invalid JSON/);
    const e = await post("/api/chat", "");
    expect(e.status).toBe(400);
    expect(await e.json() as unknown).toEqual({ error: "missing request body" });
  });

  it("a body over 64 MiB is a 400 that reaches the client (declared or streamed), and the connection is closed", async () => {
    const http = await import("node:http");
    const LIMIT = 64 << 20;
    const send = (headers: Record<string, string | number>, chunks: number) =>
      new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
        const req = http.request(`${d.url}/api/generate`, { method: "POST", headers, agent: false }, (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (t: string) => (body += t));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
        });
        req.on("error", () => undefined); // the server stops reading: writes may fail after its answer
        const chunk = Buffer.alloc(1 << 20, 0x20);
        let i = 0;
        const pump = () => {
          while (i < chunks) {
            i++;
            if (!req.write(chunk)) return void req.once("drain", pump);
          }
          req.end();
        };
        setTimeout(() => reject(new Error("no answer")), 20_000).unref();
        pump();
      });
    const streamed = await send({ "Transfer-Encoding": "chunked" }, 80);
    expect(streamed.status).toBe(400);
    expect(streamed.connection).toBe("close");
    expect(JSON.parse(streamed.body)).toEqual({ error: `request body too large (limit ${LIMIT} bytes)` });
    const declared = await send({ "Content-Length": 100 << 20 }, 1);
    expect(declared.status).toBe(400);
    expect(declared.connection).toBe("close");
    expect(JSON.parse(declared.body)).toEqual({ error: `request body too large (limit ${LIMIT} bytes)` });
    const after = await post("/api/generate", JSON.stringify({ model: "tiny", prompt: "hi", options: { num_predict: 1 }, stream: false }));
    expect(after.status).toBe(200);
  });

  it("the 400 for a refused body survives a client that keeps sending and reads late (lingering close, no RST)", async () => {
    const answer = await readLate(
      (sock) => {
        sock.write(`POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${100 << 20}\r\n\r\n`);
        sock.write(Buffer.alloc(4 << 20, 0x20));
      },
      (sock) => sock.write(Buffer.alloc(1 << 20, 0x20), () => undefined),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain(`request body too large (limit ${64 << 20} bytes)`);
  });

  it("bytes after a request that are no HTTP (a body longer than its Content-Length) do not cut off its answer (fuzz seed 20 case 888)", async () => {
    const net = await import("node:net");
    const { port } = new URL(d.url);
    for (let i = 0; i < 5; i++) {
      const answer = await readLate((sock) => {
        sock.write("POST /api/pull HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n");
        sock.write(`{"model":"x","insecure":${'{"a":'.repeat(200_000)}`);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('{"error":"missing request body"}');
    }
    // garbage alone on a connection: a bare 400, and a header too large: 431, as Node answers them
    const raw = (text: string) =>
      new Promise<string>((resolve) => {
        let got = "";
        const sock = net.connect(Number(port), "127.0.0.1", () => sock.write(text));
        sock.setEncoding("utf8");
        sock.on("data", (t: string) => (got += t));
        sock.on("error", () => resolve(got));
        sock.on("end", () => (sock.destroy(), resolve(got)));
      });
    expect(await raw("NOT HTTP AT ALL\r\n\r\n")).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(await raw(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
  });

  it("an answer written before the body arrived reaches a client that asked to close (GET / with 16 MB, fuzz case 2555)", async () => {
    const http = await import("node:http");
    const body = Buffer.alloc(16 << 20, 0x20);
    const outcomes: string[] = [];
    for (let i = 0; i < 12; i++) {
      outcomes.push(
        await new Promise<string>((resolve) => {
          // agent: false sends "Connection: close": the daemon answers at once and closes
          const r = http.request(`${d.url}/`, { method: "GET", headers: { "content-length": body.length }, agent: false }, (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (t: string) => (text += t));
            res.on("end", () => resolve(`${res.statusCode} ${text}`));
          });
          r.on("error", (e: NodeJS.ErrnoException) => resolve(`error ${e.code}`));
          r.end(body);
        }),
      );
    }
    expect(outcomes).toEqual(new Array(12).fill("200 Ollama is running"));
  });

  it("a client that leaves in the middle of its body is no internal error; the daemon keeps serving", async () => {
    const net = await import("node:net");
    const { port } = new URL(d.url);
    await new Promise<void>((resolve) => {
      const sock = net.connect(Number(port), "127.0.0.1", () => {
        sock.write(`POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{"model":"tiny",`);
        setTimeout(() => {
          sock.destroy();
          resolve();
        }, 100);
      });
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(d.logs()).not.toMatch(/level=ERROR msg="internal error: the client closed/);
    expect(d.logs()).toMatch(/path=\/api\/generate status=400/);
    const after = await post("/api/generate", JSON.stringify({ model: "tiny", prompt: "hi", options: { num_predict: 1 }, stream: false }));
    expect(after.status).toBe(200);
  });

  it("a missing model is 404 with Ollama's message; an invalid name is 400", async () => {
    const r = await post("/api/generate", JSON.stringify({ model: "x", prompt: "hi" }));
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ error: "model 'x' not found" });
    await expect(ollama.chat({ model: "nope", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({ status_code: 404 });
    const bad = await post("/api/generate", JSON.stringify({ model: "bad name!", prompt: "hi" }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: "invalid model name" });
  });

  it("wrong option types get Ollama's 500 and words, on /api; /v1's string stop stays valid", async () => {
    const r = await post("/api/generate", JSON.stringify({ model: "tiny", prompt: "hi", options: { num_ctx: "big" } }));
    expect(r.status).toBe(500);
    expect((await errorOf(r))).toBe('option "num_ctx" must be of type integer');
    const s = await post("/api/chat", JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "hi" }], options: { stop: "\n" } }));
    expect(s.status).toBe(500);
    expect((await errorOf(s))).toBe('option "stop" must be of type array');
    await expect(ollama.generate({ model: "tiny", prompt: "hi", options: { temperature: "hot" as unknown as number } })).rejects.toMatchObject({
      status_code: 500,
      error: 'option "temperature" must be of type float32',
    });
    const v1 = await post("/v1/chat/completions", JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "hi" }], stop: "\n", max_tokens: 2 }));
    expect(v1.status).toBe(200);
  });

  it("unknown paths and wrong methods get Ollama's plain-text replies", async () => {
    const r = await fetch(`${d.url}/api/nope`);
    expect(r.status).toBe(404);
    expect(await r.text()).toBe("404 page not found");
    const m = await fetch(`${d.url}/api/generate`);
    expect(m.status).toBe(405);
  });
});

describe("connections", () => {
  it("an idle keep-alive connection stays open past Node's default 5 s, so a client reusing it is not reset", async () => {
    // Node's http.Agent keeps idle sockets without a timeout of its own: a server that closes
    // them after 5 s races every request sent at that moment ("socket hang up"). Ollama's Go
    // server keeps idle connections open.
    const net = await import("node:net");
    const sock = net.connect(Number(new URL(d.url).port), "127.0.0.1");
    let received = "";
    let ended = false;
    sock.setEncoding("utf8");
    sock.on("data", (t: string) => (received += t));
    sock.on("end", () => (ended = true));
    const answers = () => received.split("Ollama is running").length - 1;
    const until = async (test: () => boolean) => {
      for (let i = 0; i < 100 && !test(); i++) await new Promise((r) => setTimeout(r, 50));
    };
    const get = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    sock.write(get);
    await until(() => answers() === 1);
    await new Promise((r) => setTimeout(r, 6_500));
    expect(ended).toBe(false);
    sock.write(get);
    await until(() => answers() === 2);
    expect(answers()).toBe(2);
    sock.destroy();
  }, 20_000);

  it("an answer given before the body arrived tells the client not to reuse the connection", async () => {
    // A keep-alive client that sent its next request on it would meet the close that follows
    // (@hono/node-server discards what still arrives for 500 ms, then closes): "other side closed".
    const net = await import("node:net");
    const sock = net.connect(Number(new URL(d.url).port), "127.0.0.1");
    let received = "";
    sock.setEncoding("utf8");
    sock.on("data", (t: string) => (received += t));
    sock.on("error", () => undefined);
    // refused before its body is read: the digest is invalid
    sock.write("POST /api/blobs/sha256:nothex HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10000000\r\n\r\n");
    sock.write(Buffer.alloc(64 << 10));
    for (let i = 0; i < 100 && !received.includes("invalid digest format"); i++) await new Promise((r) => setTimeout(r, 50));
    expect(received).toMatch(/^HTTP\/1\.1 400 /);
    expect(received).toContain("invalid digest format");
    expect(received.toLowerCase()).toContain("connection: close");
    sock.destroy();
    // a request whose body was read keeps its connection
    const r = await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model: "nothing-here" }) });
    expect(r.status).toBe(404);
    expect(r.headers.get("connection")).not.toBe("close");
  });
});

describe("runner crash", () => {
  it("kill -9 of the runner mid-stream gives an error line; the daemon keeps serving", async () => {
    const stream = await ollama.generate({ model: "tiny", prompt: "A long story", options: { num_predict: 100000, num_ctx: 4096 }, stream: true });
    let killed = false;
    let error: Error | undefined;
    try {
      for await (const _ of stream) {
        if (!killed) {
          const pids = await childPids(d.proc.pid as number);
          expect(pids.length).toBeGreaterThan(0);
          for (const p of pids) process.kill(p, "SIGKILL");
          killed = true;
        }
      }
    } catch (err) {
      error = err as Error;
    }
    expect(killed).toBe(true);
    expect(error?.message).toMatch(/llama runner process has terminated/);
    const after = await ollama.generate({ model: "tiny", prompt: "Still there?", options: opts, stream: false });
    expect(after.response?.length).toBeGreaterThan(0);
    expect(d.proc.exitCode).toBeNull();
  }, 30_000);

  it("a client that disconnects mid-stream frees the slot for the next request", async () => {
    const stream = await ollama.generate({ model: "tiny", prompt: "Go on forever", options: { num_predict: 100000 }, stream: true });
    for await (const _ of stream) {
      stream.abort();
      break;
    }
    // With one slot, this would wait for the abandoned generation if its slot were not freed.
    const next = await ollama.generate({ model: "tiny", prompt: "Next", options: opts, stream: false });
    expect(next.eval_count).toBeGreaterThan(0);
  }, 30_000);
});

describe("create rejects bad files and leaves nothing behind", () => {
  it("a truncated GGUF is refused with 400 and no manifest or blob stays", async () => {
    const file = await makeTestModel({ shape: "tiny", type: "F16", seed: 3 });
    const { readFile } = await import("node:fs/promises");
    const bytes = await readFile(file);
    const truncated = bytes.subarray(0, Math.floor(bytes.length / 2));
    const { createHash } = await import("node:crypto");
    const digest = `sha256:${createHash("sha256").update(truncated).digest("hex")}`;
    const before = await readdir(path.join(d.models, "blobs"));
    const up = await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: truncated });
    expect(up.status).toBe(201);
    const r = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ model: "broken", files: { "m.gguf": digest } }) });
    expect(r.status).toBe(400);
    expect((await errorOf(r))).toMatch(/truncated/);
    expect(await readdir(path.join(d.models, "blobs"))).toEqual(before);
    const show = await fetch(`${d.url}/api/show`, { method: "POST", body: JSON.stringify({ model: "broken" }) });
    expect(show.status).toBe(404);
  });

  it("a digest that does not match the body is 400 and stores nothing", async () => {
    const before = await readdir(path.join(d.models, "blobs"));
    const digest = `sha256:${"0".repeat(64)}`;
    const r = await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: "not the right bytes" });
    expect(r.status).toBe(400);
    expect((await errorOf(r))).toMatch(/^digest mismatch, expected "sha256:0{64}", got "sha256:[0-9a-f]{64}"$/);
    expect(await readdir(path.join(d.models, "blobs"))).toEqual(before);
    const head = await fetch(`${d.url}/api/blobs/${digest}`, { method: "HEAD" });
    expect(head.status).toBe(404);
    const present = before.find((f) => f.startsWith("sha256-"))?.replace("-", ":");
    expect((await fetch(`${d.url}/api/blobs/${present}`, { method: "HEAD" })).status).toBe(200);
    const bad = await fetch(`${d.url}/api/blobs/sha256:..%2F..%2Fetc`, { method: "POST", body: "x" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: "invalid digest format" });
  });

  it("uploading a blob the store has answers 200 at once and the client's next request still works", async () => {
    const { readFile } = await import("node:fs/promises");
    const { sha256File } = await import("../helpers/daemon.js");
    const file = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
    const digest = await sha256File(file);
    const body = await readFile(file);
    for (let i = 0; i < 3; i++) {
      const up = await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body });
      expect(up.status).toBe(200);
      expect(up.headers.get("connection")).toBe("close");
      const version = await fetch(`${d.url}/api/version`);
      expect(version.status).toBe(200);
      expect(((await version.json()) as { version: string }).version).toMatch(/^\d+\.\d+\.\d+/);
    }
  });

  it("a fake GGUF (random bytes) is refused", async () => {
    const fake = Buffer.from("GGUF this is not really a model file at all".repeat(10));
    const { createHash } = await import("node:crypto");
    const digest = `sha256:${createHash("sha256").update(fake).digest("hex")}`;
    await fetch(`${d.url}/api/blobs/${digest}`, { method: "POST", body: fake });
    const r = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ model: "fake", files: { "f.gguf": digest }, stream: false }) });
    expect(r.status).toBe(400);
    expect((await errorOf(r))).toMatch(/GGUF/);
    const blobs = await readdir(path.join(d.models, "blobs"));
    expect(blobs).not.toContain(digest.replace(":", "-"));
  });
});

describe("listing", () => {
  it("/api/tags, /api/show and /api/version describe the created model", async () => {
    const tags = await ollama.list();
    const tiny = tags.models.find((m) => m.name === "tiny:latest");
    expect(tiny?.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(tiny?.size).toBeGreaterThan(10_000);
    expect(tiny?.details.family).toBe("llama");
    expect(tiny?.details.quantization_level).toBe("Q4_0");
    const show = await ollama.show({ model: "tiny" });
    expect(show.system).toBe("You are a tiny test model.");
    expect(show.capabilities).toContain("completion");
    expect(show.modelfile).toContain("FROM ");
    expect((show.model_info as unknown as Record<string, unknown>)["general.architecture"]).toBe("llama");
    expect((await ollama.version()).version).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe("prompt templates", () => {
  const render = async (path: string, body: object) => {
    const r = await fetch(`${d.url}${path}`, { method: "POST", body: JSON.stringify({ ...body, _debug_render_only: true }) });
    expect(r.status).toBe(200);
    return ((await r.json()) as { _debug_info: { rendered_template: string } })._debug_info.rendered_template;
  };
  const create = async (body: object) => {
    const r = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ ...body, stream: false }) });
    expect(r.status).toBe(200);
  };

  it("without a TEMPLATE the GGUF's Jinja chat template renders the conversation", async () => {
    const text = await render("/api/chat", { model: "tiny", messages: [{ role: "user", content: "Hi" }] });
    expect(text).toBe("<|im_start|>system\nYou are a tiny test model.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  });

  it("a Go messages template, the model's MESSAGEs and system are rendered as Ollama does", async () => {
    const template =
      "{{- range .Messages }}<|{{ .Role }}|>{{ .Content }}{{ if eq .Role \"user\" }}\n{{ end }}{{ end }}<|assistant|>";
    await create({ model: "tmpl-msgs", from: "tiny", template, system: "Be brief.", messages: [{ role: "user", content: "Earlier" }, { role: "assistant", content: "Ok" }] });
    const text = await render("/api/chat", { model: "tmpl-msgs", messages: [{ role: "user", content: "Now" }] });
    expect(text).toBe("<|system|>Be brief.<|user|>Earlier\n<|assistant|>Ok<|user|>Now\n<|assistant|>");
    const r = await ollama.chat({ model: "tmpl-msgs", messages: [{ role: "user", content: "Now" }], options: opts });
    expect(r.message.content.length).toBeGreaterThan(0);
  });

  it("a legacy .System/.Prompt/.Response template runs per turn (generate and chat)", async () => {
    const template = "{{ if .System }}S:{{ .System }}\n{{ end }}U:{{ .Prompt }}\nA:{{ .Response }}\n";
    await create({ model: "tmpl-legacy", from: "tiny", template, system: "" });
    const gen = await render("/api/generate", { model: "tmpl-legacy", prompt: "Q1", system: "sys" });
    expect(gen).toBe("S:sys\nU:Q1\nA:");
    const chat = await render("/api/chat", {
      model: "tmpl-legacy",
      messages: [
        { role: "user", content: "Q1" },
        { role: "assistant", content: "R1" },
        { role: "user", content: "Q2" },
      ],
    });
    expect(chat).toBe("U:Q1\nA:R1\nU:Q2\nA:");
  });

  it("a template that does not parse is refused at create with a 400", async () => {
    const r = await fetch(`${d.url}/api/create`, { method: "POST", body: JSON.stringify({ model: "tmpl-bad", from: "tiny", template: "{{ if .X }", stream: false }) });
    expect(r.status).toBe(400);
    expect(await errorOf(r)).toMatch(/^template error: template: :1: /);
  });
});
