// The startup sweep of temp files left by killed writers (store-sweep.ts): ours go once their
// writer's lock is free or stale, a fresh lock keeps them, and Ollama's own files are never touched.
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import lockfile from "proper-lockfile";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sweepDeadWriters } from "../../src/registry/store-sweep.js";

const HEX = "ab".repeat(32);
const OTHER = "cd".repeat(32);
let blobs: string;

beforeEach(async () => {
  blobs = await mkdtemp(path.join(os.tmpdir(), "ollamats-sweep-"));
});
afterEach(async () => {
  await rm(blobs, { recursive: true, force: true });
});

const touch = (name: string) => writeFile(path.join(blobs, name), "x");

/** A lock directory last refreshed `ageMs` ago (a dead writer's once that is past 10 s). */
async function lockDir(name: string, ageMs: number): Promise<void> {
  await mkdir(path.join(blobs, name));
  const t = (Date.now() - ageMs) / 1000;
  await utimes(path.join(blobs, name), t, t);
}

describe("sweepDeadWriters", () => {
  it("removes our temp files whose writer's lock is stale or gone, with the stale lock directories", async () => {
    await touch(`sha256-${HEX}-partial-tmp0123456789ab`);
    await touch(`.sha256-${HEX}-partial-3.0a1b2c3d.tmp`);
    await lockDir(`sha256-${HEX}.lock`, 60_000);
    await touch(".quantize-00aa11bb22cc.tmp"); // no lock at all
    await lockDir(".quantize-99ff99ff99ff.tmp.lock", 60_000); // a lock whose temp file is gone
    await touch(".convert-0123456789ab.tmp"); // a safetensors conversion killed midway
    await lockDir(".convert-0123456789ab.tmp.lock", 60_000);
    const r = await sweepDeadWriters(blobs);
    expect(r.removed.sort()).toEqual([`.sha256-${HEX}-partial-3.0a1b2c3d.tmp`, ".quantize-00aa11bb22cc.tmp", ".convert-0123456789ab.tmp", `sha256-${HEX}-partial-tmp0123456789ab`].sort());
    expect(r.busy).toEqual([]);
    expect(await readdir(blobs)).toEqual([]);
  });

  it("leaves the temp files of a writer whose lock is fresh (held in this or another process)", async () => {
    await touch(`sha256-${HEX}-partial-tmp0123456789ab`);
    const release = await lockfile.lock(path.join(blobs, `sha256-${HEX}`), { realpath: false });
    await touch(".quantize-00aa11bb22cc.tmp");
    await lockDir(".quantize-00aa11bb22cc.tmp.lock", 1_000); // refreshed a second ago
    await touch(".convert-0123456789ab.tmp");
    await lockDir(".convert-0123456789ab.tmp.lock", 1_000);
    try {
      const r = await sweepDeadWriters(blobs);
      expect(r.removed).toEqual([]);
      expect(r.busy.sort()).toEqual([".quantize-00aa11bb22cc.tmp", ".convert-0123456789ab.tmp", `sha256-${HEX}`].sort());
      expect((await readdir(blobs)).length).toBe(6);
    } finally {
      await release();
    }
  });

  it("never touches blobs, Ollama's resumable downloads or Ollama's own upload temps", async () => {
    const keep = [`sha256-${HEX}`, `sha256-${OTHER}-partial`, `sha256-${OTHER}-partial-0`, "sha256-1234567890", `.sha256-${OTHER}-partial-0.tmp`, "notes.txt"];
    for (const n of keep) await touch(n);
    const r = await sweepDeadWriters(blobs);
    expect(r).toEqual({ removed: [], busy: [] });
    expect((await readdir(blobs)).sort()).toEqual([...keep].sort());
  });
});
