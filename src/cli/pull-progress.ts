// `ollama pull` progress: a bar per layer digest (`pulling <12 hex>:`), a spinner line for every
// other status (`pulling manifest`, `verifying sha256 digest`, `writing manifest`, `success`).

import { ResponseError, type Client } from "../api/client.js";
import type { ProgressResponse } from "../api/types.js";
import { Bar, Progress, Spinner } from "./progress.js";

/** Feed /api/pull (or /api/push, /api/create) progress events into a Progress display. */
export function progressHandler(p: Progress, barLabel: (resp: ProgressResponse & { digest: string }) => string, skipZero: boolean) {
  const bars = new Map<string, Bar>();
  let status = "";
  let spinner: Spinner | undefined;
  return (resp: ProgressResponse): void => {
    if (resp.digest) {
      // the first event for a layer (completed 0) only announces its size
      if (skipZero && !resp.completed) return;
      spinner?.stop();
      let bar = bars.get(resp.digest);
      if (!bar) {
        bar = new Bar(barLabel(resp as ProgressResponse & { digest: string }), resp.total ?? 0, resp.completed ?? 0);
        bars.set(resp.digest, bar);
        p.add(bar);
      }
      bar.set(resp.completed ?? 0);
    } else if (status !== resp.status) {
      spinner?.stop();
      status = resp.status;
      spinner = new Spinner(status);
      p.add(spinner);
    }
  };
}

export function pullLabel({ digest }: { digest: string }): string {
  const isDigest = digest.startsWith("sha256:");
  const name = digest.replace(/^sha256:/, "").trim();
  return `pulling ${isDigest ? name.slice(0, 12) : name}:`;
}

export async function pullWithProgress(client: Client, model: string, insecure: boolean): Promise<void> {
  const p = new Progress(process.stderr);
  try {
    await client.pull({ model, ...(insecure ? { insecure } : {}) }, progressHandler(p, pullLabel, true));
  } finally {
    p.stop();
  }
}

/** The daemon has no /api/pull route (a plain-text 404/405 rather than a JSON error). */
export function isMissingRoute(err: unknown): boolean {
  return (
    err instanceof ResponseError &&
    (err.status === 404 || err.status === 405 || err.status === 501) &&
    /^\d{3} (page not found|method not allowed)$|^$|not implemented/i.test(err.error)
  );
}

/** Bar label for /api/create and /api/push events: the status, else `<verb> <12 hex>...`. */
export function statusLabel(verb: string) {
  return (resp: ProgressResponse & { digest: string }): string => resp.status || `${verb} ${resp.digest.slice(7, 19)}...`;
}
