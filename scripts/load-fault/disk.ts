// Part 3, a full disk: OLLAMA_MODELS on a small file system of its own (small-fs.ts), filled so
// that a pull (refused up front, or with the disk filling up while it downloads), a blob upload,
// a create that quantizes, and a create that writes only small files (the disk completely full)
// run out of space. Each must fail with a clear error
// (a status, a one-line message saying the disk is full, no stack trace, no hang), the daemon
// stays up and still answers inference, the store verifies, the daemon starts clean on the full
// disk, and once the space is freed the same operation succeeds.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startFaultProxy, startRegistry, type FaultProxy } from "../../test/helpers/registry.js";
import { makeTestModel } from "../make-test-model.js";
import { launch, restartClean, shortLines, type Daemon } from "./daemon.js";
import { createStreamed, generateShort, partCompleted, uploadBlob, waitFor } from "./ops.js";
import { createModel, pullOnce, pushModel } from "./registry-seed.js";
import { Checks } from "./report.js";
import { mountSmallFs, type SmallFs } from "./small-fs.js";
import { describeStore, storeOk, verifyStore } from "./store-check.js";

const FS_MIB = 48;
const MiB = 1 << 20;

interface Answer {
  status: number;
  error?: string;
}

/** What is wrong with a failure's answer, or null when it is a clear "disk full" error. */
export function unclearError(a: Answer): string | null {
  if (a.status < 400) return `answered ${a.status} without an error`;
  if (!a.error) return `${a.status} without an error message`;
  if (/\n\s+at |node:internal|\.js:\d+/.test(a.error)) return `a stack trace: ${a.error.slice(0, 200)}`;
  // the daemon's words for it: refused up front, or out of space midway
  if (!/no space left on device|not enough disk space|disk quota exceeded/i.test(a.error)) return `does not say the disk is full: ${a.error.slice(0, 200)}`;
  return null;
}

interface DiskCase {
  name: string;
  /** Free bytes to leave before the operation. */
  leave: number;
  /** The operation; it may fill the disk itself (`fs`) while it runs. */
  run: (d: Daemon, fs: SmallFs) => Promise<Answer>;
  /** The same operation once space is free; returns what it did. */
  repeat: (d: Daemon) => Promise<string>;
}

async function asAnswer(res: Promise<{ status: number; body: Record<string, unknown> }>): Promise<Answer> {
  const r = await res;
  return { status: r.status, ...(typeof r.body.error === "string" ? { error: r.body.error } : {}) };
}

interface Pulls {
  /** A model the pre-check refuses (not enough free space for it). */
  name: string;
  /** Another one, pulled through the throttling proxy so the disk can fill midway. */
  slowName: string;
  proxy: FaultProxy;
}

function cases(pulls: Pulls, f32: string, inferModel: string): DiskCase[] {
  const pulled = async (d: Daemon, name: string) => {
    const r = await pullOnce(d, name);
    if (r.status !== 200) throw new Error(`pull: ${r.status} ${JSON.stringify(r.body)}`);
    return `pull succeeded in ${r.ms} ms`;
  };
  const created = (what: string) => async (d: Daemon, body: Record<string, unknown>) => {
    const r = await createStreamed(d, { ...body, stream: false });
    if (r.status !== 200 || r.lines.at(-1)?.status !== "success") throw new Error(`${what}: ${r.status} ${JSON.stringify(r.lines.at(-1))}`);
    return `${what} succeeded`;
  };
  let f32Digest = "";
  return [
    {
      name: "pull of a 10.6 MB layer with 4 MiB free",
      leave: 4 * MiB,
      run: (d) => asAnswer(pullOnce(d, pulls.name, 120_000)),
      repeat: (d) => pulled(d, pulls.name),
    },
    {
      name: "pull of a 10.6 MB layer, the disk filling up midway",
      leave: 24 * MiB,
      run: async (d, fs) => {
        pulls.proxy.faults = { throttleMs: 20 };
        const pending = asAnswer(pullOnce(d, pulls.slowName, 120_000));
        await waitFor("the pull's first saved bytes", 60_000, async () => ((await partCompleted(d.models)) > 0 ? true : undefined));
        await fs.fill(0);
        const a = await pending;
        pulls.proxy.reset();
        return a;
      },
      repeat: (d) => pulled(d, pulls.slowName),
    },
    {
      name: "blob upload of 21 MB with 8 MiB free",
      leave: 8 * MiB,
      run: async (d) => {
        const up = await uploadBlob(d, f32);
        f32Digest = up.digest;
        const r = await up.done;
        return { status: r.status, ...(r.text ? { error: (JSON.parse(r.text) as { error?: string }).error ?? r.text } : {}) };
      },
      repeat: async (d) => {
        const r = await (await uploadBlob(d, f32)).done;
        if (r.status !== 201) throw new Error(`upload: ${r.status} ${r.text}`);
        return "upload succeeded (201)";
      },
    },
    {
      name: "create quantizing F32 to Q4_0 with 1 MiB free",
      leave: 1 * MiB,
      run: async (d) => {
        const r = await createStreamed(d, { model: "disk/q4", files: { "m.gguf": f32Digest }, quantize: "q4_0", stream: false });
        const last = r.lines.at(-1) ?? {};
        return { status: r.status, ...(typeof last.error === "string" ? { error: last.error } : {}) };
      },
      // a failed create removes the uploads only it referenced, so it is repeated as the CLI
      // does it: upload (unless the blob is there), then create
      repeat: async (d) => {
        const up = await (await uploadBlob(d, f32)).done;
        return `upload ${up.status}, ${await created("create quantize")(d, { model: "disk/q4", files: { "m.gguf": f32Digest }, quantize: "q4_0" })}`;
      },
    },
    {
      name: "create of a system prompt layer with the disk full",
      leave: 0,
      run: async (d) => {
        const r = await createStreamed(d, { model: "disk/system", from: inferModel, system: "You are terse.", stream: false });
        const last = r.lines.at(-1) ?? {};
        return { status: r.status, ...(typeof last.error === "string" ? { error: last.error } : {}) };
      },
      repeat: (d) => created("create from a model")(d, { model: "disk/system", from: inferModel, system: "You are terse." }),
    },
  ];
}

async function runCase(c: Checks, fs: SmallFs, models: string, home: string, d: Daemon, k: DiskCase, inferModel: string): Promise<Daemon> {
  await fs.fill(k.leave);
  const t0 = Date.now();
  const a = await k.run(d, fs).catch((e: Error) => ({ status: 0, error: `request failed: ${e.message}` }));
  const took = Date.now() - t0;
  const problem = unclearError(a);
  c.add(`${k.name}: clear error`, problem === null, `${problem ?? `${a.status} ${JSON.stringify(a.error)}`} after ${took} ms`);
  c.add(`${k.name}: daemon up, inference answers`, d.alive() && (await generateShort(d, inferModel).then(() => true, () => false)), d.alive() ? "generate answered on the full disk" : "the daemon exited");
  const st = await verifyStore(models);
  c.add(`${k.name}: store verifies`, storeOk(st), describeStore(st));
  await d.stop();
  const { daemon, unclean } = await restartClean(models, home);
  c.add(`${k.name}: next start (disk still full) is clean`, unclean.length === 0, unclean.length ? shortLines(unclean) : "only INFO lines");
  await fs.unfill();
  await c.step(`${k.name}: succeeds once space is freed`, () => k.repeat(daemon));
  const end = await verifyStore(models);
  c.add(`${k.name}: store verifies at the end`, storeOk(end) && end.resumable.length === 0, describeStore(end));
  return daemon;
}

export async function runDisk(o: { log: (s: string) => void }): Promise<Checks> {
  const c = new Checks("disk");
  let small: SmallFs;
  try {
    small = await mountSmallFs(FS_MIB);
  } catch (e) {
    c.skip("a small file system as OLLAMA_MODELS", (e as Error).message);
    return c;
  }
  o.log(`  OLLAMA_MODELS on ${small.kind} at ${small.dir}`);
  const work = await mkdtemp(path.join(os.tmpdir(), "ollamats-disk-"));
  const reg = await startRegistry();
  const proxy = await startFaultProxy(reg.url);
  const daemons: Daemon[] = [];
  try {
    const f16 = await makeTestModel({ shape: "small", type: "F16", seed: 1 });
    const f32 = await makeTestModel({ shape: "small", type: "F32", seed: 1 });
    const tiny = await makeTestModel({ shape: "tiny", type: "Q4_0", seed: 1 });
    const src = await launch(path.join(work, "src-store"), work);
    daemons.push(src);
    const pulls: Pulls = { name: `${reg.host}/disk/pull:latest`, slowName: `${proxy.host}/disk/slow:latest`, proxy };
    await createModel(src, pulls.name, f16);
    await pushModel(src, pulls.name);
    await createModel(src, pulls.slowName, await makeTestModel({ shape: "small", type: "F16", seed: 2 }));
    await pushModel(src, pulls.slowName);
    await src.stop();

    const models = path.join(small.dir, "models");
    let d = await launch(models, work);
    daemons.push(d);
    const infer = "disk/tiny";
    await createModel(d, infer, tiny);
    for (const k of cases(pulls, f32, infer)) {
      d = await runCase(c, small, models, work, d, k, infer);
      daemons.push(d);
    }
  } finally {
    for (const d of daemons) await d.kill9();
    await proxy.stop();
    await reg.stop();
    await small.unmount();
    await rm(work, { recursive: true, force: true });
  }
  return c;
}
