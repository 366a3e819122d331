// GET/HEAD / and /api/version: the heartbeat the CLI and UIs probe; GET /api/status: whether
// Ollama's cloud (ollama.com models, web search) is available. It never is here: ollamats runs
// only local and remote-engine models, so cloud is disabled, by OLLAMA_NO_CLOUD ("env") or by
// design ("none": nothing set it).
import { Hono } from "hono";
import { OLLAMA_API_VERSION } from "../api-version.js";
import type { Deps } from "../deps.js";

export function healthRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.on(["GET", "HEAD"], "/", (c) => c.text("Ollama is running"));
  app.on(["GET", "HEAD"], "/api/version", (c) => c.json({ version: OLLAMA_API_VERSION, ollamats_version: deps.version }));
  app.get("/api/status", (c) => c.json({ cloud: { disabled: true, source: deps.config.noCloud ? "env" : "none" } }));
  return app;
}
