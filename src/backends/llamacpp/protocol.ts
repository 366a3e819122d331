// Messages between the daemon (host) and a runner child process over Node's IPC channel.
import type { GenerateJob, GenerateStats, LoadedInfo, LoadOptions } from "../backend.js";

/** What a probe child found: node-llama-cpp reports the sum over its GPUs, and their names. */
export interface GpuProbe {
  library: string | false; // "cuda" | "vulkan" | "metal" | false (CPU only)
  names: string[];
  totalBytes: number;
  freeBytes: number;
}

/** The argument a spare runner is started with (spare-runner.ts); its command line drops it once
 *  the spare loads a model, so `ps` and tests tell a spare from a runner serving a model. */
export const SPARE_ARG = "--spare";

/** Where a runner keeps its slots' KV states across unloads (sequence-states.ts). */
export interface StateStore {
  dir: string;
  /** The most bytes of state files one runner writes when it is unloaded. */
  budgetBytes: number;
}

export type HostMessage =
  | { type: "probe" }
  /** A spare runner: load node-llama-cpp's binary now, for a later load (gpu: layers may go to a GPU). */
  | { type: "prepare"; gpu: boolean }
  | { type: "load"; modelPath: string; opts: LoadOptions; gpuLayers: number; states?: StateStore }
  | { type: "generate"; id: number; job: GenerateJob }
  | { type: "abort"; id: number }
  | { type: "embed"; id: number; inputs: string[] }
  | { type: "tokenize"; id: number; text: string }
  | { type: "detokenize"; id: number; tokens: number[] }
  | { type: "threads"; threads: number }
  | { type: "close"; keepPromptCache?: boolean };

export type ChildMessage =
  | { type: "probed"; gpu: GpuProbe }
  /** Model load progress, 0..1 (resets the load stall timer). */
  | { type: "progress"; progress: number }
  | { type: "loaded"; info: LoadedInfo }
  | { type: "load-error"; message: string }
  /** Text produced since the last message; several tokens may be joined into one message. */
  | { type: "text"; id: number; text: string }
  | ({ type: "done"; id: number } & GenerateStats)
  | { type: "result"; id: number; value: unknown }
  | { type: "error"; id: number; message: string };
