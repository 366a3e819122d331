// Registry bytes for the metrics, read off a pull's or push's progress reports: per layer, the
// growth of `completed` past its first report. The first report says what was there already (a
// blob in the store, a layer the registry has, the parts of an interrupted download), so only
// bytes moved by this transfer are counted, as they arrive (once per report, every 60 ms).
import type { ProgressResponse } from "../../api/types.js";
import type { DaemonObserver } from "./observer.js";

export function meterTransfer(
  observer: Pick<DaemonObserver, "transferred">,
  direction: "pull" | "push",
  progress: (p: ProgressResponse) => void,
): (p: ProgressResponse) => void {
  const seen = new Map<string, number>();
  return (p) => {
    if (p.digest !== undefined && p.completed !== undefined) {
      const before = seen.get(p.digest);
      if (before === undefined) seen.set(p.digest, p.completed);
      else if (p.completed > before) {
        seen.set(p.digest, p.completed);
        observer.transferred(direction, p.completed - before);
      }
    }
    progress(p);
  };
}
