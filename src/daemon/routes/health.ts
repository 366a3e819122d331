// GET/HEAD / and /api/version: the heartbeat the CLI and UIs probe.
import { Hono } from "hono";
import { OLLAMA_API_VERSION } from "../api-version.js";
import type { Deps } from "../deps.js";

export function healthRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.on(["GET", "HEAD"], "/", (c) => c.text("Ollama is running"));
  app.on(["GET", "HEAD"], "/api/version", (c) => c.json({ version: OLLAMA_API_VERSION, ollamats_version: deps.version }));
  return app;
}
