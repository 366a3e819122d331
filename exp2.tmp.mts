import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os"; import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Agent, request } from "undici";
import { parseModelName } from "./src/registry/name.js";
import { pullModel } from "./src/registry/pull.js";
import { pushModel } from "./src/registry/push.js";
import { MEDIA_TYPE_CONFIG, MEDIA_TYPE_MANIFEST, MEDIA_TYPE_MODEL, Store } from "./src/registry/store.js";
import { startRegistry } from "./test/helpers/registry.js";
const file = "/work/main/.cache/models/1b-Q4_0-s1.gguf";
let t0 = performance.now();

const digest = "sha256:" + (await (async () => { const h = createHash("sha256"); for await (const c of createReadStream(file, { highWaterMark: 1 << 22 })) h.update(c as Buffer); return h.digest("hex"); })());
const reg = await startRegistry();
const work = await mkdtemp(path.join(os.tmpdir(), "exp-"));
const seed = new Store(path.join(work, "seed"));
await seed.writeBlobStream(digest, createReadStream(file, { highWaterMark: 1 << 22 }));
const cfg = await seed.writeBlobBytes("{}");
const size = (await stat(file)).size;
const name = parseModelName(`${reg.host}/bench/pull:latest`)!;
await seed.writeManifest(name, { schemaVersion: 2, mediaType: MEDIA_TYPE_MANIFEST, config: { mediaType: MEDIA_TYPE_CONFIG, ...cfg }, layers: [{ mediaType: MEDIA_TYPE_MODEL, digest, size }] });
await pushModel(seed, name, { insecure: true }, () => undefined);
for (let r = 0; r < 8; r++) {
  (globalThis as any).TUNING = [{}, { initialConnections: 16 }][r % 2];
  const dir = await mkdtemp(path.join(work, "plain-"));
  const disp = new Agent();
  t0 = performance.now(); const p0 = process.cpuUsage();
  const res = await request(`${reg.url}/v2/bench/pull/blobs/${digest}`, { dispatcher: disp });
  await pipeline(res.body, createWriteStream(path.join(dir, "x")));
  const pu = process.cpuUsage(p0); console.log("plain", (performance.now() - t0).toFixed(0), "cpu", ((pu.user + pu.system) / 1000).toFixed(0)); await disp.close(); await rm(dir, { recursive: true });
  const store = new Store(await mkdtemp(path.join(work, "s-")));
  t0 = performance.now(); const c0 = process.cpuUsage();
  await pullModel(store, name, { insecure: true, tuning: (globalThis as any).TUNING }, () => undefined);
  const cu = process.cpuUsage(c0); console.log("pull", JSON.stringify((globalThis as any).TUNING), (performance.now() - t0).toFixed(0), "cpu", ((cu.user + cu.system) / 1000).toFixed(0));
  await rm(store.root, { recursive: true });
}
await reg.stop(); await rm(work, { recursive: true });
