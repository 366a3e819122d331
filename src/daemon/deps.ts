// What the daemon is built from; createApp receives it, tests build it with temp dirs.
import type { ApiKey } from "../api-keys.js";
import type { Config } from "../config.js";
import type { ModelResolver } from "../registry/model-spec.js";
import type { Store } from "../registry/store.js";
import type { Logger } from "./log.js";
import type { MetricsEndpoint } from "./metrics/prometheus.js";
import type { DaemonObserver } from "./metrics/observer.js";
import type { Scheduler } from "./scheduler/scheduler.js";

export interface Deps {
  config: Config;
  store: Store;
  models: ModelResolver;
  scheduler: Scheduler;
  log: Logger;
  /** Told of requests, loads and transfers; rendered by GET /metrics. */
  metrics: DaemonObserver & MetricsEndpoint;
  version: string;
  /** Every API key the daemon accepts (OLLAMA_API_KEYS and OLLAMA_API_KEYS_FILE); empty: none needed. */
  keys: readonly ApiKey[];
}
