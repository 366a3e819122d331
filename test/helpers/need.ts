// Tests that need a privilege or a tool a developer machine may lack (mounting a tmpfs as root):
// there they are skipped with the reason; under CI, which runs .ci/run as root with every tool
// installed, the same absence fails the test, so a broken environment cannot pass silently.
import type { TestContext } from "vitest";

export function needOrSkip<T>(ctx: TestContext, have: T | null | undefined, why: string): asserts have is T {
  if (have !== null && have !== undefined) return;
  if (process.env.CI) throw new Error(`${why} (CI must be able to run this test)`);
  ctx.skip(why);
}
