// Lockstep for the runner's decoding sequences, so each decode step is one full batch.
//
// node-llama-cpp dispatches a batch as soon as its decode loop finds anything queued. After a
// step, the sequences whose sampled token reached their consumer first queue their next token
// before the slowest one does, so without a gate the steady state is batches of n−1 tokens plus
// stragglers. Two things make that expensive on CPU: llama.cpp's repacked Q4_0 kernels process
// tokens in groups of 4 (a 3-token batch costs more than a 4-token one), and with a per-sequence
// KV cache llama.cpp only puts sequences with consecutive ids, in ascending order, into one
// micro-batch (anything else is split into several graph runs, each reading all the weights).
// So every generation that is past its prompt waits here after each token until all of them
// have one, and they are released in ascending sequence order: their next tokens are queued in
// the same tick, in the order llama.cpp can batch.
export class StepGate {
  /** `onStep` runs once per released step, just before the members go on (step-pause.ts). */
  constructor(private readonly onStep: () => void = () => {}) {}

  /** Sequence ids of the generations taking part in the lockstep. */
  private readonly members = new Set<number>();
  private readonly arrived = new Map<number, () => void>();
  /** hold() calls not yet let go, and those still waiting for the members to stop. */
  private holds = 0;
  private holders: Array<() => void> = [];

  /** A generation that has its first token joins the lockstep. */
  join(id: number): void {
    this.members.add(id);
  }

  /** A generation that stops (done, stopped, aborted, failed) leaves it; the others go on. */
  leave(id: number): void {
    this.members.delete(id);
    const waiting = this.arrived.get(id);
    this.arrived.delete(id);
    waiting?.();
    this.releaseIfComplete();
  }

  /** Resolves once every member has arrived (or left) for this step. */
  arrive(id: number): Promise<void> {
    if (!this.members.has(id)) return Promise.resolve();
    const step = new Promise<void>((resolve) => this.arrived.set(id, resolve));
    // Released a microtask later, once the caller awaits: the last one to arrive then resumes
    // in id order with the others instead of ahead of them.
    queueMicrotask(() => this.releaseIfComplete());
    return step;
  }

  /**
   * Stops every member at the gate after the token it is computing; resolves once none is in the
   * middle of a step (so no batch of theirs holds the context), with the function that lets them
   * go on. Used to copy a busy sequence's state without waiting out its decode steps.
   */
  async hold(): Promise<() => void> {
    this.holds++;
    await new Promise<void>((resolve) => {
      this.holders.push(resolve);
      queueMicrotask(() => this.releaseIfComplete());
    });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.holds--;
      this.releaseIfComplete();
    };
  }

  get size(): number {
    return this.members.size;
  }

  private releaseIfComplete(): void {
    for (const m of this.members) if (!this.arrived.has(m)) return;
    const holders = this.holders;
    this.holders = [];
    for (const resolve of holders) resolve();
    if (this.holds > 0) return;
    if (this.arrived.size === 0) return;
    this.onStep();
    const order = [...this.arrived.keys()].sort((a, b) => a - b);
    const resolvers = order.map((id) => this.arrived.get(id)!);
    this.arrived.clear();
    for (const resolve of resolvers) resolve();
  }
}
