// Waiting for a test server's write buffer to drain, or for its client to leave.
import type { Writable } from "node:stream";

/** Resolves on 'drain' or 'close', whichever comes first, and leaves no listener behind (a
 *  listener left per wait piles up on a long answer: Node's MaxListenersExceededWarning). */
export function drainOrClose(out: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off("drain", done).off("close", done);
      resolve();
    };
    out.once("drain", done).once("close", done);
  });
}
