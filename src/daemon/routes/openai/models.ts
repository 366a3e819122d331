// GET /v1/models and GET /v1/models/:model (reference §1.15).
import { Hono } from "hono";
import { InvalidModelNameError } from "../../../registry/model-spec.js";
import { displayName, parseModelName } from "../../../registry/name.js";
import type { Deps } from "../../deps.js";
import { badRequest, notFound } from "../../errors.js";
import { jsonResponse } from "../../stream.js";

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export function modelListRoutes(deps: Deps): Hono {
  const app = new Hono();

  app.get("/v1/models", async () => {
    const data = (await deps.store.listManifests()).map((m) => ({
      id: displayName(m.name),
      object: "model",
      created: unix(m.mtime),
      owned_by: m.name.namespace,
    }));
    return jsonResponse({ object: "list", data });
  });

  // Names may hold slashes (user/model:tag, host/ns/model:tag).
  app.get("/v1/models/:model{.+}", async (c) => {
    const model = c.req.param("model");
    const name = parseModelName(model);
    if (!name) throw badRequest("invalid model name");
    let spec;
    try {
      spec = await deps.models.resolve(model);
    } catch (err) {
      if (err instanceof InvalidModelNameError) throw badRequest("invalid model name");
      throw err;
    }
    if (!spec) throw notFound(`model '${displayName(name)}' not found`);
    return jsonResponse({ id: model, object: "model", created: unix(spec.manifest.mtime), owned_by: name.namespace });
  });

  return app;
}
