// The llama.cpp backend: one runner child process per loaded model (node-llama-cpp inside).
import os from "node:os";
import type { Backend, DeviceInfo, LoadOptions, LoadPlan, Runner } from "../backend.js";
import { RunnerProcess } from "./runner-process.js";

export class LlamaCppBackend implements Backend {
  readonly name = "llamacpp";

  constructor(private readonly opts: { debug: boolean }) {}

  // The daemon never loads the native addon itself (it would cost ~100 MB of RSS and put a
  // native crash inside the daemon); system memory comes from the OS, GPUs from the runner.
  async devices(): Promise<DeviceInfo[]> {
    return [{ id: "cpu", kind: "cpu", name: "CPU", totalBytes: os.totalmem(), freeBytes: os.freemem() }];
  }

  async load(modelPath: string, opts: LoadOptions, plan: LoadPlan, signal: AbortSignal): Promise<Runner> {
    const runner = new RunnerProcess(opts.slots, this.opts.debug);
    await runner.load(modelPath, opts, plan.gpuLayers, signal);
    return runner;
  }
}
