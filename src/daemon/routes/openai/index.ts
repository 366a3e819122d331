// The OpenAI-compatible API under /v1, with OpenAI's error shape for every error it raises.
import { Hono } from "hono";
import type { Deps } from "../../deps.js";
import { chatRoutes } from "./chat.js";
import { completionRoutes } from "./completions.js";
import { embeddingRoutes } from "./embeddings.js";
import { openaiErrorHandler } from "./errors.js";
import { modelListRoutes } from "./models.js";
import { rerankV1Routes } from "./rerank.js";
import { responsesRoutes } from "./responses.js";
import { ResponseStore } from "../../services/response-store.js";

export const OPENAI_PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/v1/rerank", "/v1/models"] as const;

export function openaiRoutes(deps: Deps): Hono {
  const app = new Hono();
  for (const routes of [chatRoutes, completionRoutes, embeddingRoutes, rerankV1Routes, modelListRoutes]) app.route("/", routes(deps));
  app.route("/", responsesRoutes(deps, new ResponseStore()));
  app.onError(openaiErrorHandler(deps.log));
  return app;
}
