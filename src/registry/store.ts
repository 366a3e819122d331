// Ollama's on-disk model store: `manifests/<host>/<namespace>/<model>/<tag>` and
// `blobs/sha256-<hex>`. Every path comes from a validated ModelName or digest (name.ts); writes go
// to a temp file that is fsynced and renamed, so readers never see a half-written file.
import { makeDirs } from "../fs/make-dirs.js";
import { createHash, randomBytes } from "node:crypto";
import { promises as fs, statSync, type BigIntStats } from "node:fs";
import path from "node:path";
import lockfile from "proper-lockfile";
import { decodeManifest, encodeManifest, type Manifest } from "./manifest.js";
import { digestFileName, manifestPathParts, nameFromPathParts, parseDigest, type ModelName } from "./name.js";
import { atomicWrite, errCode, findEntry, fsyncDir, isNotFound, listDir } from "./store-files.js";

// The manifest format lives in manifest.ts; re-exported so that importers of the store (scripts
// included) keep finding it here.
export * from "./manifest.js";

export interface StoredManifest {
  /** The name with the casing found on disk. */
  name: ModelName;
  manifest: Manifest;
  raw: Buffer;
  /** Hex sha256 of the manifest file bytes (what /api/tags reports as `digest`). */
  digest: string;
  mtime: Date;
  /** Sum of layer sizes plus the config size. */
  size: number;
}

export class DigestMismatchError extends Error {
  override name = "DigestMismatchError";
  constructor(readonly expected: string, readonly actual: string) {
    super(`digest mismatch, expected "${expected}", got "${actual}"`);
  }
}
export class BlobTooLargeError extends Error {
  override name = "BlobTooLargeError";
}

export type StoreLogger = (level: "debug" | "info" | "warn", msg: string, meta?: Record<string, unknown>) => void;

export interface PruneOptions {
  /** Leave blobs modified more recently than this alone (full scan default 1 h, as Ollama). */
  graceMs?: number;
}

/** Manifest files whose last read is kept (more are simply read again). */
const MANIFEST_READS_KEPT = 1024;

/** Which version of a file a stat saw: manifests are replaced by rename (a new inode), and any
 *  write in place changes the size or the change time (nanoseconds). */
function fileIdentity(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

export class Store {
  /** The last read of each manifest file, by path. */
  private readonly manifestReads = new Map<string, { identity: string; stored: StoredManifest }>();
  readonly root: string;
  readonly blobsDir: string;
  readonly manifestsDir: string;
  private readonly log: StoreLogger;

  constructor(root: string, opts: { log?: StoreLogger } = {}) {
    this.root = path.resolve(root);
    this.blobsDir = path.join(this.root, "blobs");
    this.manifestsDir = path.join(this.root, "manifests");
    this.log = opts.log ?? (() => {});
  }

  // ---- blobs ----------------------------------------------------------------------------------

  /** `blobs/sha256-<hex>`; throws on anything that is not a sha256 digest. */
  blobPath(digest: string): string {
    return path.join(this.blobsDir, digestFileName(digest));
  }

  async blobSize(digest: string): Promise<number | null> {
    const st = await fs.stat(this.blobPath(digest)).catch((e: unknown) => {
      if (isNotFound(e)) return null;
      throw e;
    });
    return st?.isFile() ? st.size : null;
  }

  async hasBlob(digest: string): Promise<boolean> {
    return (await this.blobSize(digest)) !== null;
  }

  /**
   * Stream `body` into the blob for `expectedDigest`, verifying the hash as it goes. An existing
   * blob returns created:false without reading the body. A lock on the blob path makes concurrent
   * writers (in any process) take turns: the second finds the blob already there.
   */
  async writeBlobStream(
    expectedDigest: string,
    body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    opts: { maxBytes?: number } = {},
  ): Promise<{ created: boolean; size: number }> {
    const digest = parseDigest(expectedDigest);
    if (digest === null) throw new Error("invalid digest format");
    const final = this.blobPath(digest);
    const existing = await this.blobSize(digest);
    if (existing !== null) {
      // Refresh mtime as Ollama's touchLayer does, so the prune grace period covers a reused blob.
      const now = new Date();
      await fs.utimes(final, now, now).catch(() => {});
      return { created: false, size: existing };
    }

    await makeDirs(this.blobsDir);
    let compromised: Error | undefined;
    const release = await lockfile.lock(final, {
      realpath: false,
      retries: { forever: true, minTimeout: 20, maxTimeout: 500, factor: 1.5 },
      onCompromised: (err) => {
        compromised = err;
      },
    });
    try {
      const again = await this.blobSize(digest);
      if (again !== null) return { created: false, size: again };
      const size = await this.streamToBlob(final, digest, body, opts.maxBytes, () => compromised);
      return { created: true, size };
    } finally {
      await release().catch(() => {});
    }
  }

  private async streamToBlob(
    final: string,
    digest: string,
    body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    maxBytes: number | undefined,
    lockLost: () => Error | undefined,
  ): Promise<number> {
    // Distinct from Ollama's own `-partial` / `-partial-<N>` download files; Ollama's startup
    // prune removes leftovers because the name is not a valid digest.
    const tmp = `${final}-partial-tmp${randomBytes(6).toString("hex")}`;
    const fh = await fs.open(tmp, "wx", 0o644);
    let closed = false;
    try {
      const hash = createHash("sha256");
      let size = 0;
      for await (const chunk of body) {
        const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
        size += buf.byteLength;
        if (maxBytes !== undefined && size > maxBytes) {
          throw new BlobTooLargeError(`blob exceeds the maximum size of ${maxBytes} bytes`);
        }
        hash.update(buf);
        for (let off = 0; off < buf.byteLength; ) {
          off += (await fh.write(buf, off, buf.byteLength - off)).bytesWritten;
        }
      }
      await fh.chmod(0o644);
      await fh.sync();
      closed = true;
      await fh.close();
      const actual = `sha256:${hash.digest("hex")}`;
      if (actual !== digest) throw new DigestMismatchError(digest, actual);
      const lost = lockLost();
      if (lost) throw new Error(`blob lock lost while writing ${digest}: ${lost.message}`);
      await fs.rename(tmp, final);
      await fsyncDir(this.blobsDir);
      return size;
    } catch (e) {
      if (!closed) await fh.close().catch(() => {});
      await fs.rm(tmp, { force: true });
      throw e;
    }
  }

  /** Content-addressed write of an in-memory blob (template, params, config …). */
  /** `created` is false when the blob was there already (Ollama's "using existing layer"). */
  async writeBlobBytes(data: Uint8Array | string): Promise<{ digest: string; size: number; created: boolean }> {
    const buf = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    const digest = `sha256:${createHash("sha256").update(buf).digest("hex")}`;
    const { created } = await this.writeBlobStream(digest, [buf]);
    return { digest, size: buf.byteLength, created };
  }

  async readBlobText(digest: string): Promise<string> {
    return fs.readFile(this.blobPath(digest), "utf8");
  }

  async readBlobJson<T = unknown>(digest: string): Promise<T> {
    const text = await this.readBlobText(digest);
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new Error(`invalid JSON in blob ${digest}: ${(e as Error).message}`);
    }
  }

  // ---- manifests ------------------------------------------------------------------------------

  /** Lexical manifest path for a name (no case resolution). */
  manifestPath(name: ModelName): string {
    return path.join(this.manifestsDir, ...manifestPathParts(name));
  }

  /** The existing manifest file for `name`, matched case-insensitively per part. */
  private async resolveManifest(name: ModelName): Promise<{ name: ModelName; file: string; identity?: string } | null> {
    const parts = manifestPathParts(name);
    // Every request resolves its model: on a case-sensitive file system (Linux) an exact match
    // is what the walk below would find first, in one stat instead of four directory reads. The
    // stat is synchronous: a few µs on a local disk, where the thread-pool round trip of an async
    // one cost ~0.5 ms of every request's first token on an otherwise idle daemon.
    if (process.platform === "linux") {
      const exact = path.join(this.manifestsDir, ...parts);
      let st: BigIntStats | undefined;
      try {
        st = statSync(exact, { bigint: true, throwIfNoEntry: false });
      } catch {
        st = undefined; // not a directory on the way (ENOTDIR), unreadable: the walk decides
      }
      if (st?.isFile()) return { name, file: exact, identity: fileIdentity(st) };
    }
    const found: string[] = [];
    let dir = this.manifestsDir;
    for (const part of parts) {
      const entry = await findEntry(dir, part);
      if (entry === null) return null;
      found.push(entry);
      dir = path.join(dir, entry);
    }
    const [host, namespace, model, tag] = found as [string, string, string, string];
    return { name: { ...name, host, namespace, model, tag }, file: dir };
  }

  private async loadManifest(name: ModelName, file: string): Promise<StoredManifest> {
    // One open: the bytes and the mtime come from the same file (a rename between a read and a
    // stat by path could pair them wrongly), and the path is looked up once.
    const fh = await fs.open(file, "r");
    let raw: Buffer;
    let st: BigIntStats;
    try {
      st = await fh.stat({ bigint: true });
      raw = await fh.readFile();
    } finally {
      await fh.close();
    }
    const manifest = decodeManifest(raw, file);
    const size = [manifest.config, ...manifest.layers].reduce((n, l) => n + l.size, 0);
    const digest = createHash("sha256").update(raw).digest("hex");
    const stored: StoredManifest = { name, manifest, raw, digest, mtime: new Date(Number(st.mtimeMs)), size };
    if (this.manifestReads.size >= MANIFEST_READS_KEPT) this.manifestReads.clear();
    this.manifestReads.set(file, { identity: fileIdentity(st), stored });
    return stored;
  }

  /** null when there is no such manifest; throws CorruptManifestError on unreadable JSON. */
  async readManifest(name: ModelName): Promise<StoredManifest | null> {
    const found = await this.resolveManifest(name);
    if (!found) return null;
    // Every request reads its model's manifest: a file that is still the one read last time
    // (same inode, size and change times) is not read and hashed again.
    const known = this.manifestReads.get(found.file);
    if (known && found.identity !== undefined && known.identity === found.identity) return known.stored;
    try {
      return await this.loadManifest(found.name, found.file);
    } catch (e) {
      if (isNotFound(e) || errCode(e) === "EISDIR") return null;
      throw e;
    }
  }

  async writeManifest(name: ModelName, manifest: Manifest): Promise<void> {
    await this.writeManifestRaw(name, encodeManifest(manifest));
  }

  /** Write manifest bytes verbatim (a pulled manifest keeps the registry's bytes and digest). */
  async writeManifestRaw(name: ModelName, raw: Uint8Array): Promise<void> {
    const parts = manifestPathParts(name);
    decodeManifest(Buffer.from(raw), `manifest for ${parts.join("/")}`);
    // Reuse the on-disk casing of each existing part, so `Foo` does not sit beside `foo`.
    let dir = this.manifestsDir;
    for (const part of parts.slice(0, 3)) dir = path.join(dir, (await findEntry(dir, part)) ?? part);
    await makeDirs(dir);
    const tag = parts[3];
    await atomicWrite(path.join(dir, (await findEntry(dir, tag)) ?? tag), raw);
  }

  /** Remove the manifest (matched case-insensitively) and any directories left empty. */
  async deleteManifest(name: ModelName): Promise<boolean> {
    const found = await this.resolveManifest(name);
    if (!found) return false;
    try {
      await fs.unlink(found.file);
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
    // Climb until a directory is not empty (rmdir fails) or we reach manifests/.
    let dir = path.dirname(found.file);
    while (dir !== this.manifestsDir && (await fs.rmdir(dir).then(() => true, () => false))) dir = path.dirname(dir);
    return true;
  }

  /** Every file four levels under manifests/ (as Ollama globs them): loaded, or unreadable. */
  private async scanManifests(): Promise<{ ok: StoredManifest[]; bad: string[] }> {
    const ok: StoredManifest[] = [];
    const bad: string[] = [];
    let paths: string[][] = [[]];
    for (let depth = 0; depth < 4; depth++) {
      const next: string[][] = [];
      for (const p of paths) for (const e of await listDir(path.join(this.manifestsDir, ...p))) next.push([...p, e]);
      paths = next;
    }
    for (const p of paths as Array<[string, string, string, string]>) {
      const file = path.join(this.manifestsDir, ...p);
      const name = nameFromPathParts(...p);
      try {
        if (!(await fs.stat(file)).isFile()) continue;
        if (name === null) this.log("warn", "bad manifest name", { path: file });
        else ok.push(await this.loadManifest(name, file));
      } catch (e) {
        this.log("warn", "bad manifest", { path: file, error: (e as Error).message });
        bad.push(file);
      }
    }
    return { ok, bad };
  }

  /** Every readable manifest, newest first; unreadable ones are logged and skipped. */
  async listManifests(): Promise<StoredManifest[]> {
    const { ok } = await this.scanManifests();
    return ok.sort((a, b) => b.mtime.getTime() - a.mtime.getTime());
  }

  /**
   * Delete blobs no manifest references. With `candidates` (the digests of a deleted or replaced
   * manifest), only those are considered, immediately. Without, the whole blobs/ directory is
   * swept as at Ollama's startup: only files older than the grace period, stale non-digest files
   * (abandoned partial downloads) included, and nothing at all if any manifest is unreadable.
   * Returns the digests removed.
   */
  async pruneUnreferencedBlobs(candidates?: string[], opts: PruneOptions = {}): Promise<string[]> {
    const { ok, bad } = await this.scanManifests();
    const used = new Set(ok.flatMap((m) => [m.manifest.config, ...m.manifest.layers].map((l) => parseDigest(l.digest))));
    const removed: string[] = [];
    const remove = (file: string, digest: string | null) =>
      fs.unlink(file).then(
        () => (digest ? removed.push(digest) : this.log("info", "removed stale blob file", { path: file })),
        (e) => isNotFound(e) || this.log("warn", "could not remove blob", { path: file, error: (e as Error).message }),
      );

    if (candidates) {
      for (const c of new Set(candidates.map(parseDigest))) if (c && !used.has(c)) await remove(this.blobPath(c), c);
      return removed;
    }
    if (bad.length > 0) {
      this.log("warn", "corrupt manifests detected, skipping prune", { manifests: bad });
      return removed;
    }
    const grace = opts.graceMs ?? 60 * 60_000;
    const now = Date.now();
    for (const entry of await listDir(this.blobsDir)) {
      const file = path.join(this.blobsDir, entry);
      const st = await fs.stat(file).catch(() => null);
      // Skip lock directories, and anything young enough to belong to a write in progress.
      if (!st?.isFile() || now - st.mtimeMs < grace) continue;
      const d = parseDigest(entry);
      if (d === null || !used.has(d)) await remove(file, d);
    }
    return removed;
  }
}
