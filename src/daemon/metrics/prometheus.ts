// The daemon's metrics in Prometheus' text format (prom-client, on a registry of our own). Events
// (DaemonObserver) update counters and histograms as they happen; the state of the loaded models
// and the queue is read only when /metrics is scraped, so a daemon nobody scrapes pays nothing
// for it. Label values are bounded: routes are patterns, methods a fixed set, models those the
// scheduler resolved (and at most MAX_MODELS of them).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { RunnerStats } from "../../backends/backend.js";
import type { LoadedModel } from "../scheduler/scheduler.js";
import type { DaemonObserver, EvictionReason, RequestRecord, UnloadReason, UpstreamRecord } from "./observer.js";

/** The scrape side of the daemon's metrics. */
export interface MetricsEndpoint {
  readonly contentType: string;
  render(): Promise<string>;
}

/** What a scrape reads from the scheduler. */
export interface MetricsSource {
  loaded(): LoadedModel[];
  /** Requests waiting for a model to load (the one being loaded included). */
  readonly queueDepth: number;
}

/** How long a scrape waits for a runner's slot and KV figures before leaving them out. */
const RUNNER_STATS_TIMEOUT_MS = 1000;
const MAX_MODELS = 256;
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

const SECONDS_FAST = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const SECONDS_SLOW = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
const TOKENS_PER_SECOND = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000];

export class PrometheusMetrics implements DaemonObserver, MetricsEndpoint {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private source: MetricsSource | undefined;
  private readonly models = new Set<string>();

  private readonly requests = this.counter("ollamats_http_requests_total", "HTTP requests answered, by route pattern, method, status and model.", ["route", "method", "status", "model"]);
  private readonly requestSeconds = this.histogram("ollamats_http_request_duration_seconds", "Time from a request's arrival to the end of its answer (streams included).", ["route"], SECONDS_FAST);
  private readonly canceled = this.counter("ollamats_http_requests_canceled_total", "Requests whose client went away before the answer was complete.", ["route", "model"]);
  private readonly ttft = this.histogram("ollamats_time_to_first_token_seconds", "Time from a generation request's arrival to its first token: queueing, loading and prompt evaluation.", ["model"], SECONDS_FAST);
  private readonly promptRate = this.histogram("ollamats_prompt_eval_tokens_per_second", "Prompt evaluation speed of each generation (tokens evaluated, cached ones excluded).", ["model"], TOKENS_PER_SECOND);
  private readonly decodeRate = this.histogram("ollamats_decode_tokens_per_second", "Decode speed of each generation (tokens generated after the first).", ["model"], TOKENS_PER_SECOND);
  private readonly promptTokens = this.counter("ollamats_prompt_tokens_total", "Prompt tokens evaluated.", ["model"]);
  private readonly cachedTokens = this.counter("ollamats_prompt_cached_tokens_total", "Prompt tokens taken from a cache instead of being evaluated.", ["model"]);
  private readonly generatedTokens = this.counter("ollamats_generated_tokens_total", "Tokens generated.", ["model"]);
  private readonly draftTokens = this.counter("ollamats_draft_tokens_total", "Speculative decoding: tokens proposed (by a draft model or prompt lookup) and checked by the model, by result (accepted or rejected).", ["model", "result"]);
  private readonly queueWait = this.histogram("ollamats_queue_wait_seconds", "Time a request waited for its model's runner (loading included).", ["model"], SECONDS_FAST);
  private readonly loads = this.counter("ollamats_model_loads_total", "Model loads, by result (success or failure).", ["model", "result"]);
  private readonly loadSeconds = this.histogram("ollamats_model_load_duration_seconds", "Time to load a model into a runner.", ["model"], SECONDS_SLOW);
  private readonly unloads = this.counter("ollamats_model_unloads_total", "Runners unloaded, by reason: expired, unload_requested, evicted, options_changed, shutdown.", ["model", "reason"]);
  private readonly evictions = this.counter("ollamats_model_evictions_total", "Idle runners unloaded to make room, by reason: max_loaded_models or memory.", ["model", "reason"]);
  private readonly crashes = this.counter("ollamats_runner_crashes_total", "Runner processes that ended without being asked to (the next request loads the model again).", ["model"]);
  private readonly transfer = this.counter("ollamats_registry_transfer_bytes_total", "Bytes moved to or from a registry by pulls and pushes.", ["direction"]);
  private readonly upstreamRequests = this.counter("ollamats_upstream_requests_total", "Requests to remote models' upstream engines, by result (ok or error).", ["upstream", "result"]);
  private readonly upstreamSeconds = this.histogram("ollamats_upstream_request_duration_seconds", "Latency of requests to remote models' upstream engines.", ["upstream"], SECONDS_FAST);
  // Read at scrape time from the remote runners.
  private readonly upstreamUp = this.gauge("ollamats_upstream_up", "1 while a remote model's upstream engine is healthy, else 0 (unhealthy, or its circuit open).", ["model", "upstream"]);
  private readonly upstreamOutstanding = this.gauge("ollamats_upstream_requests_outstanding", "Requests a remote model's upstream engine is answering now.", ["model", "upstream"]);

  // Read at scrape time.
  private readonly queueDepthGauge = this.gauge("ollamats_queue_depth", "Requests waiting for a model to load (the one loading included).", []);
  private readonly modelsLoaded = this.gauge("ollamats_models_loaded", "Models loaded in runners.", []);
  private readonly ramBytes = this.gauge("ollamats_model_ram_bytes", "System memory a loaded model uses (weights, KV cache and compute buffers not on a GPU).", ["model"]);
  private readonly vramBytes = this.gauge("ollamats_model_vram_bytes", "GPU memory a loaded model uses.", ["model"]);
  private readonly contextTokens = this.gauge("ollamats_model_context_tokens", "Context length of each of a loaded model's slots, in tokens.", ["model"]);
  private readonly slots = this.gauge("ollamats_model_slots", "Parallel sequences (slots) of a loaded model (OLLAMA_NUM_PARALLEL).", ["model"]);
  private readonly slotsBusy = this.gauge("ollamats_model_slots_busy", "Slots generating or embedding right now.", ["model"]);
  private readonly kvCells = this.gauge("ollamats_model_kv_cells", "KV cache cells of a loaded model (context length times slots).", ["model"]);
  private readonly kvCellsUsed = this.gauge("ollamats_model_kv_cells_used", "KV cache cells holding tokens (kept prompts included).", ["model"]);
  private readonly activeRequests = this.gauge("ollamats_model_requests_active", "Requests holding a loaded model; those beyond slots_busy wait for a slot.", ["model"]);
  private readonly expiresAt = this.gauge("ollamats_model_expiry_timestamp_seconds", "When an idle loaded model unloads (Unix time; keep-alive).", ["model"]);

  constructor(version: string) {
    this.gauge("ollamats_build_info", "Always 1; the version labels say what runs.", ["version", "node"]).set({ version, node: process.version }, 1);
    // Process and Node.js runtime metrics under their usual names (process_*, nodejs_*), the
    // event loop's lag among them. Its sampling timer runs every 100 ms, not every 10: at 10 ms it
    // woke an idle daemon 100 times a second (~1.2 ms of CPU a second), and a stall worth
    // reporting lasts longer than 100 ms anyway.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
  }

  /** Where scrapes read the loaded models and the queue from. */
  watch(source: MetricsSource): void {
    this.source = source;
  }

  /** The scrape: the current state of the models, then every metric in the text format. */
  async render(): Promise<string> {
    if (this.source) await this.sample(this.source);
    return this.registry.metrics();
  }

  private async sample(source: MetricsSource): Promise<void> {
    const asked = source.loaded();
    const answers = await Promise.all(asked.map((m) => runnerStats(m)));
    const stats = new Map(asked.map((m, i) => [m.runner, answers[i]]));
    // Read again after the wait: a model unloaded (or crashed) meanwhile is not shown as loaded.
    const loaded = source.loaded();
    for (const g of [this.ramBytes, this.vramBytes, this.contextTokens, this.slots, this.slotsBusy, this.kvCells, this.kvCellsUsed, this.activeRequests, this.expiresAt, this.upstreamUp, this.upstreamOutstanding]) {
      g.reset();
    }
    this.queueDepthGauge.set(source.queueDepth);
    this.modelsLoaded.set(loaded.length);
    for (const m of loaded) {
      const labels = { model: this.model(m.spec.shortName) };
      const info = m.runner.info;
      this.ramBytes.set(labels, Math.max(0, info.sizeBytes - info.vramBytes));
      this.vramBytes.set(labels, info.vramBytes);
      this.contextTokens.set(labels, info.contextLength);
      this.slots.set(labels, m.runner.slots);
      this.kvCells.set(labels, info.contextLength * m.runner.slots);
      this.activeRequests.set(labels, m.refCount);
      if (m.refCount === 0 && m.expiresAt.getTime() < 8.64e15) this.expiresAt.set(labels, m.expiresAt.getTime() / 1000);
      for (const u of m.runner.upstreams?.() ?? []) {
        this.upstreamUp.set({ ...labels, upstream: u.url }, u.state === "healthy" ? 1 : 0);
        this.upstreamOutstanding.set({ ...labels, upstream: u.url }, u.outstanding);
      }
      const s = stats.get(m.runner);
      if (s) {
        this.slotsBusy.set(labels, s.slotsBusy);
        this.kvCellsUsed.set(labels, s.kvCellsUsed);
      }
    }
  }

  requestDone(r: RequestRecord): void {
    const model = r.model === undefined ? "" : this.model(r.model);
    const method = METHODS.has(r.method) ? r.method : "other";
    this.requests.inc({ route: r.route, method, status: String(r.status), model });
    this.requestSeconds.observe({ route: r.route }, r.seconds);
    if (r.canceled) this.canceled.inc({ route: r.route, model });
    for (const g of r.generations) {
      const labels = { model };
      this.ttft.observe(labels, g.firstTokenNs / 1e9);
      if (g.promptEvalCount > 0 && g.promptEvalDurationNs > 0) this.promptRate.observe(labels, g.promptEvalCount / (g.promptEvalDurationNs / 1e9));
      if (g.evalCount > 0 && g.evalDurationNs > 0) this.decodeRate.observe(labels, g.evalCount / (g.evalDurationNs / 1e9));
      this.promptTokens.inc(labels, g.promptEvalCount);
      this.cachedTokens.inc(labels, g.cachedTokens);
      this.generatedTokens.inc(labels, g.evalCount);
      if (g.draftTokens > 0) {
        this.draftTokens.inc({ ...labels, result: "accepted" }, g.draftAccepted);
        this.draftTokens.inc({ ...labels, result: "rejected" }, g.draftTokens - g.draftAccepted);
      }
    }
  }

  acquired(model: string, waitSeconds: number | undefined): void {
    if (waitSeconds !== undefined) this.queueWait.observe({ model: this.model(model) }, waitSeconds);
  }

  loaded(model: string, seconds: number): void {
    const labels = { model: this.model(model) };
    this.loads.inc({ ...labels, result: "success" });
    this.loadSeconds.observe(labels, seconds);
  }

  loadFailed(model: string): void {
    this.loads.inc({ model: this.model(model), result: "failure" });
  }

  unloaded(model: string, reason: UnloadReason): void {
    this.unloads.inc({ model: this.model(model), reason });
  }

  evicted(model: string, reason: EvictionReason): void {
    this.evictions.inc({ model: this.model(model), reason });
  }

  crashed(model: string): void {
    this.crashes.inc({ model: this.model(model) });
  }

  transferred(direction: "pull" | "push", bytes: number): void {
    if (bytes > 0) this.transfer.inc({ direction }, bytes);
  }

  upstream(r: UpstreamRecord): void {
    const labels = { upstream: r.upstream };
    this.upstreamRequests.inc({ ...labels, result: r.ok ? "ok" : "error" });
    this.upstreamSeconds.observe(labels, r.seconds);
  }

  /** A model label value; past MAX_MODELS distinct names, "other" (series are never unbounded). */
  private model(name: string): string {
    if (this.models.has(name)) return name;
    if (this.models.size >= MAX_MODELS) return "other";
    this.models.add(name);
    return name;
  }

  private counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private gauge<L extends string>(name: string, help: string, labelNames: L[]): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: L[], buckets: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }
}

/** A runner's slot and KV figures, or undefined when it cannot say (or not in time). */
async function runnerStats(m: LoadedModel): Promise<RunnerStats | undefined> {
  const ask = m.runner.stats?.();
  if (!ask) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), RUNNER_STATS_TIMEOUT_MS);
  });
  try {
    return await Promise.race([ask.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
