// The metrics module on its own: events in, a scrape out, read back with a real Prometheus text
// parser. Counts and sums must be exactly what was reported; label values stay bounded; the
// state of the loaded models is read at scrape time (a runner that does not answer is left out).
import { describe, expect, it } from "vitest";
import type { Runner, RunnerStats, UpstreamState } from "../../src/backends/backend.js";
import { PrometheusMetrics, type MetricsSource } from "../../src/daemon/metrics/prometheus.js";
import { meterTransfer } from "../../src/daemon/metrics/transfer-meter.js";
import type { GenerationRecord } from "../../src/daemon/request-context.js";
import type { LoadedModel } from "../../src/daemon/scheduler/scheduler.js";
import { Scrape } from "../helpers/prometheus.js";

const gen = (g: Partial<GenerationRecord> = {}): GenerationRecord => ({
  firstTokenNs: 50e6,
  promptEvalCount: 10,
  promptEvalDurationNs: 20e6,
  evalCount: 8,
  evalDurationNs: 40e6,
  cachedTokens: 0,
  draftTokens: 0,
  draftAccepted: 0,
  ...g,
});

async function scrape(m: PrometheusMetrics): Promise<Scrape> {
  return new Scrape(await m.render());
}

function loaded(
  name: string,
  opts: { slots: number; ctx: number; refCount: number; size: number; vram: number; stats?: () => Promise<RunnerStats>; upstreams?: () => UpstreamState[] },
): LoadedModel {
  const runner = {
    slots: opts.slots,
    info: { contextLength: opts.ctx, gpuLayers: 0, sizeBytes: opts.size, vramBytes: opts.vram, threads: 2 },
    ...(opts.stats ? { stats: opts.stats } : {}),
    ...(opts.upstreams ? { upstreams: opts.upstreams } : {}),
  } as unknown as Runner;
  return { spec: { shortName: name }, runner, refCount: opts.refCount, expiresAt: new Date(Date.now() + 60_000) } as unknown as LoadedModel;
}

describe("PrometheusMetrics", () => {
  it("counts requests by route, method, status and model, and sums their generations", async () => {
    const m = new PrometheusMetrics("1.2.3");
    const gens = [gen(), gen({ evalCount: 4, evalDurationNs: 10e6, cachedTokens: 6, promptEvalCount: 3 })];
    m.requestDone({ route: "/api/generate", method: "POST", status: 200, model: "a:latest", seconds: 0.2, canceled: false, generations: gens });
    m.requestDone({ route: "/api/generate", method: "POST", status: 200, model: "a:latest", seconds: 0.3, canceled: true, generations: [] });
    m.requestDone({ route: "/api/chat", method: "POST", status: 404, model: undefined, seconds: 0.001, canceled: false, generations: [] });
    const s = await scrape(m);
    expect(s.problems("ollamats_")).toEqual([]);
    expect(s.value("ollamats_http_requests_total", { route: "/api/generate", method: "POST", status: "200", model: "a:latest" })).toBe(2);
    expect(s.value("ollamats_http_requests_total", { route: "/api/chat", status: "404", model: "" })).toBe(1);
    expect(s.value("ollamats_http_requests_canceled_total", { route: "/api/generate" })).toBe(1);
    const duration = s.histogram("ollamats_http_request_duration_seconds", { route: "/api/generate" });
    expect(duration.count).toBe(2);
    expect(duration.sum).toBeCloseTo(0.5, 9);
    expect(s.value("ollamats_generated_tokens_total", { model: "a:latest" })).toBe(12);
    expect(s.value("ollamats_prompt_tokens_total", { model: "a:latest" })).toBe(13);
    expect(s.value("ollamats_prompt_cached_tokens_total", { model: "a:latest" })).toBe(6);
    const ttft = s.histogram("ollamats_time_to_first_token_seconds", { model: "a:latest" });
    expect(ttft.count).toBe(2);
    expect(ttft.sum).toBeCloseTo(0.1, 9);
    const decode = s.histogram("ollamats_decode_tokens_per_second", { model: "a:latest" });
    expect(decode.count).toBe(2);
    expect(decode.sum).toBeCloseTo(8 / 0.04 + 4 / 0.01, 6);
    expect(s.histogram("ollamats_prompt_eval_tokens_per_second").sum).toBeCloseTo(10 / 0.02 + 3 / 0.02, 6);
    expect(s.samples("ollamats_build_info")[0]?.labels).toMatchObject({ version: "1.2.3" });
    // the runtime's own metrics come along under their usual names
    expect(s.families.has("nodejs_eventloop_lag_seconds")).toBe(true);
    expect(s.families.has("process_resident_memory_bytes")).toBe(true);
  });

  it("counts speculative decoding's proposals as accepted and rejected, only where there were any", async () => {
    const m = new PrometheusMetrics("0");
    const gens = [gen({ draftTokens: 10, draftAccepted: 7 }), gen({ draftTokens: 4, draftAccepted: 0 })];
    m.requestDone({ route: "/api/generate", method: "POST", status: 200, model: "d", seconds: 1, canceled: false, generations: gens });
    m.requestDone({ route: "/api/generate", method: "POST", status: 200, model: "plain", seconds: 1, canceled: false, generations: [gen()] });
    const s = await scrape(m);
    expect(s.problems("ollamats_")).toEqual([]);
    expect(s.value("ollamats_draft_tokens_total", { model: "d", result: "accepted" })).toBe(7);
    expect(s.value("ollamats_draft_tokens_total", { model: "d", result: "rejected" })).toBe(7);
    expect(s.samples("ollamats_draft_tokens_total").filter((x) => x.labels.model === "plain")).toEqual([]);
  });

  it("leaves generations with nothing to divide out of the speed histograms", async () => {
    const m = new PrometheusMetrics("0");
    m.requestDone({ route: "/api/generate", method: "POST", status: 200, model: "a", seconds: 1, canceled: false, generations: [gen({ evalCount: 0, evalDurationNs: 0, promptEvalCount: 0 })] });
    const s = await scrape(m);
    expect(s.histogram("ollamats_decode_tokens_per_second").count).toBe(0);
    expect(s.histogram("ollamats_prompt_eval_tokens_per_second").count).toBe(0);
    expect(s.histogram("ollamats_time_to_first_token_seconds").count).toBe(1);
  });

  it("records loads, unloads, evictions, crashes, queue waits and transfers", async () => {
    const m = new PrometheusMetrics("0");
    m.loaded("a:latest", 1.5);
    m.loaded("a:latest", 0.5);
    m.loadFailed("b:latest");
    m.unloaded("a:latest", "expired");
    m.unloaded("a:latest", "evicted");
    m.evicted("a:latest", "max_loaded_models");
    m.crashed("a:latest");
    m.acquired("a:latest", 0.25);
    m.acquired("a:latest", undefined);
    m.transferred("pull", 1000);
    m.transferred("push", 0);
    m.upstream({ upstream: "gpu-box", ok: false, seconds: 2 });
    const s = await scrape(m);
    expect(s.problems("ollamats_")).toEqual([]);
    expect(s.value("ollamats_model_loads_total", { model: "a:latest", result: "success" })).toBe(2);
    expect(s.value("ollamats_model_loads_total", { model: "b:latest", result: "failure" })).toBe(1);
    expect(s.histogram("ollamats_model_load_duration_seconds", { model: "a:latest" }).sum).toBe(2);
    expect(s.value("ollamats_model_unloads_total", { reason: "expired" })).toBe(1);
    expect(s.value("ollamats_model_unloads_total", { reason: "evicted" })).toBe(1);
    expect(s.value("ollamats_model_evictions_total", { model: "a:latest", reason: "max_loaded_models" })).toBe(1);
    expect(s.value("ollamats_runner_crashes_total", { model: "a:latest" })).toBe(1);
    const wait = s.histogram("ollamats_queue_wait_seconds", { model: "a:latest" });
    expect([wait.count, wait.sum]).toEqual([1, 0.25]);
    expect(s.value("ollamats_registry_transfer_bytes_total", { direction: "pull" })).toBe(1000);
    expect(s.samples("ollamats_registry_transfer_bytes_total", { direction: "push" })).toEqual([]);
    expect(s.value("ollamats_upstream_requests_total", { upstream: "gpu-box", result: "error" })).toBe(1);
  });

  it("reads the loaded models at scrape time and drops those no longer loaded", async () => {
    const m = new PrometheusMetrics("0");
    let models = [
      loaded("a:latest", { slots: 4, ctx: 512, refCount: 3, size: 900, vram: 300, stats: async () => ({ slotsBusy: 2, kvCellsUsed: 700 }) }),
      // a runner that never answers is left out of the slot and KV figures, not waited for
      loaded("b:latest", { slots: 1, ctx: 256, refCount: 0, size: 100, vram: 0, stats: () => new Promise<RunnerStats>(() => undefined) }),
      // a remote model: its upstreams' health and load, as /api/ps has them
      loaded("r:latest", {
        slots: 4,
        ctx: 8192,
        refCount: 1,
        size: 0,
        vram: 0,
        upstreams: () => [
          { url: "http://gpu-1:8080", api: "openai", state: "healthy", outstanding: 1 },
          { url: "http://gpu-2:8080", api: "openai", state: "open", outstanding: 0 },
        ],
      }),
    ];
    let depth = 2;
    const source: MetricsSource = {
      loaded: () => models,
      get queueDepth() {
        return depth;
      },
    };
    m.watch(source);
    const t0 = Date.now();
    const s = await scrape(m);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(s.problems("ollamats_")).toEqual([]);
    expect(s.value("ollamats_models_loaded")).toBe(3);
    expect(s.value("ollamats_upstream_up", { model: "r:latest", upstream: "http://gpu-1:8080" })).toBe(1);
    expect(s.value("ollamats_upstream_up", { model: "r:latest", upstream: "http://gpu-2:8080" })).toBe(0);
    expect(s.value("ollamats_upstream_requests_outstanding", { model: "r:latest" })).toBe(1);
    expect(s.value("ollamats_queue_depth")).toBe(2);
    expect(s.value("ollamats_model_ram_bytes", { model: "a:latest" })).toBe(600);
    expect(s.value("ollamats_model_vram_bytes", { model: "a:latest" })).toBe(300);
    expect(s.value("ollamats_model_context_tokens", { model: "a:latest" })).toBe(512);
    expect(s.value("ollamats_model_slots", { model: "a:latest" })).toBe(4);
    expect(s.value("ollamats_model_kv_cells", { model: "a:latest" })).toBe(2048);
    expect(s.value("ollamats_model_slots_busy", { model: "a:latest" })).toBe(2);
    expect(s.value("ollamats_model_kv_cells_used", { model: "a:latest" })).toBe(700);
    expect(s.value("ollamats_model_requests_active", { model: "a:latest" })).toBe(3);
    expect(s.samples("ollamats_model_slots_busy", { model: "b:latest" })).toEqual([]);
    expect(s.samples("ollamats_model_expiry_timestamp_seconds", { model: "b:latest" })).toHaveLength(1);
    models = [];
    depth = 0;
    const after = await scrape(m);
    expect(after.value("ollamats_models_loaded")).toBe(0);
    expect(after.samples("ollamats_model_slots")).toEqual([]);
    expect(after.samples("ollamats_upstream_up")).toEqual([]);
    expect(after.value("ollamats_queue_depth")).toBe(0);
  });

  it("keeps label values bounded: unknown methods and models past the cap are folded", async () => {
    const m = new PrometheusMetrics("0");
    for (let i = 0; i < 300; i++) m.requestDone({ route: "/api/chat", method: "POST", status: 200, model: `m${i}`, seconds: 0, canceled: false, generations: [] });
    m.requestDone({ route: "unmatched", method: "BREW", status: 404, model: undefined, seconds: 0, canceled: false, generations: [] });
    const s = await scrape(m);
    const models = new Set(s.samples("ollamats_http_requests_total", { route: "/api/chat" }).map((x) => x.labels.model));
    expect(models.size).toBe(257);
    expect(s.value("ollamats_http_requests_total", { model: "other" })).toBe(300 - 256);
    expect(s.value("ollamats_http_requests_total", { route: "unmatched", method: "other" })).toBe(1);
  });
});

describe("meterTransfer", () => {
  it("counts bytes moved past each layer's first report, and passes every report on", () => {
    let bytes = 0;
    const seen: unknown[] = [];
    const p = meterTransfer({ transferred: (_d, n) => void (bytes += n) }, "pull", (x) => void seen.push(x));
    p({ status: "pulling manifest" });
    p({ status: "pulling aaa", digest: "sha256:a", total: 100, completed: 100 }); // already in the store
    p({ status: "pulling bbb", digest: "sha256:b", total: 500, completed: 200 }); // resumed: 200 were on disk
    p({ status: "pulling bbb", digest: "sha256:b", total: 500, completed: 350 });
    p({ status: "pulling bbb", digest: "sha256:b", total: 500, completed: 350 });
    p({ status: "pulling bbb", digest: "sha256:b", total: 500, completed: 500 });
    p({ status: "pulling ccc", digest: "sha256:c", total: 10, completed: 0 });
    p({ status: "pulling ccc", digest: "sha256:c", total: 10, completed: 10 });
    p({ status: "success" });
    expect(bytes).toBe(300 + 10);
    expect(seen).toHaveLength(9);
  });
});
