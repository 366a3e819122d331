// createApp(deps) composes middleware and route groups into the hono app.
import { closeWhenBodyUnread } from "./middleware/close-unread.js";
import { Hono } from "hono";
import { allowedOrigins } from "../config.js";
import type { Deps } from "./deps.js";
import { ApiError, failure } from "./errors.js";
import { apiAccess } from "./middleware/api-access.js";
import { cors } from "./middleware/cors.js";
import { hostGuard } from "./middleware/host-guard.js";
import { requestLog } from "./middleware/request-log.js";
import { routeAccess } from "./routes/access.js";
import { blobRoutes } from "./routes/blobs.js";
import { chatRoutes } from "./routes/chat.js";
import { createRoutes } from "./routes/create.js";
import { generateRoutes } from "./routes/generate.js";
import { healthRoutes } from "./routes/health.js";
import { modelRoutes } from "./routes/models.js";
import { psRoutes } from "./routes/ps.js";
import { tokenizeRoutes } from "./routes/tokenize.js";
import { embedRoutes } from "./routes/embed.js";
import { rerankRoutes } from "./routes/rerank.js";
import { metricsRoutes } from "./routes/metrics.js";
import { openaiRoutes } from "./routes/openai/index.js";
import { anthropicRoutes } from "./routes/anthropic/index.js";
import { transferRoutes } from "./routes/transfer.js";

export function createApp(deps: Deps): Hono {
  const app = new Hono();
  // First, so every request (refused ones too) has an id, a log line and a count in the metrics.
  app.use("*", requestLog(deps.log, deps.metrics));
  app.use("*", closeWhenBodyUnread());
  app.use("*", hostGuard(deps.config.host.host));
  app.use("*", cors(allowedOrigins(deps.config)));
  app.use("*", apiAccess({ keys: deps.keys, noManagement: deps.config.noManagement }));
  for (const routes of [healthRoutes, generateRoutes, chatRoutes, modelRoutes, psRoutes, blobRoutes, createRoutes, transferRoutes, embedRoutes, rerankRoutes, openaiRoutes, anthropicRoutes, tokenizeRoutes, metricsRoutes]) {
    app.route("/", routes(deps));
  }
  app.notFound((c) => {
    // A path we serve (routes/access.ts lists them all) with a wrong method: Ollama's 405.
    if (routeAccess(c.req.path) !== undefined) {
      return c.text("405 method not allowed", 405);
    }
    return c.text("404 page not found", 404);
  });
  app.onError((err, c) => {
    const f = failure(err, c.req.raw.signal.aborted);
    if (f.logLine) deps.log.error(f.logLine, { stack: deps.log.level < 0 && !(err instanceof ApiError) ? (err as Error).stack : undefined });
    return c.json({ error: f.error.message }, f.error.status as 400);
  });
  return app;
}
