// A conversation's template renders in a worker thread: a render that runs to its time budget
// (a template that loops over the messages within loops over them) holds neither the daemon's
// other requests nor its streams, and ends in the same 400 it would inline; the thread is there
// for the next render, and a template's own errors come back as they did.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";

let d: TestDaemon;

// three loops deep over the messages: 300 messages make 27 million steps, far past the budget
const SLOW = "{{ range .Messages }}{{ range $.Messages }}{{ range $.Messages }}.{{ end }}{{ end }}{{ end }}";
const PLAIN = "{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}<assistant>";
const FAILING = "{{ range .Messages }}{{ .Content.Nope }}{{ end }}";

beforeAll(async () => {
  const gguf = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
  // render threads end 300 ms after their last render here (a minute by default)
  d = await startDaemon({ OLLAMATS_RENDER_IDLE_MS: "300" });
  for (const [name, template] of [
    ["slow", SLOW],
    ["plain", PLAIN],
    ["failing", FAILING],
  ]) {
    expect((await createModelFromFile(d.url, name!, gguf, { template })).status).toBe(200);
  }
}, 120_000);

afterAll(async () => {
  await d?.stop();
});

const render = (model: string, messages: Array<{ role: string; content: string }>) =>
  fetch(`${d.url}/api/chat`, { method: "POST", body: JSON.stringify({ model, messages, stream: false, _debug_render_only: true }) });

describe("templates render off the event loop", () => {
  it("a render that runs to its budget is stopped with a 400, while the daemon answers other requests", async () => {
    // 1,000 messages: a budget of 750 ms, which the render runs to
    const messages = Array.from({ length: 1000 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `m${i}` }));
    const start = performance.now();
    let pending = true;
    const slow = render("slow", messages).then(async (r) => {
      pending = false;
      return { status: r.status, body: (await r.json()) as { error?: string } };
    });
    // the longest wait for another request's answer while the render runs: the render's whole
    // time, were it on the event loop
    let last = start;
    let longest = 0;
    while (pending) {
      const r = await fetch(`${d.url}/api/version`);
      expect(r.status).toBe(200);
      await r.json();
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }
    const took = performance.now() - start;
    const got = await slow;
    expect(got.status).toBe(400);
    expect(got.body.error).toMatch(/^template error: the template ran longer than \d+ ms and was stopped$/);
    expect(took).toBeGreaterThan(700);
    expect(longest).toBeLessThan(took / 2);
  });

  it("the render thread is there for the next render; a template's own error comes back as a 400", async () => {
    const r = await render("plain", [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: "bye" },
    ]);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { _debug_info: { rendered_template: string } };
    expect(body._debug_info.rendered_template).toBe("<user>hi<assistant>hello<user>bye<assistant>");
    const bad = await render("failing", [{ role: "user", content: "hi" }]);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/^template error: /);
  });

  it("a thread that ended idle is started again for the next render", async () => {
    const messages = [{ role: "user", content: "hi" }];
    expect((await render("plain", messages)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 800));
    const r = await render("plain", messages);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { _debug_info: { rendered_template: string } })._debug_info.rendered_template).toBe("<user>hi<assistant>");
    expect(d.logs()).not.toMatch(/renderer (ended|stopped)/);
  });

  it("a truncated conversation renders there too, and the model answers it", async () => {
    const messages = Array.from({ length: 200 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `message number ${i} with a few words in it` }));
    const r = await fetch(`${d.url}/api/chat`, {
      method: "POST",
      body: JSON.stringify({ model: "plain", messages, stream: false, options: { num_ctx: 256, num_predict: 2, seed: 1 } }),
    });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { done: boolean; prompt_eval_count: number };
    expect(body.done).toBe(true);
    // the oldest messages were dropped until the prompt fit the 256-token context
    expect(body.prompt_eval_count).toBeGreaterThan(0);
    expect(body.prompt_eval_count).toBeLessThan(256);
  });
});
