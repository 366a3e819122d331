// Messages between the daemon (host) and a runner child process over Node's IPC channel.
import type { GenerateJob, GenerateStats, LoadedInfo, LoadOptions } from "../backend.js";

export type RunnerLogLevel = "debug" | "info" | "warn" | "error";

/** What a probe child found: node-llama-cpp reports the sum over its GPUs, and their names. */
export interface GpuProbe {
  library: string | false; // "cuda" | "vulkan" | "metal" | false (CPU only)
  names: string[];
  totalBytes: number;
  freeBytes: number;
}

/** Where a runner keeps its slots' KV states across unloads (sequence-states.ts). */
export interface StateStore {
  dir: string;
  /** The most bytes of state files one runner writes when it is unloaded. */
  budgetBytes: number;
}

export type HostMessage =
  | { type: "probe" }
  | { type: "load"; modelPath: string; opts: LoadOptions; gpuLayers: number; states?: StateStore }
  | { type: "generate"; id: number; job: GenerateJob }
  | { type: "abort"; id: number }
  | { type: "embed"; id: number; inputs: string[] }
  | { type: "tokenize"; id: number; text: string }
  | { type: "detokenize"; id: number; tokens: number[] }
  | { type: "threads"; threads: number }
  /** Answered with a RunnerStats result. */
  | { type: "stats"; id: number }
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
  /** A line for the daemon's log (request_id among the fields when it is about a request). */
  | { type: "log"; level: RunnerLogLevel; msg: string; fields?: Record<string, string | number | boolean> }
  | { type: "error"; id: number; message: string };
