// A short pause between decode steps, sized from the step itself.
//
// node-llama-cpp 3.21.1 gives llama.cpp no thread pool, so ggml starts its worker threads for
// every graph and ends them when it is done (strace: one new thread per token). Measured on 2
// cores with the 1B-shaped Q4_0 model (docs/performance.md, "Step pause"): queueing the next
// step the moment a token is out makes the steps ~3-4% slower than queueing it 0.1-0.4 ms later,
// on plain node-llama-cpp as through the daemon. The last step's worker is still being torn
// down, and in the daemon the token's IPC message, HTTP write and the client reading it all want
// a core just as the next graph's threads start; every compute thread then waits at each
// barrier for the one that was preempted. Blocking the runner's main thread for that short while
// lets that work finish on idle cores first. The pause is a fixed fraction of the step (0.5%, at
// most 0.25 ms), so a fast model (GPU, tiny) pays a few microseconds and the pause never costs
// more than it can win.
export const PAUSE_FRACTION = 0.005;
export const MAX_PAUSE_US = 250;

/** The pause after a step that took `stepMs` milliseconds, in microseconds. */
export function pauseMicroseconds(stepMs: number): number {
  if (!Number.isFinite(stepMs) || stepMs <= 0) return 0;
  return Math.min(MAX_PAUSE_US, stepMs * 1000 * PAUSE_FRACTION);
}

const cell = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the calling thread (the runner's main thread: nothing else is due in that time). */
export function blockMicroseconds(us: number): void {
  if (us > 0) Atomics.wait(cell, 0, 0, us / 1000);
}

export class StepPause {
  private last: number | undefined;
  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly block: (us: number) => void = blockMicroseconds,
  ) {}

  /** Called once per step, when its tokens are out and before the next step is queued. */
  settle(): void {
    const t = this.now();
    if (this.last !== undefined) this.block(pauseMicroseconds(t - this.last));
    this.last = this.now();
  }
}
