import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createStateDir, removeStaleStateDirs, stateBudgetBytes } from "../../src/daemon/state-dir.js";

let tmp: string;
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

describe("the daemon's state directory", () => {
  it("is private to the daemon, named after its pid, and removed on request", () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "state-dir-test-"));
    const d = createStateDir(tmp);
    expect(path.basename(d.store.dir)).toMatch(new RegExp(`^ollamats-kv-${process.pid}-[A-Za-z0-9]{6}$`));
    expect(statSync(d.store.dir).mode & 0o777).toBe(0o700);
    d.remove();
    expect(readdirSync(tmp)).toEqual([]);
  });

  it("removes directories of daemons that are gone and keeps live ones and foreign names", () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "state-dir-test-"));
    const dead = 2 ** 22 + 12345; // above Linux's pid_max default: no such process
    for (const name of [`ollamats-kv-${dead}-abc123`, `ollamats-kv-${process.pid}-xyz789`, "ollamats-kv-notapid-abc123", "other"]) mkdirSync(path.join(tmp, name));
    removeStaleStateDirs(tmp);
    expect(readdirSync(tmp).sort()).toEqual([`ollamats-kv-${process.pid}-xyz789`, "ollamats-kv-notapid-abc123", "other"]);
  });

  it("budgets 10% of memory, at most 2 GiB", () => {
    expect(stateBudgetBytes(8 * 1024 ** 3)).toBe(Math.floor((8 * 1024 ** 3) / 10));
    expect(stateBudgetBytes(64 * 1024 ** 3)).toBe(2 * 1024 ** 3);
  });
});
