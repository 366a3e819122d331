// A short pause between decode steps, sized from the step itself.
//
// Measured on 2 cores with the 1B-shaped Q4_0 model (scripts in docs/performance.md, "Step
// pause"): queueing the next decode step the moment a token is out makes the steps ~4% slower
// than queueing it 0.1–0.4 ms later, through the daemon and on plain node-llama-cpp alike. The
// token's leftover work — the engine's own bookkeeping threads, and in the daemon the IPC
// message, the HTTP write and the client reading it — otherwise lands on cores where llama.cpp's
// compute threads have just started the next graph, and every compute thread waits at each
// barrier for the one that was preempted. Blocking the runner's main thread for that short while
// lets it finish on idle cores first. The pause is a fixed fraction of the step (0.5%, at most
// 0.25 ms), so a fast model (GPU, tiny) pays a few microseconds and the pause never costs more
// than it can win.
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
