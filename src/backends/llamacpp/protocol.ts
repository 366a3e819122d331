// Messages between the daemon (host) and a runner child process over Node's IPC channel.
import type { GenerateJob, GenerateStats, LoadedInfo, LoadOptions } from "../backend.js";

export type HostMessage =
  | { type: "load"; modelPath: string; opts: LoadOptions; gpuLayers: number }
  | { type: "generate"; id: number; job: GenerateJob }
  | { type: "abort"; id: number }
  | { type: "embed"; id: number; inputs: string[] }
  | { type: "tokenize"; id: number; text: string }
  | { type: "detokenize"; id: number; tokens: number[] }
  | { type: "close" };

export type ChildMessage =
  | { type: "loaded"; info: LoadedInfo }
  | { type: "load-error"; message: string }
  /** Text produced since the last message; several tokens may be joined into one message. */
  | { type: "text"; id: number; text: string }
  | ({ type: "done"; id: number } & GenerateStats)
  | { type: "result"; id: number; value: unknown }
  | { type: "error"; id: number; message: string };
