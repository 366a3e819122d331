// One warm spare runner process, so that a load pays only for the model file and its context.
//
// A runner started for a load spends most of its start on things no model needs: Node starting,
// node-llama-cpp's import (~0.6 s on 2 cores) and getLlama, which tests the native binary in a
// child process before loading it (~0.7-1.0 s). The spare has done all of that ahead: a load
// takes it (loadModel + createContext only) and another spare is started once the runners are
// idle, so its start never competes with a model's first tokens. The first spare is the child
// that probes the GPUs at daemon start, kept instead of ended.
//
// It is not a loaded model: /api/ps does not list it, OLLAMA_MAX_LOADED_MODELS and keep-alive do
// not count it, and it does not keep the daemon alive. It costs one idle process (~90 MB RSS, no
// model; with a GPU library also that library's context). Its command line ends in `--spare`
// until it loads a model. OLLAMATS_SPARE_RUNNER=0 turns it off.
import type { GpuProbe } from "./protocol.js";
import { RunnerProcess, type RunnerLogSink } from "./runner-process.js";

/** How often a replacement waits for every runner to be idle before it starts. */
const IDLE_CHECK_MS = 1000;

export class SpareRunner {
  private spare: RunnerProcess | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Whether loads may put layers on a GPU (decides how the spare prepares its binary). */
  private gpu = false;

  constructor(
    private readonly opts: {
      debug: boolean;
      enabled: boolean;
      /** True while any runner has a request in flight. */
      busy: () => boolean;
      /** the daemon's log, for the runners' lines */
      log?: RunnerLogSink;
    },
  ) {}

  /** Asks node-llama-cpp for the GPUs in a new child, which then stays as the spare. */
  async probe(): Promise<GpuProbe> {
    const keep = this.opts.enabled && !this.closed && !this.spare;
    const child = new RunnerProcess(0, this.opts.debug, {}, keep, this.opts.log);
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
      if (this.spare === child) this.spare = null;
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
  take(gpuLayers: boolean): RunnerProcess | null {
    if (this.gpu && !gpuLayers) return null;
    const s = this.spare;
    this.spare = null;
    if (!s?.alive) return null;
    s.holdsDaemon(true);
    return s;
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
    this.spare = null;
    await s?.terminate();
  }

  private start(): void {
    if (!this.opts.enabled || this.closed) return;
    const child = new RunnerProcess(0, this.opts.debug, {}, true, this.opts.log);
    this.keep(child);
    child.prepare(this.gpu);
  }

  /** A spare that dies is forgotten; the next load starts a process of its own. */
  private keep(child: RunnerProcess): void {
    this.spare = child;
    child.holdsDaemon(false);
    void child.exited.then(() => {
      if (this.spare === child) this.spare = null;
    });
  }
}
