// createApp(deps) composes middleware and route groups into the hono app.
import { Hono } from "hono";
import { allowedOrigins } from "../config.js";
import type { Deps } from "./deps.js";
import { ApiError, errorMessage } from "./errors.js";
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
import { metricsRoutes } from "./routes/metrics.js";
import { openaiRoutes } from "./routes/openai/index.js";
import { transferRoutes } from "./routes/transfer.js";

export function createApp(deps: Deps): Hono {
  const app = new Hono();
  // First, so every request (refused ones too) has an id, a log line and a count in the metrics.
  app.use("*", requestLog(deps.log, deps.metrics));
  app.use("*", hostGuard(deps.config.host.host));
  app.use("*", cors(allowedOrigins(deps.config)));
  app.use("*", apiAccess({ keys: deps.keys, noManagement: deps.config.noManagement }));
  for (const routes of [healthRoutes, generateRoutes, chatRoutes, modelRoutes, psRoutes, blobRoutes, createRoutes, transferRoutes, embedRoutes, openaiRoutes, tokenizeRoutes, metricsRoutes]) {
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
    if (err instanceof ApiError) {
      if (err.status >= 500) deps.log.error(err.message);
      return c.json({ error: err.message }, err.status as 400);
    }
    deps.log.error(`internal error: ${errorMessage(err)}`, { stack: deps.log.level < 0 ? (err as Error).stack : undefined });
    return c.json({ error: errorMessage(err) }, 500);
  });
  return app;
}
