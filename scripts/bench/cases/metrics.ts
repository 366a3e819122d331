// Issue 18: decode speed with /metrics scraped every second vs none (bench-metrics.ts).
import { benchMetrics } from "../../bench-metrics.js";
import type { BenchCase } from "../registry.js";

export const metricsCase: BenchCase = {
  name: "metrics",
  what: "decode tok/s with /metrics scraped every second vs no scraper",
  async run(ctx) {
    if (ctx.quick) process.env.BENCH_METRICS_TOKENS ??= "16";
    process.env.BENCH_METRICS_ROUNDS ??= String(Math.max(2, ctx.rounds));
    const m = await benchMetrics({ modelPath: ctx.modelPath, log: ctx.log });
    return [
      {
        figure: `decode with /metrics scraped every ${m.scrapeEveryMs} ms / without (tok/s)`,
        daemon: m.withTokPerS,
        direct: m.withoutTokPerS,
        value: m.ratio,
        target: `≥ ${m.target}`,
        pass: m.ratio >= m.target,
        foreign: m.foreignCoresMax,
        note: `one scrape ${m.scrapeMs.toFixed(1)} ms, ${m.scrapeBytes} bytes`,
      },
    ];
  },
};
