// What the daemon is built from; createApp receives it, tests build it with temp dirs.
import type { Config } from "../config.js";
import type { ModelResolver } from "../registry/model-spec.js";
import type { Store } from "../registry/store.js";
import type { Logger } from "./log.js";
import type { Scheduler } from "./scheduler/scheduler.js";

export interface Deps {
  config: Config;
  store: Store;
  models: ModelResolver;
  scheduler: Scheduler;
  log: Logger;
  version: string;
}
