// The backends of a daemon, in the order they are asked whether they handle a model. A new
// backend is one folder under src/backends/ and one line here.
import type { Config } from "../config.js";
import type { Backend, StateStore } from "./backend.js";
import { LlamaCppBackend } from "./llamacpp/backend.js";
import type { RunnerLogSink } from "./llamacpp/runner-process.js";
import { Backends } from "./registry.js";
import { RemoteBackend } from "./remote/backend.js";
import type { UpstreamListener } from "./remote/runner.js";

export interface BackendContext {
  config: Config;
  /** Where local runners keep prompt caches across unloads (none: not kept). */
  states?: StateStore;
  warn: (msg: string) => void;
  /** The daemon's log, for the lines of runner processes. */
  log?: RunnerLogSink;
  /** Told of each request to a remote model's upstream (the daemon's metrics). */
  onUpstream?: UpstreamListener;
}

export function createBackends(ctx: BackendContext): Backends {
  const { config } = ctx;
  const list: Backend[] = [
    new RemoteBackend(config, ctx.onUpstream),
    new LlamaCppBackend({ config, debug: config.debug >= 1, cpuOnly: config.llmLibrary.toLowerCase() === "cpu", ...(ctx.states ? { states: ctx.states } : {}), ...(ctx.log ? { log: ctx.log } : {}) }),
  ];
  return new Backends(list);
}
