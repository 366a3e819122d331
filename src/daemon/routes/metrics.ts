// GET /metrics: the daemon's metrics in Prometheus' text format (metrics/prometheus.ts). With API
// keys configured it needs one, of either scope, like the other read-only routes
// (routes/access.ts); docs/operations.md shows the scrape configuration.
import { Hono } from "hono";
import type { Deps } from "../deps.js";

export function metricsRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.get("/metrics", async (c) => {
    const text = await deps.metrics.render();
    return c.body(text, 200, { "Content-Type": deps.metrics.contentType, "Cache-Control": "no-store" });
  });
  return app;
}
