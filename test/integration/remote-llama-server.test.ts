// A remote model on llama.cpp's own llama-server (two replicas, OpenAI API): chat and generate
// streamed, tokenize at the server's root, usage and timings as Ollama's stats, a conversation
// kept on the replica that holds its cache, and a replica killed (requests keep succeeding).
import { Ollama } from "ollama";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { llamaMetric, llamaServerBinary, startLlamaServer, type LlamaServer } from "../helpers/llama-server.js";

let servers: LlamaServer[] = [];
let d: TestDaemon;
let ollama: Ollama;
const options = { seed: 3, temperature: 0.7, num_predict: 12 };

beforeAll(async () => {
  llamaServerBinary(); // built once and cached (.ci/run builds it before the tests)
  const model = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  servers = [await startLlamaServer(model, { alias: "tiny" }), await startLlamaServer(model, { alias: "tiny" })];
  d = await startDaemon({ OLLAMA_REMOTES: "127.0.0.1", OLLAMATS_REMOTE_TIMEOUT: "60s" });
  ollama = new Ollama({ host: d.url });
  const r = await fetch(`${d.url}/api/create`, {
    method: "POST",
    body: JSON.stringify({ model: "ls", from: "tiny", remote_host: servers.map((s) => `${s.url}/v1`).join(","), stream: false }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
}, 60 * 60_000);

afterAll(async () => {
  await d?.stop();
  await Promise.all(servers.map((s) => s.stop()));
});

describe("a remote model on two llama-server replicas", { timeout: 120_000 }, () => {
  it("chat streams what llama-server generates, with its usage as Ollama's counts", async () => {
    let text = "";
    let last;
    for await (const ch of await ollama.chat({ model: "ls", messages: [{ role: "user", content: "Hello" }], options, stream: true })) {
      text += ch.message.content;
      last = ch;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(last).toMatchObject({ done: true, eval_count: 12, done_reason: "length" });
    expect(last?.prompt_eval_count).toBeGreaterThan(0);
    expect(last?.eval_duration).toBeGreaterThan(0);
    const g = await ollama.generate({ model: "ls", prompt: "Once", raw: true, options, stream: false });
    expect(g.response?.length).toBeGreaterThan(0);
  });

  it("tokenize comes from llama-server's own tokenizer", async () => {
    const direct = (await (await fetch(`${servers[0]!.url}/tokenize`, { method: "POST", body: JSON.stringify({ content: "hello world" }) })).json()) as { tokens: number[] };
    const via = (await (await fetch(`${d.url}/api/tokenize`, { method: "POST", body: JSON.stringify({ model: "ls", content: "hello world" }) })).json()) as { tokens: number[] };
    expect(via.tokens).toEqual(direct.tokens);
  });

  it("the turns of a conversation land on the replica that holds its cache", async () => {
    const before = await Promise.all(servers.map((s) => llamaMetric(s.url, "prompt_tokens_total")));
    const messages = [{ role: "system", content: `conversation ${Date.now()}: ` + "long shared context ".repeat(40) }, { role: "user", content: "turn one" }];
    let evaluated = 0;
    let total = 0;
    for (let turn = 0; turn < 4; turn++) {
      const r = await ollama.chat({ model: "ls", messages, options, stream: false });
      total += r.prompt_eval_count ?? 0;
      messages.push(r.message, { role: "user", content: `turn ${turn + 2}` });
    }
    const after = await Promise.all(servers.map((s) => llamaMetric(s.url, "prompt_tokens_total")));
    evaluated = after.reduce((a, x, i) => a + x - before[i]!, 0);
    // Each turn after the first evaluates only its new messages: most of the prompt came from cache.
    expect(evaluated).toBeLessThan(total * 0.5);
  });

  it("a replica killed: every request still succeeds", async () => {
    await servers[0]!.stop();
    for (let i = 0; i < 4; i++) {
      const r = await ollama.chat({ model: "ls", messages: [{ role: "user", content: `still there ${i}?` }], options, stream: false });
      expect(r.done).toBe(true);
    }
    expect((await fetch(`${d.url}/api/version`)).status).toBe(200);
  });
});
