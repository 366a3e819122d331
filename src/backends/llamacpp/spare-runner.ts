// One warm spare runner process, so that a load pays only for the model file and its context.
//
// A runner started for a load spends most of its start on things no model needs: Node starting,
// node-llama-cpp's import (~0.6 s on 2 cores) and getLlama, which tests the native binary in a
// child process before loading it (~0.7-1.0 s). The spare has done all of that ahead: a load
// takes it (loadModel + createContext only) and another spare is started once the runners are
// idle, so its start never competes with a model's first tokens. The first spare is the child
// that probes the GPUs at daemon start, kept instead of ended.
//
// A spare still starting when a request comes (its start takes ~1.6 s of CPU on 2 cores) would
// halve that request's prompt speed: runners size their threads to the cores others leave free.
// So while any runner has work in flight a spare that is not ready yet is paused (SIGSTOP, with
// its children), and runners do not count its CPU as taken (it gives the cores back at once).
// A pause that outlasts node-llama-cpp's 5-minute binary test fails that test; the load then
// does getLlama itself, as without a spare.
//
// It is not a loaded model: /api/ps does not list it, OLLAMA_MAX_LOADED_MODELS and keep-alive do
// not count it, and it does not keep the daemon alive. It costs one idle process (~90 MB RSS, no
// model; with a GPU library also that library's context). Its command line ends in `--spare`
// until it loads a model. OLLAMATS_SPARE_RUNNER=0 turns it off.
import type { GpuProbe } from "./protocol.js";

/** How often a replacement waits for every runner to be idle before it starts. */
const IDLE_CHECK_MS = 1000;

/** What the spare needs of a runner process (RunnerProcess; a fake in unit tests). */
export interface SpareProcess {
  readonly pid: number | undefined;
  readonly alive: boolean;
  readonly ready: boolean;
  readonly exited: Promise<unknown>;
  holdsDaemon(hold: boolean): void;
  prepare(gpu: boolean): void;
  probe(): Promise<GpuProbe>;
  pause(stop: boolean): void;
  close(): Promise<void>;
  terminate(): Promise<void>;
}

export class SpareRunner<P extends SpareProcess> {
  private spare: P | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Whether loads may put layers on a GPU (decides how the spare prepares its binary). */
  private gpu = false;

  constructor(
    private readonly opts: {
      enabled: boolean;
      /** True while any runner has a request in flight. */
      busy: () => boolean;
      /** Told the spare's pid when one starts, and null when there is none. */
      changed?: (pid: number | null) => void;
      /** Starts a runner process (one to keep as the spare when `keep`). */
      spawn: (keep: boolean) => P;
    },
  ) {}

  /** The spare's pid, if there is one. */
  get pid(): number | null {
    return this.spare?.pid ?? null;
  }

  /** Asks node-llama-cpp for the GPUs in a new child, which then stays as the spare. */
  async probe(): Promise<GpuProbe> {
    const keep = this.opts.enabled && !this.closed && !this.spare;
    const child = this.opts.spawn(keep);
    if (!keep) {
      try {
        return await child.probe();
      } finally {
        await child.close();
      }
    }
    this.keep(child);
    try {
      const found = await child.probe();
      this.gpu = found.library !== false;
      return found;
    } catch (err) {
      if (this.spare === child) this.forget();
      void child.close();
      throw err;
    }
  }

  /** Starts a spare for CPU-only loads (no GPU probe was made). */
  startCpuOnly(): void {
    this.gpu = false;
    if (!this.spare) this.start();
  }

  /** The spare, ready or still starting, if there is a live one; the caller owns it from now.
   *  A spare that has set up a GPU library is kept for a load that uses the GPU: a CPU-only
   *  runner must not hold a GPU context (VRAM the memory plan does not count). */
  take(gpuLayers: boolean): P | null {
    if (this.gpu && !gpuLayers) return null;
    const s = this.spare;
    if (s) this.forget();
    if (!s?.alive) return null;
    s.pause(false);
    s.holdsDaemon(true);
    return s;
  }

  /** Runners have work in flight (or no longer): a spare still starting pauses (or goes on). */
  yieldTo(busy: boolean): void {
    const s = this.spare;
    if (!s) return;
    s.pause(busy && !s.ready);
  }

  /** Starts a new spare once no runner has a request in flight. */
  replaceWhenIdle(): void {
    if (!this.opts.enabled || this.closed || this.spare || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.opts.busy()) this.replaceWhenIdle();
      else if (!this.spare && !this.closed) this.start();
    }, IDLE_CHECK_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const s = this.spare;
    if (s) this.forget();
    await s?.terminate();
  }

  private start(): void {
    if (!this.opts.enabled || this.closed) return;
    const child = this.opts.spawn(true);
    this.keep(child);
    child.prepare(this.gpu);
  }

  /** A spare that dies is forgotten; the next load starts a process of its own. */
  private keep(child: P): void {
    this.spare = child;
    child.holdsDaemon(false);
    this.opts.changed?.(child.pid ?? null);
    void child.exited.then(() => {
      if (this.spare === child) this.forget();
    });
  }

  private forget(): void {
    this.spare = null;
    this.opts.changed?.(null);
  }
}
