// `npm run bench -- --only metrics` (scripts/bench/cases/metrics.ts): does scraping /metrics cost
// decode speed? One daemon, one loaded model, one stream at a time of BENCH_METRICS_TOKENS
// (default 128) tokens; rounds alternate (ABBA) between no scraper and a scraper fetching /metrics
// every second (BENCH_METRICS_SCRAPE_MS, as a tight Prometheus would), BENCH_METRICS_ROUNDS
// (default 4) of each; the ratio is the geometric mean of each neighbouring pair's (one run of each).
// Decode tok/s of a stream = eval_count / eval_duration of its final chunk
// (the runner's decode clock), and also the client's view (tokens after the first / time from the
// first to the last). Issue 18's target: with scraping / without ≥ 0.99 (reported only). Runs
// alone with `tsx scripts/bench-metrics.ts` (the 1B-shaped model by default; BENCH_METRICS_MODEL=tiny
// or small for a smaller one).
import http from "node:http";
import { fileURLToPath } from "node:url";
import { loadModel, startWithModel, unloadModel } from "./bench-daemon.js";
import { makeTestModel } from "./make-test-model.js";
import { caseShape, measureQuietMs, median, ollamaOptions, promptFor, waitForQuiet } from "./bench-plan.js";
import { generate, LoadMeter, nowMs } from "./bench-stream.js";

export interface MetricsRun {
  scraping: boolean;
  /** eval_count / eval_duration of the final chunk. */
  decodeTokPerS: number;
  /** (chunks after the first) / (last chunk − first chunk), as the client saw it. */
  clientTokPerS: number;
  scrapes: number;
  foreignCores: number;
}

export interface MetricsBench {
  tokens: number;
  scrapeEveryMs: number;
  runs: MetricsRun[];
  withoutTokPerS: number;
  withTokPerS: number;
  /** Decode tok/s with scraping / without: the geometric mean of each neighbouring pair's ratio. */
  ratio: number;
  clientRatio: number;
  target: number;
  /** Mean time one scrape took, ms, and the size of its text. */
  scrapeMs: number;
  scrapeBytes: number;
  foreignCoresMax: number;
}

const MODEL = "bench-metrics:q4_0";

/** Fetches /metrics every `everyMs` until stopped; counts the scrapes and their time. */
function scraper(base: string, everyMs: number): { stop: () => Promise<{ scrapes: number; ms: number; bytes: number }> } {
  let scrapes = 0;
  let ms = 0;
  let bytes = 0;
  let stopped = false;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<void>((resolve, reject) => {
      const t = nowMs();
      http
        .get(`${base}/metrics`, { agent }, (res) => {
          let n = 0;
          res.on("data", (c: Buffer) => (n += c.length));
          res.on("end", () => {
            scrapes++;
            ms += nowMs() - t;
            bytes = n;
            resolve();
          });
        })
        .on("error", reject);
    });
  const loop = (async () => {
    while (!stopped) {
      const t = nowMs();
      await once();
      await new Promise((r) => setTimeout(r, Math.max(0, everyMs - (nowMs() - t))));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      agent.destroy();
      return { scrapes, ms, bytes };
    },
  };
}

export async function benchMetrics(opts: { modelPath: string; log?: (s: string) => void; quietWaitMs?: number }): Promise<MetricsBench> {
  const log = opts.log ?? ((s: string) => console.log(s));
  const rounds = Math.max(1, Number(process.env.BENCH_METRICS_ROUNDS) || 4);
  const tokens = Math.max(16, Number(process.env.BENCH_METRICS_TOKENS) || 128);
  const everyMs = Math.max(100, Number(process.env.BENCH_METRICS_SCRAPE_MS) || 1000);
  const shape = caseShape(opts.modelPath, opts.quietWaitMs, 1024);
  const options = ollamaOptions(shape, tokens);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const b = await startWithModel({ OLLAMA_KEEP_ALIVE: "10m" }, MODEL, opts.modelPath);
  const runs: MetricsRun[] = [];
  let scrapeMs = 0;
  let scrapeBytes = 0;
  let scrapeCount = 0;
  try {
    await loadModel(agent, b, options);
    await generate(agent, b.d.url, { model: MODEL, prompt: promptFor(900), raw: true, keep_alive: "10m", options: { ...options, num_predict: 16 } });
    const meter = new LoadMeter(b.d.proc.pid!);
    // ABBA: each half of the order sees the machine's drift equally.
    const order = Array.from({ length: 2 * rounds }, (_, i) => i % 4 === 1 || i % 4 === 2);
    for (const [i, scraping] of order.entries()) {
      await waitForQuiet(await meter.ownPids(), measureQuietMs(shape.quietWaitMs));
      await meter.begin();
      const s = scraping ? scraper(b.d.url, everyMs) : undefined;
      const g = await generate(agent, b.d.url, { model: MODEL, prompt: promptFor(1000 + i), raw: true, keep_alive: "10m", options });
      const sc = s ? await s.stop() : { scrapes: 0, ms: 0, bytes: 0 };
      const foreign = await meter.end();
      const evalCount = Number(g.final.eval_count);
      const run: MetricsRun = {
        scraping,
        decodeTokPerS: evalCount / (Number(g.final.eval_duration) / 1e9),
        clientTokPerS: (evalCount - 1) / ((g.tDone - g.tFirst) / 1000),
        scrapes: sc.scrapes,
        foreignCores: foreign,
      };
      scrapeMs += sc.ms;
      scrapeCount += sc.scrapes;
      if (sc.bytes) scrapeBytes = sc.bytes;
      runs.push(run);
      log(
        `  metrics run ${i + 1} ${scraping ? `scraping every ${everyMs} ms (${sc.scrapes} scrapes)` : "no scraper"}`.padEnd(56) +
          `${run.decodeTokPerS.toFixed(2)} tok/s decode, ${run.clientTokPerS.toFixed(2)} as received, other processes ${foreign.toFixed(2)} cores`,
      );
    }
    await unloadModel(agent, b, options);
  } finally {
    agent.destroy();
    await b.d.stop();
  }
  const pick = (scraping: boolean, key: "decodeTokPerS" | "clientTokPerS") => median(runs.filter((r) => r.scraping === scraping).map((r) => r[key]));
  const withTokPerS = pick(true, "decodeTokPerS");
  const withoutTokPerS = pick(false, "decodeTokPerS");
  // The ratio pairs neighbours: runs 2k and 2k+1 are one of each (A B B A …), so the machine's
  // drift over the case (31 → 35 tok/s in one run) cancels instead of deciding which side's
  // median comes out ahead.
  const paired = (key: "decodeTokPerS" | "clientTokPerS") => {
    const logs: number[] = [];
    for (let k = 0; k + 1 < runs.length; k += 2) {
      const [a, b] = [runs[k]!, runs[k + 1]!];
      const [on, off] = a.scraping ? [a, b] : [b, a];
      logs.push(Math.log(on[key] / off[key]));
    }
    return Math.exp(logs.reduce((x, y) => x + y, 0) / Math.max(1, logs.length));
  };
  return {
    tokens,
    scrapeEveryMs: everyMs,
    runs,
    withoutTokPerS,
    withTokPerS,
    ratio: paired("decodeTokPerS"),
    clientRatio: paired("clientTokPerS"),
    target: 0.99,
    scrapeMs: scrapeCount > 0 ? scrapeMs / scrapeCount : NaN,
    scrapeBytes,
    foreignCoresMax: Math.max(...runs.map((r) => r.foreignCores)),
  };
}

/** The case's lines of the report. */
export function metricsReport(m: MetricsBench): string[] {
  return [
    `decode tok/s without a scraper: ${m.withoutTokPerS.toFixed(2)}, scraped every ${m.scrapeEveryMs} ms: ${m.withTokPerS.toFixed(2)} (median of ${m.runs.length / 2} runs each, ${m.tokens} tokens)`,
    `with / without, neighbouring runs paired: ${m.ratio.toFixed(3)} (as received: ${m.clientRatio.toFixed(3)}); target >= ${m.target} (issue 18): ${m.ratio >= m.target ? "PASS" : "MISS"}`,
    `one scrape: ${m.scrapeMs.toFixed(1)} ms, ${m.scrapeBytes} bytes; other processes up to ${m.foreignCoresMax.toFixed(2)} cores`,
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const shape = process.env.BENCH_METRICS_MODEL === "tiny" || process.env.BENCH_METRICS_MODEL === "small" ? process.env.BENCH_METRICS_MODEL : "1b";
  const modelPath = await makeTestModel({ shape, type: "Q4_0", seed: 1 });
  const result = await benchMetrics({ modelPath });
  for (const line of metricsReport(result)) console.log(line);
}
