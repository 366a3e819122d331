// A client that goes away before its answer (a timeout, a closed tab) is not a server fault: the
// request ends as canceled (499 in the request log), with no ERROR line, whether it waited for a
// slot or was generating, and whichever route it used.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { waitFor } from "../../scripts/load-fault/ops.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  d = await startDaemon({ OLLAMA_NUM_PARALLEL: "1" });
  expect((await createModelFromFile(d.url, "tiny", await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }))).status).toBe(200);
});

afterAll(async () => {
  await d?.stop();
});

/** Sends a request that the client abandons after `ms`. */
async function abandoned(path: string, body: object, ms: number): Promise<void> {
  const ac = new AbortController();
  const pending = fetch(`${d.url}${path}`, { method: "POST", body: JSON.stringify(body), signal: ac.signal }).then((r) => r.text());
  pending.catch(() => undefined);
  await sleep(ms);
  ac.abort();
  await pending.catch(() => undefined);
}

const forever = { num_predict: 100000 };

describe("a client that goes away", () => {
  it("is logged as canceled, not as an internal error, while waiting for the slot and while generating", async () => {
    // holds the only slot: a stream whose client reads one line and then nothing
    const holder = new AbortController();
    const res = await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "tiny", prompt: "hold", options: forever }), signal: holder.signal });
    const reader = res.body!.getReader();
    await reader.read();
    await abandoned("/api/generate", { model: "tiny", prompt: "waits", stream: false, options: forever }, 500);
    await abandoned("/api/chat", { model: "tiny", messages: [{ role: "user", content: "waits" }], stream: false, options: forever }, 500);
    await abandoned("/v1/chat/completions", { model: "tiny", messages: [{ role: "user", content: "waits" }], max_tokens: 100000 }, 500);
    holder.abort();
    // the slot is free now: these are generating when their clients leave
    await abandoned("/api/generate", { model: "tiny", prompt: "runs", stream: false, options: forever }, 1500);
    await abandoned("/v1/completions", { model: "tiny", prompt: "runs", max_tokens: 100000 }, 1500);

    const lines = await waitFor("six request lines", 10_000, async () => {
      const l = d.logs().split("\n").filter((x) => /msg=request method=POST path=\/(api\/generate|api\/chat|v1\/chat\/completions|v1\/completions) /.test(x));
      return l.length >= 6 ? l : undefined;
    });
    expect(d.logs()).not.toMatch(/level=ERROR/);
    expect(lines.filter((l) => /status=499 /.test(l))).toHaveLength(5);
    expect(lines.filter((l) => /status=200 .*canceled=true/.test(l))).toHaveLength(1); // the stream that held the slot
    // and the daemon still answers
    const r = await fetch(`${d.url}/api/generate`, { method: "POST", body: JSON.stringify({ model: "tiny", prompt: "next", stream: false, options: { num_predict: 4 } }) });
    expect(r.status).toBe(200);
  }, 60_000);
});
