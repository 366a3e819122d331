// What the rest of the daemon tells the metrics, once per request and once per runner event
// (never per token). Each hook is a few counter or histogram updates; what is true right now
// (loaded models, queue depth, slots, KV cells) is read when /metrics is scraped instead.
import type { GenerationRecord } from "../request-context.js";

export interface RequestRecord {
  /** The route pattern ("/api/chat", "/api/blobs/:digest", "unmatched"): bounded, unlike paths. */
  route: string;
  method: string;
  status: number;
  /** The model the request resolved to; undefined for requests that ran none. */
  model: string | undefined;
  seconds: number;
  /** The client left before the answer was complete. */
  canceled: boolean;
  generations: readonly GenerationRecord[];
}

/** Why the scheduler unloaded a runner. */
export type UnloadReason =
  | "expired" // its keep-alive ran out
  | "unload_requested" // keep_alive 0 (request or OLLAMA_KEEP_ALIVE), `ollamats stop`
  | "evicted" // to make room for another model (see EvictionReason)
  | "options_changed" // a request asked for other runner options: reloaded
  | "shutdown";

/** Why a runner was evicted: OLLAMA_MAX_LOADED_MODELS, or the memory plan of the next model. */
export type EvictionReason = "max_loaded_models" | "memory";

export interface SchedulerObserver {
  /** A request got its runner after waitSeconds (undefined: it did not get one). */
  acquired(model: string, waitSeconds: number | undefined): void;
  loaded(model: string, seconds: number): void;
  loadFailed(model: string): void;
  unloaded(model: string, reason: UnloadReason): void;
  evicted(model: string, reason: EvictionReason): void;
  /** A runner process ended without being asked to. */
  crashed(model: string): void;
}

export interface UpstreamRecord {
  upstream: string;
  ok: boolean;
  seconds: number;
}

export interface DaemonObserver extends SchedulerObserver {
  requestDone(r: RequestRecord): void;
  /** Registry bytes moved by a pull or push (not those already on either side). */
  transferred(direction: "pull" | "push", bytes: number): void;
  /** One request to a remote model's upstream engine (remote backends report these). */
  upstream(r: UpstreamRecord): void;
}

const noop = (): void => undefined;

/** For code run without a daemon's metrics (unit tests, tools). */
export const NO_OBSERVER: DaemonObserver = {
  acquired: noop,
  loaded: noop,
  loadFailed: noop,
  unloaded: noop,
  evicted: noop,
  crashed: noop,
  requestDone: noop,
  transferred: noop,
  upstream: noop,
};
