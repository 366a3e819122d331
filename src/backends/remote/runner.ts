// A loaded remote model: requests go to one of its upstream replicas (pool.ts), with failover
// to another replica while nothing has been received yet, and are passed on as the client reads
// them. A client that leaves aborts the upstream request at once (the connection is closed,
// which vLLM, llama-server and Ollama take as a cancel).
import type { EmbedOptions, EmbedResult, GenerateJob, MessagesJob, LoadedInfo, Runner, RunnerEvent, RunnerExit, RunnerFeatures, UpstreamState } from "../backend.js";
import { EngineError } from "../errors.js";
import { prefixKeys } from "./affinity.js";
import { answerError, nowNs, type HttpCall } from "./dialect.js";
import { UpstreamEvents } from "./event-stream.js";
import { classify, readAnswer, UpstreamFailure, type UpstreamHttp, type UpstreamResponse } from "./http.js";
import { readErrorText } from "../../http/bounded-body.js";
import type { Replica, ReplicaPool } from "./pool.js";

export const REMOTE_FEATURES: RunnerFeatures = {
  messages: true,
  tokenize: true,
  logprobs: { missing: "remote models do not pass token probabilities on" },
  images: { missing: "remote models do not pass images on yet" },
  embed: true,
  rank: { missing: "remote models do not rerank" },
};

/** What the loaded-model listing (/api/ps of an Ollama upstream) may take. */
const INFO_LIMIT = 1024 * 1024;

/** Told of each request to an upstream as it answers or fails (the daemon's metrics). */
export type UpstreamListener = (r: { upstream: string; ok: boolean; seconds: number }) => void;

export class RemoteRunner implements Runner {
  readonly features = REMOTE_FEATURES;
  readonly info: LoadedInfo = { contextLength: 0, gpuLayers: 0, sizeBytes: 0, vramBytes: 0, threads: 0 };
  readonly exited: Promise<RunnerExit>;
  private exit!: (e: RunnerExit) => void;
  private health: NodeJS.Timeout | undefined;
  private closed = false;
  private infoAt = 0;

  constructor(
    private readonly model: string,
    private readonly pool: ReplicaPool,
    private readonly http: UpstreamHttp,
    healthIntervalMs: number,
    private readonly onUpstream: UpstreamListener = () => undefined,
  ) {
    this.exited = new Promise((resolve) => (this.exit = resolve));
    this.health = setInterval(() => void this.checkHealth(), healthIntervalMs);
    this.health.unref();
  }

  get slots(): number {
    return this.pool.replicas.length;
  }

  upstreams(): UpstreamState[] {
    return this.pool.states();
  }

  /**
   * Sends the call to a replica, and to the next one while a replica fails before answering
   * (`ready` decides when an answer counts: for a stream, its first event).
   */
  private async withFailover<T>(keys: readonly string[], signal: AbortSignal, call: (r: Replica) => HttpCall, ready: (res: UpstreamResponse, r: Replica) => Promise<T>): Promise<{ value: T; replica: Replica; end: () => void }> {
    const tried = new Set<number>();
    let last: UpstreamFailure | undefined;
    for (;;) {
      if (signal.aborted) throw new EngineError("runner_failed", "request canceled");
      const r = this.pool.pick(keys, tried);
      if (!r) throw last?.toEngineError() ?? new EngineError("upstream_down", `no upstream of ${this.model} is available`);
      tried.add(r.index);
      const end = this.pool.begin(r, keys);
      let res: UpstreamResponse | undefined;
      const t0 = performance.now();
      try {
        const c = call(r);
        res = await this.http.call(r, { method: "POST", url: c.url, body: c.body, signal });
        const value = await ready(res, r);
        this.pool.succeeded(r);
        // told after the first event is on its way to the client: metrics are not on its path
        const seconds = (performance.now() - t0) / 1000;
        setImmediate(() => this.onUpstream({ upstream: r.address.base, ok: true, seconds }));
        return { value, replica: r, end };
      } catch (err) {
        if (!signal.aborted) this.onUpstream({ upstream: r.address.base, ok: false, seconds: (performance.now() - t0) / 1000 });
        end();
        res?.body.destroy();
        const failure = err instanceof UpstreamFailure || err instanceof EngineError ? err : classify(err, r, signal);
        if (failure instanceof UpstreamFailure && failure.retryable) {
          this.pool.failed(r);
          last = failure;
          continue;
        }
        if (failure instanceof UpstreamFailure && failure.kind === "unauthorized") this.pool.failed(r);
        throw failure instanceof UpstreamFailure ? failure.toEngineError() : failure;
      }
    }
  }

  async *generate(job: GenerateJob, signal: AbortSignal): AsyncIterable<RunnerEvent> {
    for await (const batch of this.generateBatches(job, signal)) yield* batch;
  }

  /** The answer as it arrives: the events of each upstream read in one batch. */
  async *generateBatches(job: GenerateJob, signal: AbortSignal): AsyncIterable<RunnerEvent[]> {
    // Affinity picks between replicas: with one there is nothing to hash.
    const keys = this.pool.replicas.length > 1 ? prefixKeys(job) : [];
    const startedAt = nowNs();
    const { value, replica, end } = await this.withFailover(
      keys,
      signal,
      (r) => r.dialect.generate(job, this.model),
      async (res, r) => {
        const events = new UpstreamEvents(res.body, r.dialect.reader(startedAt));
        try {
          return { events, first: await events.next() };
        } catch (err) {
          throw err instanceof EngineError ? err : classify(err, r, signal);
        }
      },
    );
    try {
      let batch = value.first;
      while (batch) {
        if (batch[batch.length - 1]?.type === "done") await this.refreshInfo(replica);
        yield batch;
        try {
          batch = await value.events.next();
        } catch (err) {
          if (err instanceof EngineError) throw err;
          const f = classify(err, replica, signal);
          if (f instanceof UpstreamFailure) this.pool.failed(replica);
          throw new EngineError("runner_failed", `${f.message}, in the middle of the answer`);
        }
      }
    } finally {
      end();
      // A consumer that stopped early (client gone) closes the upstream connection now.
      value.events.close();
    }
  }

  /** A JSON request/answer call (embed, tokenize) with failover. */
  private async json<T>(signal: AbortSignal, call: (r: Replica) => HttpCall, read: (json: unknown, r: Replica) => T, what: string): Promise<T> {
    try {
      const { value, end } = await this.withFailover([], signal, call, async (res, r) => {
        const j = await readAnswer(res, r);
        const failed = answerError(j); // a 200 whose body is an error
        if (failed) throw failed;
        return read(j, r);
      });
      end();
      return value;
    } catch (err) {
      // An upstream without the endpoint (Ollama has no /api/tokenize) cannot do it at all.
      if (err instanceof EngineError && err.code === "upstream_model_not_found" && what !== "embed") {
        throw new EngineError("unsupported", `the upstream of ${this.model} cannot ${what} (it has no such endpoint)`);
      }
      throw err;
    }
  }

  render(input: Pick<MessagesJob, "messages" | "tools" | "think" | "completion">, signal: AbortSignal): Promise<string> {
    return this.json(
      signal,
      (r) => {
        if (!r.dialect.render) throw new EngineError("unsupported", `_debug_render_only is not supported by ${r.label}: an OpenAI-API upstream does not show its prompts`);
        return r.dialect.render(input, this.model);
      },
      (j, r) => (r.dialect.rendered as (json: unknown) => string)(j),
      "render",
    );
  }

  embed(inputs: string[], opts?: EmbedOptions): Promise<EmbedResult> {
    const signal = opts?.signal ?? new AbortController().signal;
    const { signal: _s, ...o } = opts ?? { truncate: true };
    return this.json(signal, (r) => r.dialect.embed(inputs, this.model, o), (j, r) => r.dialect.embedResult(j), "embed");
  }

  tokenize(text: string, signal = new AbortController().signal): Promise<number[]> {
    return this.json(signal, (r) => r.dialect.tokenize(text, this.model), (j, r) => r.dialect.tokens(j), "tokenize");
  }

  detokenize(tokens: number[], signal = new AbortController().signal): Promise<string> {
    return this.json(signal, (r) => r.dialect.detokenize(tokens, this.model), (j, r) => r.dialect.text(j), "detokenize");
  }

  /**
   * What the model holds upstream (size, VRAM, context), for /api/ps, where the upstream reports
   * it (Ollama): read when a request ends, at most once a second, and at each health check.
   */
  private async refreshInfo(r: Replica, force = false): Promise<void> {
    const url = r.dialect.loaded?.();
    if (!url || (!force && Date.now() - this.infoAt < 1000)) return;
    this.infoAt = Date.now();
    try {
      const res = await this.http.call(r, { method: "GET", url, signal: AbortSignal.timeout(2000) });
      const info = r.dialect.loadedInfo?.(await readAnswer(res, r, INFO_LIMIT), this.model);
      if (info) Object.assign(this.info, info);
    } catch {
      // sizes stay as they were: /api/ps is informative only
    }
  }

  /** One GET per replica: the first health URL that exists decides (a 404 tries the next). */
  private async checkHealth(): Promise<void> {
    await Promise.all(
      this.pool.replicas.map(async (r) => {
        let ok = false;
        for (const url of r.dialect.health()) {
          const ac = new AbortController();
          const t = setTimeout(() => ac.abort(), Math.min(5000, this.http.timeoutMs));
          try {
            const res = await this.http.call(r, { method: "GET", url, signal: ac.signal });
            await readErrorText(res.body); // to its end (bounded), so the connection is kept
            ok = true;
            break;
          } catch (err) {
            if (err instanceof UpstreamFailure && err.kind === "not_found") continue;
            break;
          } finally {
            clearTimeout(t);
          }
        }
        r.unhealthy = !ok;
        if (ok) await this.refreshInfo(r, true);
        if (ok && r.openUntil !== 0 && !r.trial) this.pool.succeeded(r);
      }),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.health);
    await this.http.close().catch(() => undefined);
    this.exit({ code: 0, signal: null, message: "closed" });
  }
}
