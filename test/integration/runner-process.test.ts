// The crash message of a runner process: what the runner itself said last, never the daemon's own
// failed write to the dead process.
import { afterEach, describe, expect, it } from "vitest";
import { RunnerProcess } from "../../src/backends/llamacpp/runner-process.js";

let runner: RunnerProcess | undefined;
afterEach(async () => {
  await runner?.terminate().catch(() => undefined);
  runner = undefined;
});

/** Blocks this thread: the child's death is not seen by the event loop meanwhile. */
function blockMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe("a runner killed while the daemon writes to it", () => {
  it("is reported as killed, without the daemon's EPIPE appended", async () => {
    runner = new RunnerProcess(1, false);
    // the child is up once it answers
    expect(await runner.tokenize("hello")).toEqual([]);
    const pid = (runner as unknown as { child: { pid: number } }).child.pid;
    process.kill(pid, "SIGKILL");
    blockMs(300); // dead, but its exit is not handled yet: the next write fails on a closed pipe
    const pending = runner.tokenize("after death").then(
      () => "answered",
      (err: Error) => err.message,
    );
    const exit = await runner.exited;
    expect(exit.signal).toBe("SIGKILL");
    expect(exit.message).toBe("llama runner process has terminated: signal: killed");
    expect(await pending).toBe("llama runner process has terminated: signal: killed");
  }, 60_000);
});
