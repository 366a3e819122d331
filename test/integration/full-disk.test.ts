// A full disk under OLLAMA_MODELS (a small tmpfs: the tests need root to mount it, as CI has):
// an upload and a create that run out of space answer with one clear line that says what to do,
// streamed or not, no temp file stays, and the daemon keeps answering.
import { readdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createStreamed, uploadBlob } from "../../scripts/load-fault/ops.js";
import { mountSmallFs, type SmallFs } from "../../scripts/load-fault/small-fs.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "../helpers/daemon.js";
import { need } from "../helpers/need.js";

const FULL = /^no space left on device: free disk space where the models are stored \(OLLAMA_MODELS\), then try again$/;

let small: SmallFs | undefined;
let d: TestDaemon;
let models: string;

beforeAll(async () => {
  small = await mountSmallFs(24).catch(() => undefined);
  if (!small) return;
  models = path.join(small.dir, "models");
  d = await startDaemon({ OLLAMA_MODELS: models });
  expect((await createModelFromFile(d.url, "tiny", await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 }))).status).toBe(200);
});

afterAll(async () => {
  await d?.stop();
  await small?.unmount();
});

describe("a full disk", () => {
  it("a blob upload that runs out of space: 500 with a clear message, no temp file", async () => {
    need(small, "a small tmpfs as OLLAMA_MODELS (mount -t tmpfs)");
    await small.fill(4 << 20);
    try {
      const up = await uploadBlob(d, await makeTestModel({ shape: "small", type: "F16", seed: 1 }));
      const r = await up.done;
      expect(r.status).toBe(500);
      expect((JSON.parse(r.text) as { error: string }).error).toMatch(FULL);
      expect((await readdir(path.join(models, "blobs"))).every((n) => /^sha256-[0-9a-f]{64}$/.test(n))).toBe(true);
    } finally {
      await small.unfill();
    }
  });

  it("a create with the disk full: the same message, as a status or as the stream's last line", async () => {
    need(small, "a small tmpfs as OLLAMA_MODELS (mount -t tmpfs)");
    await small.fill(0);
    try {
      const plain = await createStreamed(d, { model: "terse", from: "tiny", system: "Be terse.", stream: false });
      expect(plain.status).toBe(500);
      expect(plain.lines).toEqual([{ error: expect.stringMatching(FULL) }]);
      const streamed = await createStreamed(d, { model: "terse", from: "tiny", system: "Be terse." });
      expect(streamed.lines.at(-1)).toEqual({ error: expect.stringMatching(FULL) });
    } finally {
      await small.unfill();
    }
    expect((await fetch(d.url)).status).toBe(200);
    const again = await createStreamed(d, { model: "terse", from: "tiny", system: "Be terse.", stream: false });
    expect(again.lines).toEqual([{ status: "success" }]);
  });
});
