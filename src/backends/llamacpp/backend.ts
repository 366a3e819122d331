// The llama.cpp backend: one runner child process per loaded model (node-llama-cpp inside).
import { readFile } from "node:fs/promises";
import os from "node:os";
import type { Backend, DeviceInfo, LoadOptions, LoadPlan, Runner } from "../backend.js";
import type { GpuProbe, StateStore } from "./protocol.js";
import { RunnerProcess, type RunnerLogSink } from "./runner-process.js";

/** Which environment variable restricts a runner to some GPUs, per ggml backend. */
const VISIBLE_ENV: Record<string, string> = { cuda: "CUDA_VISIBLE_DEVICES", vulkan: "GGML_VK_VISIBLE_DEVICES" };

interface Live {
  runner: RunnerProcess;
  gpus: string[]; // GPU ids it may use
}

export class LlamaCppBackend implements Backend {
  readonly name = "llamacpp";
  private probed: Promise<GpuProbe> | null = null;
  private readonly live = new Set<Live>();

  constructor(
    private readonly opts: {
      debug: boolean;
      /** skip the GPU probe (OLLAMA_LLM_LIBRARY=cpu) */
      cpuOnly?: boolean;
      /** where runners keep their slots' prompt caches across unloads (none: not kept) */
      states?: StateStore;
      /** the daemon's log, for the runners' lines */
      log?: RunnerLogSink;
    },
  ) {}

  /**
   * GPUs come from a short-lived runner child, once (the daemon never loads the native addon
   * itself: it would cost ~100 MB of RSS and put a native crash inside the daemon). node-llama-cpp
   * reports only the sum over the GPUs, so each of N GPUs is taken as 1/N of it (exact for
   * identical GPUs). A GPU's free memory is then what was free at the probe minus what our live
   * runners report they hold on it; system memory is read live from the OS.
   */
  probe(): Promise<GpuProbe> {
    if (this.opts.cpuOnly) return Promise.resolve({ library: false, names: [], totalBytes: 0, freeBytes: 0 });
    this.probed ??= RunnerProcess.probe(this.opts.debug, this.opts.log).catch(() => ({ library: false as const, names: [], totalBytes: 0, freeBytes: 0 }));
    return this.probed;
  }

  async devices(): Promise<DeviceInfo[]> {
    const cpu: DeviceInfo = {
      id: "cpu",
      kind: "cpu",
      library: "cpu",
      name: "CPU",
      totalBytes: os.totalmem(),
      freeBytes: os.freemem(),
      swapFreeBytes: await swapFree(),
    };
    const gpu = await this.probe();
    if (gpu.library === false || gpu.names.length === 0) return [cpu];
    const n = gpu.names.length;
    const used = new Map<string, number>();
    for (const l of this.live) {
      const share = l.runner.info.vramBytes / Math.max(1, l.gpus.length);
      for (const id of l.gpus) used.set(id, (used.get(id) ?? 0) + share);
    }
    const gpus: DeviceInfo[] = gpu.names.map((name, i) => {
      const id = String(i);
      return {
        id,
        kind: "gpu",
        library: gpu.library as string,
        name,
        totalBytes: Math.floor(gpu.totalBytes / n),
        freeBytes: Math.max(0, Math.floor(gpu.freeBytes / n - (used.get(id) ?? 0))),
      };
    });
    return [cpu, ...gpus];
  }

  async load(modelPath: string, opts: LoadOptions, plan: LoadPlan, signal: AbortSignal): Promise<Runner> {
    const gpu = plan.gpuLayers !== 0 ? await this.probe() : null;
    const all = gpu && gpu.library !== false ? gpu.names.map((_, i) => String(i)) : [];
    const gpus = plan.gpus ?? all;
    const env: Record<string, string> = {};
    const envName = gpu && gpu.library !== false ? VISIBLE_ENV[gpu.library] : undefined;
    if (envName && plan.gpus && plan.gpus.length < all.length) env[envName] = visibleList(process.env[envName], plan.gpus);
    const runner = new RunnerProcess(opts.slots, this.opts.debug, env, this.opts.log);
    const entry: Live = { runner, gpus: plan.gpuLayers !== 0 ? gpus : [] };
    this.live.add(entry);
    void runner.exited.then(() => this.live.delete(entry));
    await runner.load(modelPath, opts, plan, signal, this.opts.states);
    return runner;
  }
}

/** Our GPU indexes are positions among the GPUs the daemon itself was allowed to see. */
function visibleList(inherited: string | undefined, ids: string[]): string {
  const parent = inherited?.split(",").map((s) => s.trim()).filter(Boolean);
  return ids.map((id) => (parent ? (parent[Number(id)] ?? id) : id)).join(",");
}

async function swapFree(): Promise<number> {
  try {
    const m = /^SwapFree:\s+(\d+) kB/m.exec(await readFile("/proc/meminfo", "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
