import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commonPrefix, PromptCache, type SnapshotIO } from "../../src/backends/llamacpp/prompt-cache.js";

/** A fake sequence: its tokens; a state file is those tokens as JSON, padded to `bytes`. */
interface Seq {
  tokens: number[];
}

function fileIO(bytesPerToken = 10): SnapshotIO<Seq> & { loads: string[] } {
  const loads: string[] = [];
  return {
    loads,
    tokensOf: (s) => s.tokens,
    save: async (s, file) => {
      const body = JSON.stringify(s.tokens).padEnd(s.tokens.length * bytesPerToken);
      await writeFile(file, body);
      return body.length;
    },
    load: async (s, file) => {
      loads.push(path.basename(file));
      s.tokens = JSON.parse(await readFile(file, "utf8")) as number[];
    },
  };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "prompt-cache-test-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe("commonPrefix", () => {
  it("counts the tokens two lists share from the start", () => {
    expect(commonPrefix([1, 2, 3], [1, 2, 4])).toBe(2);
    expect(commonPrefix([1, 2], [1, 2, 3])).toBe(2);
    expect(commonPrefix([], [1])).toBe(0);
    expect(commonPrefix([5], [1])).toBe(0);
  });
});

describe("PromptCache", () => {
  it("finds the snapshot with the longest common prefix and loads it into another sequence", async () => {
    const cache = new PromptCache(() => dir, 1e6, fileIO());
    await cache.save({ tokens: [1, 2, 3, 4, 5] });
    await cache.save({ tokens: [1, 2, 9, 9] });
    const { snapshot, common } = cache.best([1, 2, 3, 4, 7, 8]);
    expect(common).toBe(4);
    expect(snapshot?.tokens).toEqual([1, 2, 3, 4, 5]);
    const target: Seq = { tokens: [42] };
    expect(await cache.load(snapshot!, target)).toBe(true);
    expect(target.tokens).toEqual([1, 2, 3, 4, 5]);
    expect(cache.best([7]).snapshot).toBeUndefined();
    expect(cache.best([7]).common).toBe(0);
  });

  it("covers a prompt when a snapshot holds all but at most `slack` of its last tokens", async () => {
    const cache = new PromptCache(() => dir, 1e6, fileIO());
    await cache.save({ tokens: range(0, 100) });
    expect(cache.covers(range(0, 100), 0)).toBe(true);
    expect(cache.covers(range(0, 90), 0)).toBe(true);
    expect(cache.covers([...range(0, 90), 7, 7, 7], 3)).toBe(true);
    expect(cache.covers([...range(0, 90), 7, 7, 7, 7], 3)).toBe(false);
    expect(cache.covers(range(1, 50), 10)).toBe(false);
    expect(cache.covers([], 0)).toBe(true);
  });

  it("keeps within its byte budget by dropping the least recently used snapshots and their files", async () => {
    const cache = new PromptCache(() => dir, 2500, fileIO(10)); // 100 tokens = 1000 bytes
    const a = await cache.save({ tokens: range(0, 100) });
    await cache.save({ tokens: range(1000, 100) });
    expect(await cache.load(a!, { tokens: [] })).toBe(true); // a is now the most recently used
    await cache.save({ tokens: range(2000, 100) });
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBeLessThanOrEqual(2500);
    expect(cache.best(range(1000, 100)).common).toBe(0); // the oldest use went
    expect(cache.best(range(0, 100)).common).toBe(100);
    expect(await readdir(dir)).toHaveLength(2);
  });

  it("drops the snapshots a new one contains from their start: it serves every prompt they served", async () => {
    const cache = new PromptCache(() => dir, 1e6, fileIO());
    await cache.save({ tokens: range(0, 10) });
    await cache.save({ tokens: [...range(0, 5), 99] }); // shares only a part: stays
    await cache.save({ tokens: range(0, 20) });
    expect(cache.size).toBe(2);
    expect(cache.best(range(0, 10)).snapshot?.tokens).toEqual(range(0, 20));
    expect(cache.best([...range(0, 5), 99]).common).toBe(6);
    expect(await readdir(dir)).toHaveLength(2);
  });

  it("does not keep a snapshot larger than the whole budget", async () => {
    const cache = new PromptCache(() => dir, 500, fileIO(10));
    expect(await cache.save({ tokens: range(0, 100) })).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(await readdir(dir)).toEqual([]);
  });

  it("drops a snapshot that fails to load, and leaves nothing of a failed save", async () => {
    const io = fileIO();
    const cache = new PromptCache(() => dir, 1e6, io);
    const s = await cache.save({ tokens: [1, 2, 3] });
    await writeFile(s!.file, "not json");
    expect(await cache.load(s!, { tokens: [] })).toBe(false);
    expect(cache.size).toBe(0);
    expect(await readdir(dir)).toEqual([]);

    const failing = new PromptCache(() => dir, 1e6, {
      ...io,
      save: async (_seq, file) => {
        await writeFile(file, "partial");
        throw new Error("disk full");
      },
    });
    await expect(failing.save({ tokens: [1] })).rejects.toThrow("disk full");
    expect(failing.size).toBe(0);
    expect(await readdir(dir)).toEqual([]);
  });

  it("removes a dropped snapshot's file only once the loads reading it have ended", async () => {
    let finishLoad: () => void = () => undefined;
    const io = fileIO(10);
    const slowLoad: SnapshotIO<Seq> = {
      ...io,
      load: async (seq, file) => {
        await new Promise<void>((resolve) => (finishLoad = resolve));
        await io.load(seq, file);
      },
    };
    const cache = new PromptCache(() => dir, 1500, slowLoad);
    const a = await cache.save({ tokens: range(0, 100) });
    const target: Seq = { tokens: [] };
    const loading = cache.load(a!, target);
    await cache.save({ tokens: range(500, 100) }); // evicts a while it is being read
    expect(cache.best(range(0, 100)).common).toBe(0);
    expect(await readdir(dir)).toHaveLength(2);
    finishLoad();
    expect(await loading).toBe(true);
    expect(target.tokens).toEqual(range(0, 100));
    expect(await readdir(dir)).toHaveLength(1);
  });

  it("names files from a counter, never from the tokens", async () => {
    const cache = new PromptCache(() => dir, 1e6, fileIO());
    await cache.save({ tokens: [1] });
    await cache.save({ tokens: [2] });
    expect((await readdir(dir)).sort()).toEqual(["snapshot-1.state", "snapshot-2.state"]);
  });
});
