// The setup the pull suites share: a real registry with the fault proxy in front, a model pushed
// to it through the proxy by a source daemon, and test daemons (fast retries, small transfer
// parts) with their temporary directories, all removed by stop().
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { makeTestModel } from "../../scripts/make-test-model.js";
import { createModelFromFile, startDaemon, type TestDaemon } from "./daemon.js";
import { postJson, registryEnv, startFaultProxy, startRegistry, type FaultProxy, type TestRegistry } from "./registry.js";

export interface PushedBlob {
  digest: string;
  size: number;
}

export class RegistryFixture {
  reg!: TestRegistry;
  proxy!: FaultProxy;
  home!: string;
  /** The source daemon that pushed the model. */
  src!: TestDaemon;
  /** `<proxy host>/test/small:latest` */
  model!: string;
  weights!: PushedBlob;
  config!: PushedBlob;
  private readonly daemons: TestDaemon[] = [];
  private readonly dirs: string[] = [];

  /** @param part transfer part size of the test daemons (OLLAMATS_TRANSFER_PART_SIZE) */
  constructor(readonly part: number) {}

  async start(): Promise<void> {
    this.reg = await startRegistry();
    this.proxy = await startFaultProxy(this.reg.url);
    this.home = await this.tempDir("ollamats-home-");
    this.src = await this.daemon();
    this.model = `${this.proxy.host}/test/small:latest`;
    const file = await makeTestModel({ shape: "small", type: "F16", seed: 1 });
    const created = await createModelFromFile(this.src.url, this.model, file);
    if (created.status !== 200) throw new Error(`create failed: ${await created.text()}`);
    const pushed = await postJson(`${this.src.url}/api/push`, { model: this.model, insecure: true, stream: false });
    if (pushed.status !== 200) throw new Error(`push failed: ${await pushed.text()}`);
    const m = JSON.parse(await readFile(path.join(this.src.models, "manifests", this.proxy.host, "test", "small", "latest"), "utf8")) as {
      config: PushedBlob;
      layers: Array<PushedBlob & { mediaType: string }>;
    };
    const w = m.layers.find((l) => l.mediaType === "application/vnd.ollama.image.model");
    if (!w) throw new Error("pushed manifest has no model layer");
    this.weights = { digest: w.digest, size: w.size };
    this.config = { digest: m.config.digest, size: m.config.size };
  }

  async daemon(extra: Record<string, string> = {}): Promise<TestDaemon> {
    const d = await startDaemon(registryEnv(this.home, { OLLAMATS_TRANSFER_PART_SIZE: String(this.part), ...extra }));
    this.daemons.push(d);
    return d;
  }

  /** Stop tracking a daemon that was killed (its stop() would wait for an exit already seen). */
  forget(d: TestDaemon): void {
    this.daemons.splice(this.daemons.indexOf(d), 1);
    this.dirs.push(d.models);
  }

  async tempDir(prefix: string): Promise<string> {
    const d = await mkdtemp(path.join(os.tmpdir(), prefix));
    this.dirs.push(d);
    return d;
  }

  /** POST /api/pull with stream:false. */
  pull(d: TestDaemon, model: string, extra: object = {}): Promise<Response> {
    return postJson(`${d.url}/api/pull`, { model, insecure: true, stream: false, ...extra });
  }

  async stop(): Promise<void> {
    for (const d of this.daemons) await d.stop().catch(() => undefined);
    await this.proxy?.stop();
    await this.reg?.stop();
    for (const d of this.dirs) await rm(d, { recursive: true, force: true });
  }
}

/** The part states saved in a store's blobs/ (`*-partial-<N>` files). */
export async function partStates(models: string): Promise<Array<{ N: number; Offset: number; Size: number; Completed: number }>> {
  const dir = path.join(models, "blobs");
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => /-partial-\d+$/.test(n));
  const out = [];
  for (const n of names) {
    try {
      out.push(JSON.parse(await readFile(path.join(dir, n), "utf8")));
    } catch {
      // being replaced right now
    }
  }
  return out;
}
