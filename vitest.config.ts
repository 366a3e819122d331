import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A guard against a hung test, not a speed check: the slowest tests (prefix snapshots,
    // speculative decoding on the small model) take 20–28 s on 2 busy cores.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    // Integration tests start daemons and runner processes; on 2 cores they run one file at a time.
    fileParallelism: false,
  },
});
