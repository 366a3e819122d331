// The pending-load queue: requests that need a model loaded are handled one at a time (only one
// model loads at once); at most `capacity` wait behind the one being handled, as Ollama's pending
// channel of OLLAMA_MAX_QUEUE; a waiter whose client went away leaves the line at once.
import { ApiError } from "../errors.js";

export const QUEUE_FULL = "server busy, please try again.  maximum pending requests exceeded";

interface Waiter {
  start: () => void;
  fail: (err: Error) => void;
}

export class LoadQueue {
  private busy = false;
  private readonly waiting: Waiter[] = [];
  private closed: Error | null = null;

  constructor(private readonly capacity: number) {}

  /** Requests waiting behind the one being handled. */
  get length(): number {
    return this.waiting.length;
  }

  get active(): boolean {
    return this.busy;
  }

  async run<T>(signal: AbortSignal, job: () => Promise<T>): Promise<T> {
    if (this.closed) throw this.closed;
    if (signal.aborted) throw canceled();
    if (this.busy) {
      if (this.waiting.length >= this.capacity) throw new ApiError("queue_full", QUEUE_FULL);
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const i = this.waiting.indexOf(w);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(canceled());
        };
        const w: Waiter = {
          start: () => {
            signal.removeEventListener("abort", onAbort);
            resolve();
          },
          fail: (err) => {
            signal.removeEventListener("abort", onAbort);
            reject(err);
          },
        };
        signal.addEventListener("abort", onAbort, { once: true });
        this.waiting.push(w);
      });
    }
    // This request now holds the queue: `busy` stays true until it hands over.
    this.busy = true;
    try {
      return await job();
    } finally {
      const next = this.waiting.shift();
      if (next) next.start();
      else this.busy = false;
    }
  }

  /** Fails every waiter and refuses new requests. */
  close(err: Error): void {
    this.closed = err;
    for (const w of this.waiting.splice(0)) w.fail(err);
  }
}

export function canceled(): ApiError {
  return new ApiError("canceled", "request canceled");
}
