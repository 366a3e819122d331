import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseModelName, type ModelName } from "../../src/registry/name.js";
import {
  CorruptManifestError,
  MEDIA_TYPE_CONFIG,
  MEDIA_TYPE_MANIFEST,
  MEDIA_TYPE_MODEL,
  MEDIA_TYPE_TEMPLATE,
  type Manifest,
  type ModelConfigBlob,
} from "../../src/registry/manifest.js";
import { BlobTooLargeError, DigestMismatchError, Store } from "../../src/registry/store.js";

const sha = (b: string | Uint8Array) => createHash("sha256").update(b).digest("hex");
const name = (s: string): ModelName => parseModelName(s)!;
async function* chunks(...parts: Array<string | Uint8Array>) {
  for (const p of parts) yield typeof p === "string" ? Buffer.from(p) : p;
}
async function* mustNotRead(): AsyncGenerator<Uint8Array> {
  throw new Error("body must not be read");
}

let root: string;
let store: Store;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "ollamats-store-"));
  store = new Store(root);
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** Lay out a store exactly as Ollama does: Go-encoded manifests, sha256-<hex> blobs. */
async function writeOllamaFixture(dir: string) {
  const blobs = path.join(dir, "blobs");
  await fs.mkdir(blobs, { recursive: true });
  const put = async (data: string) => {
    await fs.writeFile(path.join(blobs, `sha256-${sha(data)}`), data);
    return { digest: `sha256:${sha(data)}`, size: Buffer.byteLength(data) };
  };
  const weights = await put("GGUF\u0003fake weights");
  const template = await put("{{ .Prompt }}");
  const config: ModelConfigBlob = {
    model_format: "gguf",
    model_family: "llama",
    model_families: ["llama"],
    model_type: "3.2B",
    file_type: "Q4_K_M",
    architecture: "amd64",
    os: "linux",
    rootfs: { type: "layers", diff_ids: [weights.digest, template.digest] },
  };
  const cfg = await put(JSON.stringify(config));
  // As the registry serves it (compact, no trailing newline), written verbatim by `ollama pull`.
  const pulled =
    `{"schemaVersion":2,"mediaType":"${MEDIA_TYPE_MANIFEST}",` +
    `"config":{"mediaType":"${MEDIA_TYPE_CONFIG}","digest":"${cfg.digest}","size":${cfg.size}},` +
    `"layers":[{"mediaType":"${MEDIA_TYPE_MODEL}","digest":"${weights.digest}","size":${weights.size}},` +
    `{"mediaType":"${MEDIA_TYPE_TEMPLATE}","digest":"${template.digest}","size":${template.size}}]}`;
  const llama = path.join(dir, "manifests", "registry.ollama.ai", "library", "llama3.2");
  await fs.mkdir(llama, { recursive: true });
  await fs.writeFile(path.join(llama, "latest"), pulled);
  // As `ollama create` writes it (Go json.Encoder: trailing newline, `from` on the model layer).
  const created =
    `{"schemaVersion":2,"mediaType":"${MEDIA_TYPE_MANIFEST}",` +
    `"config":{"mediaType":"${MEDIA_TYPE_CONFIG}","digest":"${cfg.digest}","size":${cfg.size}},` +
    `"layers":[{"mediaType":"${MEDIA_TYPE_MODEL}","digest":"${weights.digest}","size":${weights.size},"from":"llama3.2"}]}\n`;
  const local = path.join(dir, "manifests", "localhost:5000", "ns", "m");
  await fs.mkdir(local, { recursive: true });
  await fs.writeFile(path.join(local, "v1"), created);
  const old = new Date("2024-06-01T00:00:00Z");
  await fs.utimes(path.join(local, "v1"), old, old);
  return { weights, template, cfg, config, pulled, created };
}

describe("reading a store Ollama wrote", () => {
  it("reads manifests, digests, sizes and config blobs", async () => {
    const fx = await writeOllamaFixture(root);
    const m = await store.readManifest(name("llama3.2"));
    expect(m).not.toBeNull();
    expect(m!.name).toEqual(name("llama3.2"));
    expect(m!.raw.toString()).toBe(fx.pulled);
    expect(m!.digest).toBe(sha(fx.pulled));
    expect(m!.size).toBe(fx.cfg.size + fx.weights.size + fx.template.size);
    expect(m!.manifest).toEqual({
      schemaVersion: 2,
      mediaType: MEDIA_TYPE_MANIFEST,
      config: { mediaType: MEDIA_TYPE_CONFIG, ...fx.cfg },
      layers: [
        { mediaType: MEDIA_TYPE_MODEL, ...fx.weights },
        { mediaType: MEDIA_TYPE_TEMPLATE, ...fx.template },
      ],
    });
    expect(await store.readBlobJson<ModelConfigBlob>(m!.manifest.config.digest)).toEqual(fx.config);
    expect(await store.readBlobText(fx.template.digest)).toBe("{{ .Prompt }}");
    expect(await store.hasBlob(fx.weights.digest)).toBe(true);
    expect(await store.blobSize(fx.weights.digest)).toBe(fx.weights.size);
    expect(store.blobPath(fx.weights.digest)).toBe(path.join(root, "blobs", `sha256-${fx.weights.digest.slice(7)}`));

    const local = await store.readManifest(name("localhost:5000/ns/m:v1"));
    expect(local!.manifest.layers[0]!.from).toBe("llama3.2");
    expect(local!.digest).toBe(sha(fx.created));
    expect(local!.mtime.toISOString()).toBe("2024-06-01T00:00:00.000Z");
  });

  it("reads a manifest again whenever its file changed: replaced, or rewritten in place with the same size and mtime", async () => {
    const fx = await writeOllamaFixture(root);
    const file = path.join(root, "manifests", "registry.ollama.ai", "library", "llama3.2", "latest");
    const first = await store.readManifest(name("llama3.2"));
    expect(await store.readManifest(name("llama3.2"))).toBe(first); // the same file: not read again
    // In place, same length, same mtime: only the change time tells.
    const st = await fs.stat(file);
    const edited = fx.pulled.replace(/"schemaVersion":2/, '"schemaVersion":3');
    expect(edited.length).toBe(fx.pulled.length);
    expect(edited).not.toBe(fx.pulled);
    await fs.writeFile(file, edited);
    await fs.utimes(file, st.atime, st.mtime);
    expect((await store.readManifest(name("llama3.2")))!.raw.toString()).toBe(edited);
    // Replaced by rename, as the store writes manifests.
    await store.writeManifestRaw(name("llama3.2"), Buffer.from(fx.created));
    const replaced = await store.readManifest(name("llama3.2"));
    expect(replaced!.digest).toBe(sha(fx.created));
    await fs.rm(file);
    expect(await store.readManifest(name("llama3.2"))).toBeNull();
  });

  it("lists every manifest, newest first", async () => {
    await writeOllamaFixture(root);
    const all = await store.listManifests();
    expect(all.map((m) => m.name)).toEqual([name("llama3.2"), name("localhost:5000/ns/m:v1")]);
  });

  it("matches names case-insensitively; on-disk casing wins", async () => {
    await writeOllamaFixture(root);
    const m = await store.readManifest(name("REGISTRY.ollama.ai/LIBRARY/Llama3.2:LATEST"));
    expect(m!.name).toEqual(name("llama3.2:latest"));
    expect(await store.readManifest(name("llama3.2:other"))).toBeNull();
    expect(await store.readManifest(name("nothing"))).toBeNull();
  });

  it("writes manifests byte-for-byte as Ollama's Go encoder does", async () => {
    const fx = await writeOllamaFixture(root);
    const manifest: Manifest = {
      schemaVersion: 2,
      mediaType: MEDIA_TYPE_MANIFEST,
      config: { mediaType: MEDIA_TYPE_CONFIG, ...fx.cfg },
      layers: [{ mediaType: MEDIA_TYPE_MODEL, ...fx.weights, from: "llama3.2" }],
    };
    await store.writeManifest(name("localhost:5000/ns/m:v2"), manifest);
    const file = path.join(root, "manifests", "localhost:5000", "ns", "m", "v2");
    expect(await fs.readFile(file, "utf8")).toBe(fx.created);
    expect((await fs.stat(file)).mode & 0o777).toBe(0o644);
  });
});

describe("manifests", () => {
  const manifest = (digest: string, size = 3): Manifest => ({
    schemaVersion: 2,
    mediaType: MEDIA_TYPE_MANIFEST,
    config: { mediaType: MEDIA_TYPE_CONFIG, digest, size },
    layers: [],
  });

  it("writes atomically, leaving no temp files, and reuses existing casing", async () => {
    const { digest } = await store.writeBlobBytes("cfg");
    await store.writeManifest(name("User/Model:Tag"), manifest(digest));
    await store.writeManifest(name("user/model:tag"), manifest(digest, 4));
    const dir = path.join(root, "manifests", "registry.ollama.ai");
    expect(await fs.readdir(dir)).toEqual(["User"]);
    expect(await fs.readdir(path.join(dir, "User", "Model"))).toEqual(["Tag"]);
    expect((await store.readManifest(name("user/model:tag")))!.size).toBe(4);
  });

  it("reports a corrupt manifest by file, and list skips it", async () => {
    const logs: string[] = [];
    store = new Store(root, { log: (_l, msg) => logs.push(msg) });
    const dir = path.join(root, "manifests", "registry.ollama.ai", "library", "bad");
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, "latest"), "{not json");
    await expect(store.readManifest(name("bad"))).rejects.toThrow(CorruptManifestError);
    await expect(store.readManifest(name("bad"))).rejects.toThrow(path.join(dir, "latest"));
    await fs.writeFile(path.join(dir, "wrongtype"), '{"layers":"x"}');
    await expect(store.readManifest(name("bad:wrongtype"))).rejects.toThrow(/"layers" is not an array/);
    expect(await store.listManifests()).toEqual([]);
    expect(logs).toContain("bad manifest");
  });

  it("refuses to write an invalid name or invalid bytes", async () => {
    const evil: ModelName = { host: "registry.ollama.ai", namespace: "..", model: "..", tag: "x" };
    await expect(store.writeManifest(evil, manifest("sha256:x"))).rejects.toThrow(/invalid model name/);
    await expect(store.writeManifestRaw(name("m"), Buffer.from("nope"))).rejects.toThrow(CorruptManifestError);
    expect(await fs.readdir(root)).toEqual([]);
  });

  it("deletes a manifest and prunes empty directories", async () => {
    const { digest } = await store.writeBlobBytes("cfg");
    await store.writeManifest(name("a/m:1"), manifest(digest));
    await store.writeManifest(name("a/m:2"), manifest(digest));
    expect(await store.deleteManifest(name("A/M:1"))).toBe(true);
    expect(await fs.readdir(path.join(root, "manifests", "registry.ollama.ai", "a", "m"))).toEqual(["2"]);
    expect(await store.deleteManifest(name("a/m:2"))).toBe(true);
    expect(await fs.readdir(path.join(root, "manifests"))).toEqual([]);
    expect(await store.deleteManifest(name("a/m:2"))).toBe(false);
  });
});

describe("blobs", () => {
  const data = "hello blob";
  const digest = `sha256:${sha(data)}`;

  it("streams, verifies and renames into place", async () => {
    expect(await store.writeBlobStream(digest, chunks("hello ", "blob"))).toEqual({ created: true, size: 10 });
    expect(await fs.readFile(store.blobPath(digest), "utf8")).toBe(data);
    expect(await fs.readdir(path.join(root, "blobs"))).toEqual([`sha256-${sha(data)}`]);
    // Present: answered without reading the body.
    expect(await store.writeBlobStream(`sha256-${sha(data).toUpperCase()}`, mustNotRead())).toEqual({ created: false, size: 10 });
  });

  it("a digest mismatch leaves nothing behind", async () => {
    const wrong = `sha256:${"0".repeat(64)}`;
    const err = await store.writeBlobStream(wrong, chunks(data)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DigestMismatchError);
    expect((err as Error).message).toBe(`digest mismatch, expected "${wrong}", got "${digest}"`);
    expect(await fs.readdir(path.join(root, "blobs"))).toEqual([]);
  });

  it("a failing body or an oversize body leaves nothing behind", async () => {
    async function* broken() {
      yield Buffer.from("partial");
      throw new Error("connection reset");
    }
    await expect(store.writeBlobStream(digest, broken())).rejects.toThrow("connection reset");
    await expect(store.writeBlobStream(digest, chunks(data), { maxBytes: 5 })).rejects.toThrow(BlobTooLargeError);
    expect(await fs.readdir(path.join(root, "blobs"))).toEqual([]);
  });

  it("rejects crafted digests before touching the filesystem", async () => {
    for (const d of ["sha256:../../etc", "sha256:../../etc/passwd", `sha256:${"a".repeat(64)}/../x`, "../blobs", ""]) {
      expect(() => store.blobPath(d)).toThrow(/invalid digest/);
      await expect(store.hasBlob(d)).rejects.toThrow(/invalid digest/);
      await expect(store.writeBlobStream(d, mustNotRead())).rejects.toThrow(/invalid digest/);
    }
    expect(await fs.readdir(root)).toEqual([]);
  });

  it("concurrent writers of the same blob cooperate", async () => {
    const big = Buffer.alloc(1 << 20, 7);
    const d = `sha256:${sha(big)}`;
    async function* slow() {
      for (let i = 0; i < big.length; i += 64 << 10) {
        await new Promise((r) => setTimeout(r, 2));
        yield big.subarray(i, i + (64 << 10));
      }
    }
    const results = await Promise.all(Array.from({ length: 5 }, () => store.writeBlobStream(d, slow())));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(results.every((r) => r.size === big.length)).toBe(true);
    expect((await fs.readFile(store.blobPath(d))).equals(big)).toBe(true);
    expect(await fs.readdir(path.join(root, "blobs"))).toEqual([`sha256-${sha(big)}`]);
  });

  it("a writer waiting on the lock does not read its body once the first succeeds", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    async function* gated() {
      yield Buffer.from("hello ");
      await gate;
      yield Buffer.from("blob");
    }
    const first = store.writeBlobStream(digest, gated());
    await new Promise((r) => setTimeout(r, 50));
    expect((await fs.readdir(path.join(root, "blobs"))).some((f) => f.endsWith(".lock"))).toBe(true);
    const second = store.writeBlobStream(digest, mustNotRead());
    release();
    expect(await first).toEqual({ created: true, size: 10 });
    expect(await second).toEqual({ created: false, size: 10 });
  });

  it("writers in separate processes cooperate", async () => {
    const storeUrl = new URL("../../src/registry/store.ts", import.meta.url).href;
    const script = path.join(root, "writer.mts");
    await fs.writeFile(
      script,
      `import { Store } from ${JSON.stringify(storeUrl)};
const data = Buffer.alloc(4 << 20, 9);
async function* body() { for (let i = 0; i < data.length; i += 1 << 18) { await new Promise((r) => setTimeout(r, 40)); yield data.subarray(i, i + (1 << 18)); } }
const r = await new Store(process.argv[2]).writeBlobStream(process.argv[3], body());
process.stdout.write(JSON.stringify(r));`,
    );
    const d = `sha256:${sha(Buffer.alloc(4 << 20, 9))}`;
    const dataDir = path.join(root, "data");
    const tsx = fileURLToPath(new URL("../../node_modules/tsx/dist/cli.mjs", import.meta.url));
    const run = () => promisify(execFile)(process.execPath, [tsx, script, dataDir, d]);
    const outs = await Promise.all([run(), run(), run()]);
    const results = outs.map((o) => JSON.parse(o.stdout) as { created: boolean; size: number });
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(await fs.readdir(path.join(dataDir, "blobs"))).toEqual([d.replace(":", "-")]);
  }, 30_000);

  it("writeBlobBytes is content-addressed", async () => {
    const a = await store.writeBlobBytes("{{ .Prompt }}");
    const b = await store.writeBlobBytes(Buffer.from("{{ .Prompt }}"));
    expect(a).toEqual({ digest: `sha256:${sha("{{ .Prompt }}")}`, size: 13, created: true });
    expect(b).toEqual({ ...a, created: false }); // the second write found the blob ("using existing layer")
    expect(await store.readBlobText(a.digest)).toBe("{{ .Prompt }}");
  });
});

describe("pruneUnreferencedBlobs", () => {
  const manifestFor = (...digests: string[]): Manifest => ({
    schemaVersion: 2,
    mediaType: MEDIA_TYPE_MANIFEST,
    config: { mediaType: MEDIA_TYPE_CONFIG, digest: digests[0]!, size: 1 },
    layers: digests.slice(1).map((digest) => ({ mediaType: MEDIA_TYPE_MODEL, digest, size: 1 })),
  });
  const age = async (file: string) => {
    const old = new Date(Date.now() - 2 * 3600_000);
    await fs.utimes(file, old, old);
  };

  it("with candidates removes only the unreferenced ones, immediately", async () => {
    const a = (await store.writeBlobBytes("a")).digest;
    const b = (await store.writeBlobBytes("b")).digest;
    const c = (await store.writeBlobBytes("c")).digest;
    await store.writeManifest(name("keep"), manifestFor(a, b));
    expect(await store.pruneUnreferencedBlobs([b, c, "sha256:../../etc"])).toEqual([c]);
    expect(await store.hasBlob(b)).toBe(true);
    expect(await store.hasBlob(c)).toBe(false);
  });

  it("a full sweep honours the grace period and removes stale partial files", async () => {
    const a = (await store.writeBlobBytes("a")).digest;
    const old = (await store.writeBlobBytes("old")).digest;
    const fresh = (await store.writeBlobBytes("fresh")).digest;
    await store.writeManifest(name("keep"), manifestFor(a));
    const partial = path.join(root, "blobs", `sha256-${"1".repeat(64)}-partial`);
    await fs.writeFile(partial, "x");
    await age(partial);
    await age(store.blobPath(old));
    await age(store.blobPath(a));
    await fs.mkdir(path.join(root, "blobs", `sha256-${"2".repeat(64)}.lock`));
    expect(await store.pruneUnreferencedBlobs()).toEqual([old]);
    const left = await fs.readdir(path.join(root, "blobs"));
    expect(left.sort()).toEqual([store.blobPath(a), store.blobPath(fresh), `${store.blobPath("sha256:" + "2".repeat(64))}.lock`].map((p) => path.basename(p)).sort());
    expect(await store.pruneUnreferencedBlobs(undefined, { graceMs: 0 })).toEqual([fresh]);
  });

  it("a full sweep does nothing while a manifest is corrupt", async () => {
    const orphan = (await store.writeBlobBytes("orphan")).digest;
    const dir = path.join(root, "manifests", "registry.ollama.ai", "library", "bad");
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, "latest"), "{");
    expect(await store.pruneUnreferencedBlobs(undefined, { graceMs: 0 })).toEqual([]);
    expect(await store.hasBlob(orphan)).toBe(true);
  });
});
