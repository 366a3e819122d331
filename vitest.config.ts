import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Integration tests start daemons and runner processes; on 2 cores they run one file at a time.
    fileParallelism: false,
  },
});
