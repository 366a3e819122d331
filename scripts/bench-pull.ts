// Pull throughput: the Llama-3.2-1B-shaped Q4_0 test model (~620 MB) pulled from a loopback
// docker-registry by pullModel (parallel ranged requests, digest verified during the download,
// fsync before the rename, resumable partials) versus a plain undici download of the same blobs
// to files (one request per blob, no hashing, no fsync). Both write to the same file system;
// the two sides alternate round by round and the median of each side is reported, so a noisy
// neighbour hurts both alike. Target: pull ≥ 0.8 × plain undici.
//
//   tsx scripts/bench-pull.ts            (needs /usr/bin/docker-registry)
//
// `benchPull()` is what `npm run bench` calls.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { pathToFileURL } from "node:url";
import { Agent, request } from "undici";
import { parseModelName } from "../src/registry/name.js";
import { pullModel } from "../src/registry/pull.js";
import { pushModel } from "../src/registry/push.js";
import { MEDIA_TYPE_CONFIG, MEDIA_TYPE_MANIFEST, MEDIA_TYPE_MODEL, Store } from "../src/registry/store.js";
import { startRegistry } from "../test/helpers/registry.js";
import { makeTestModel } from "./make-test-model.js";
import { nowMs } from "./bench-plan.js";

export interface PullBench {
  pullMBps: number;
  undiciMBps: number;
  ratio: number;
  bytes: number;
  rounds: number;
}


async function sha256(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const c of createReadStream(file, { highWaterMark: 1 << 22 })) h.update(c as Buffer);
  return `sha256:${h.digest("hex")}`;
}

/** Plain undici: GET every blob and stream it to a file, one after the other. */
async function undiciDownload(base: string, repo: string, digests: string[], dir: string): Promise<void> {
  const dispatcher = new Agent();
  try {
    for (const d of digests) {
      const res = await request(`${base}/v2/${repo}/blobs/${d}`, { dispatcher });
      if (res.statusCode !== 200) throw new Error(`GET blob ${d}: ${res.statusCode}`);
      await pipeline(res.body, createWriteStream(path.join(dir, d.replace(":", "-"))));
    }
  } finally {
    await dispatcher.close();
  }
}

export async function benchPull(opts: { rounds?: number; log?: (s: string) => void } = {}): Promise<PullBench> {
  const rounds = opts.rounds ?? 5;
  const log = opts.log ?? ((s: string) => console.log(s));
  const file = await makeTestModel({ shape: "1b", type: "Q4_0", seed: 1 });
  const reg = await startRegistry();
  const work = await mkdtemp(path.join(os.tmpdir(), "ollamats-bench-pull-"));
  try {
    // Seed the registry: a store holding the model, pushed through the registry protocol.
    const seed = new Store(path.join(work, "seed"));
    const digest = await sha256(file);
    await seed.writeBlobStream(digest, createReadStream(file, { highWaterMark: 1 << 22 }));
    const cfg = await seed.writeBlobBytes(JSON.stringify({ model_format: "gguf", model_family: "llama", model_families: ["llama"], model_type: "1B", file_type: "Q4_0", architecture: "amd64", os: "linux", rootfs: { type: "layers", diff_ids: [digest] } }));
    const size = (await stat(file)).size;
    const name = parseModelName(`${reg.host}/bench/pull:latest`)!;
    await seed.writeManifest(name, {
      schemaVersion: 2,
      mediaType: MEDIA_TYPE_MANIFEST,
      config: { mediaType: MEDIA_TYPE_CONFIG, ...cfg },
      layers: [{ mediaType: MEDIA_TYPE_MODEL, digest, size }],
    });
    await pushModel(seed, name, { insecure: true }, () => undefined);
    await rm(path.join(work, "seed"), { recursive: true, force: true });
    const bytes = size + cfg.size;
    log(`pull bench: ${(bytes / 1e6).toFixed(0)} MB from docker-registry at ${reg.url}`);

    const pulls: number[] = [];
    const plains: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const plainDir = await mkdtemp(path.join(work, "plain-"));
      let t = nowMs();
      await undiciDownload(reg.url, "bench/pull", [digest, cfg.digest], plainDir);
      const plainMs = nowMs() - t;
      await rm(plainDir, { recursive: true, force: true });

      const store = new Store(await mkdtemp(path.join(work, "store-")));
      t = nowMs();
      await pullModel(store, name, { insecure: true, noPrune: true }, () => undefined);
      const pullMs = nowMs() - t;
      if ((await sha256(store.blobPath(digest))) !== digest) throw new Error("pulled blob does not verify");
      await rm(store.root, { recursive: true, force: true });
      log(`  round ${r + 1}: pull ${(bytes / 1e3 / pullMs).toFixed(0)} MB/s (${pullMs.toFixed(0)} ms), plain undici ${(bytes / 1e3 / plainMs).toFixed(0)} MB/s (${plainMs.toFixed(0)} ms)`);
      pulls.push(pullMs);
      plains.push(plainMs);
    }
    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      const m = Math.floor(s.length / 2);
      return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
    };
    const pullMBps = bytes / 1e3 / median(pulls);
    const undiciMBps = bytes / 1e3 / median(plains);
    return { pullMBps, undiciMBps, ratio: pullMBps / undiciMBps, bytes, rounds };
  } finally {
    await reg.stop();
    await rm(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const r = await benchPull();
  console.log(`pull ${r.pullMBps.toFixed(0)} MB/s, plain undici ${r.undiciMBps.toFixed(0)} MB/s, ratio ${r.ratio.toFixed(2)} (target ≥ 0.80)`);
}
