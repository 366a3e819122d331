import { mkdtemp, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { makeDirs, makeDirsSync } from "../../src/fs/make-dirs.js";

describe("makeDirs", () => {
  it("creates every missing level and accepts existing ones", async () => {
    const base = await mkdtemp(path.join(os.tmpdir(), "mkdirs-"));
    const deep = path.join(base, "a", "b", "c");
    await makeDirs(deep);
    expect((await stat(deep)).isDirectory()).toBe(true);
    await makeDirs(deep); // again: no error
    makeDirsSync(path.join(base, "a", "x", "y"));
    expect((await stat(path.join(base, "a", "x", "y"))).isDirectory()).toBe(true);
  });

  it("fails fast where Node's recursive mkdir would spin forever (/proc)", async () => {
    await expect(makeDirs("/proc/ollamats-nonexistent/models/blobs")).rejects.toMatchObject({ code: "ENOENT" });
    expect(() => makeDirsSync("/proc/ollamats-nonexistent/x")).toThrow(/ENOENT/);
  });
});
