// GET /api/ps: loaded models, from what each runner actually allocated; a remote model with its
// upstreams and their state (healthy, unhealthy, circuit open) and requests in flight.
import { Hono } from "hono";
import type { ProcessModel } from "../../api/types.js";
import type { Deps } from "../deps.js";
import { detailsOf, localTime, remoteFields } from "./details.js";

export function psRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.get("/api/ps", (c) => {
    const models: ProcessModel[] = deps.scheduler
      .loaded()
      .sort((a, b) => b.expiresAt.getTime() - a.expiresAt.getTime())
      .map((m) => ({
        name: m.spec.shortName,
        model: m.spec.shortName,
        size: m.runner.info.sizeBytes,
        digest: m.spec.manifest.digest,
        details: detailsOf(m.spec),
        expires_at: localTime(m.expiresAt),
        size_vram: m.runner.info.vramBytes,
        context_length: m.runner.info.contextLength,
        ...remoteFields(m.spec),
        ...(m.runner.upstreams ? { upstreams: m.runner.upstreams() } : {}),
      }));
    return c.json({ models });
  });
  return app;
}
