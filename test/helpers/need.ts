// Tests that need a privilege or a tool (mounting a tmpfs as root, runuser): they never skip. CI
// runs .ci/run as root with every tool installed; anywhere the capability is missing the test
// fails and says what it needs, so a broken environment cannot pass silently.

export function need<T>(have: T | null | undefined, why: string): asserts have is T {
  if (have === null || have === undefined || (have as unknown) === false) throw new Error(`this test needs ${why}; run it as root with the tools .ci/run installs`);
}
