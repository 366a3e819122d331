// A conversation's render off the daemon's event loop. Templates run under a time budget
// (render-budget.ts), but up to that budget they held the one thread every stream, health check
// and pull shares: Gemma 4's template takes 270 ms over 1,001 messages, truncation renders a few
// times, and a template built to be slow holds the budget's 3 s on every request. Rendered in a
// worker thread instead, such a render delays only renders queued behind it; the daemon answers
// and streams meanwhile. At most WORKERS threads, started as a request that renders arrives (its
// model loads meanwhile), unref'd, ended after IDLE_MS without a render; one that does not answer
// in HUNG_MS (the budget stops any render well before) is replaced. Where the worker's file is not there (the sources run through tsx), renders run inline.
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { ApiError } from "../errors.js";
import { renderPrompt, type PromptTemplate, type RenderInput } from "./render.js";
import type { RenderReply, RenderRequest, TemplateSource } from "./render-worker.js";

const WORKER = fileURLToPath(new URL("./render-worker.js", import.meta.url));
const HAS_WORKER = existsSync(WORKER);
const WORKERS = Math.max(1, Math.min(2, availableParallelism()));
/** Far past any render the budget lets run (3 s, retried on a busy machine): a thread stuck. */
const HUNG_MS = 60_000;
/** A thread with nothing to render this long ends: an idle daemon keeps no isolate (~11 MiB).
 *  OLLAMATS_RENDER_IDLE_MS is an internal knob (tests use a short one). */
const IDLE_MS = idleMs(process.env.OLLAMATS_RENDER_IDLE_MS);

function idleMs(raw: string | undefined): number {
  const n = Number(raw);
  return raw !== undefined && raw.trim() !== "" && Number.isFinite(n) && n >= 0 ? n : 60_000;
}

interface Pending {
  resolve: (text: string) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

class RenderThread {
  readonly pending = new Map<number, Pending>();
  private readonly worker: Worker;
  private idle: NodeJS.Timeout | undefined;

  constructor(private readonly onExit: (t: RenderThread) => void) {
    // a small young generation: renders make short-lived strings, and the daemon's RSS stays low
    this.worker = new Worker(WORKER, { resourceLimits: { maxYoungGenerationSizeMb: 2 } });
    this.worker.unref();
    this.worker.on("message", (m: RenderReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if ("text" in m) p.resolve(m.text);
      else p.reject(new ApiError(m.error.code, m.error.message));
      this.idleSoon();
    });
    this.idleSoon();
    this.worker.on("error", (err) => this.stop(err));
    this.worker.on("exit", () => this.stop(new Error("the template renderer stopped")));
  }

  /** Ends the thread once it has had nothing to do for IDLE_MS. */
  private idleSoon(): void {
    clearTimeout(this.idle);
    if (this.pending.size > 0) return;
    this.idle = setTimeout(() => this.stop(new Error("the template renderer ended")), IDLE_MS);
    this.idle.unref();
  }

  render(id: number, template: TemplateSource, input: RenderInput): Promise<string> {
    clearTimeout(this.idle);
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        this.stop(new ApiError("internal", "the template renderer was restarted"));
        reject(new ApiError("bad_request", "template error: the template took too long to render"));
      }, HUNG_MS);
      timer.unref();
      this.pending.set(id, { resolve, reject, timer });
      this.worker.postMessage({ id, template, input } satisfies RenderRequest);
    });
  }

  private stopped = false;

  /** Fails what is waiting here, and takes the thread out of the pool. */
  stop(err: Error): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.idle);
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
    this.onExit(this);
    void this.worker.terminate();
  }
}

const threads: RenderThread[] = [];
let nextId = 1;

function idlest(): RenderThread {
  let best = threads.reduce<RenderThread | undefined>((b, t) => (b === undefined || t.pending.size < b.pending.size ? t : b), undefined);
  if (best === undefined || (best.pending.size > 0 && threads.length < WORKERS)) {
    best = new RenderThread((t) => threads.splice(threads.indexOf(t) >>> 0, 1));
    threads.push(best);
  }
  return best;
}

/** Starts a render thread ahead of a render (a request's, while its model loads). */
export function warmRenderer(): void {
  if (threads.length === 0 && HAS_WORKER) idlest();
}

/** renderPrompt(t, input), run in a worker thread; its errors are the same ApiErrors. */
export async function renderOffThread(t: PromptTemplate, input: RenderInput): Promise<string> {
  if (t.kind === "default" || !HAS_WORKER) return renderPrompt(t, input);
  const source: TemplateSource = t.kind === "go" ? { kind: "go", source: t.source } : { kind: "jinja", source: t.source, bos: t.bos, eos: t.eos };
  return idlest().render(nextId++, source, input);
}
