// Part 2, kill -9: the daemon is killed (SIGKILL, no cleanup) in the middle of a blob upload, of
// a create that quantizes F32 → Q4_0, and of a pull of a 21 MB layer (slowed by the fault proxy so
// the kill lands mid-body, with a runner loaded, which must not outlive it). After each kill the
// daemon starts again on the same OLLAMA_MODELS: the start must be clean, the store must verify
// (only Ollama's resumable `-partial` downloads may remain), and the operation, repeated, succeeds.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { childPids } from "../../test/helpers/daemon.js";
import { startFaultProxy, startRegistry } from "../../test/helpers/registry.js";
import { makeTestModel } from "../make-test-model.js";
import { launch, restartClean, shortLines, type Daemon } from "./daemon.js";
import { createStreamed, generateShort, largestFile, partCompleted, uploadBlob, waitFor } from "./ops.js";
import { createModel, pullOnce, pushModel } from "./registry-seed.js";
import { Checks } from "./report.js";
import { describeStore, storeOk, verifyStore } from "./store-check.js";

interface Ctx {
  c: Checks;
  home: string;
  log: (s: string) => void;
  daemons: Daemon[];
}

/** After a kill: start again on the store; checks the start and the store; returns the daemon. */
async function restartAfterKill(ctx: Ctx, label: string, models: string): Promise<Daemon> {
  const { daemon, unclean } = await restartClean(models, ctx.home);
  ctx.daemons.push(daemon);
  ctx.c.add(`${label}: next start is clean`, unclean.length === 0, unclean.length ? shortLines(unclean) : "only INFO lines");
  // what the dead writer left goes once its locks are stale (10 s after the kill)
  const t0 = Date.now();
  let store = await verifyStore(models);
  while (!storeOk(store) && Date.now() - t0 < 20_000) {
    await new Promise((r) => setTimeout(r, 500));
    store = await verifyStore(models);
  }
  ctx.c.add(`${label}: store verifies after the kill`, storeOk(store), `${describeStore(store)} (${((Date.now() - t0) / 1000).toFixed(1)} s after the restart)`);
  return daemon;
}

async function killDuringUpload(ctx: Ctx, models: string, file: string): Promise<Daemon> {
  const d = await launch(models, ctx.home);
  ctx.daemons.push(d);
  const up = await uploadBlob(d, file, { chunk: 64 << 10, delayMs: 10 });
  up.done.catch(() => undefined);
  const got = await waitFor("the upload's temp file to pass 2 MB", 60_000, async () => {
    const n = await largestFile(path.join(models, "blobs"), /partial-tmp/);
    return n !== undefined && n > 2 << 20 ? n : undefined;
  });
  await d.kill9();
  ctx.log(`  upload: killed with ${(got / 1e6).toFixed(1)} MB of ${path.basename(file)} written`);
  return restartAfterKill(ctx, "kill during blob upload", models);
}

async function killDuringQuantize(ctx: Ctx, d: Daemon, models: string, file: string): Promise<{ daemon: Daemon; repeat: () => Promise<string> }> {
  const up = await uploadBlob(d, file);
  const uploaded = await up.done;
  const repeatUpload = `${uploaded.status}`;
  const body = { model: "kill/quantized", files: { [path.basename(file)]: up.digest }, quantize: "q4_0" };
  const pending = createStreamed(d, body).catch(() => undefined);
  const got = await waitFor("the quantizer's temp file", 60_000, async () => {
    const n = await largestFile(path.join(models, "blobs"), /^\.quantize-.*\.tmp$/);
    return n !== undefined && n > 0 ? n : undefined;
  });
  await d.kill9();
  await pending;
  ctx.log(`  create: upload repeated (${repeatUpload}), killed while quantizing with ${(got / 1e6).toFixed(1)} MB written`);
  const daemon = await restartAfterKill(ctx, "kill during create (quantize)", models);
  return {
    daemon,
    repeat: async () => {
      const again = await uploadBlob(daemon, file);
      const u = await again.done;
      const t0 = Date.now();
      const r = await createStreamed(daemon, body);
      const last = r.lines.at(-1);
      if (r.status !== 200 || last?.status !== "success") throw new Error(`create: ${r.status} ${JSON.stringify(last)}`);
      const text = await generateShort(daemon, "kill/quantized");
      return `upload ${u.status}, create quantize q4_0 succeeded in ${Date.now() - t0} ms, generate answers ${JSON.stringify(text)}`;
    },
  };
}

export async function runKill(o: { log: (s: string) => void }): Promise<Checks> {
  const c = new Checks("kill");
  const work = await mkdtemp(path.join(os.tmpdir(), "ollamats-kill-"));
  const reg = await startRegistry();
  const proxy = await startFaultProxy(reg.url);
  const ctx: Ctx = { c, home: work, log: o.log, daemons: [] };
  try {
    const f32 = await makeTestModel({ shape: "small", type: "F32", seed: 1 });
    const tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });

    // create: upload, then quantize, each killed, then repeated
    const store = path.join(work, "create-store");
    const d1 = await killDuringUpload(ctx, store, f32);
    const q = await killDuringQuantize(ctx, d1, store, f32);
    await c.step("create repeated after the kills succeeds", q.repeat);
    const after = await verifyStore(store);
    c.add("create: store verifies at the end", storeOk(after) && after.resumable.length === 0, describeStore(after));
    await q.daemon.stop();

    // pull: a 21 MB layer through the throttling proxy, killed mid-body with a runner loaded
    const src = await launch(path.join(work, "src-store"), work);
    ctx.daemons.push(src);
    const big = `${proxy.host}/kill/big:latest`;
    await createModel(src, big, f32);
    await pushModel(src, big);
    await src.stop();
    const pullStore = path.join(work, "pull-store");
    const d = await launch(pullStore, work);
    ctx.daemons.push(d);
    await createModel(d, "kill/tiny", tiny);
    await generateShort(d, "kill/tiny");
    const runners = await childPids(d.pid);
    proxy.faults = { throttleMs: 20 };
    const pending = pullOnce(d, big).catch(() => undefined);
    await waitFor("pull part states with 1 MB done", 60_000, async () => ((await partCompleted(pullStore)) > 1 << 20 ? true : undefined));
    await d.kill9();
    await pending;
    o.log(`  pull: killed with ${((await partCompleted(pullStore)) / 1e6).toFixed(1)} MB saved as done`);
    await c.step("pull: runners exit with the killed daemon", async () => {
      await waitFor("the runners to exit", 15_000, async () => ((await Promise.all(runners.map(alive))).some(Boolean) ? undefined : true));
      return `${runners.length} runner(s) gone`;
    });
    const d2 = await restartAfterKill(ctx, "kill during pull", pullStore);
    proxy.reset();
    await c.step("pull repeated after the kill succeeds", async () => {
      const r = await pullOnce(d2, big);
      if (r.status !== 200 || r.body.status !== "success") throw new Error(`pull: ${r.status} ${JSON.stringify(r.body)}`);
      const text = await generateShort(d2, big);
      const fetched = [...proxy.blobBytes.values()].reduce((a, b) => a + b, 0);
      return `succeeded in ${r.ms} ms fetching ${(fetched / 1e6).toFixed(1)} MB (resumed), generate answers ${JSON.stringify(text)}`;
    });
    const end = await verifyStore(pullStore);
    c.add("pull: store verifies at the end", storeOk(end) && end.resumable.length === 0, describeStore(end));
  } finally {
    for (const d of ctx.daemons) await d.kill9();
    await proxy.stop();
    await reg.stop();
    await rm(work, { recursive: true, force: true });
  }
  return c;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
