// GET /api/tags, POST /api/show, DELETE /api/delete, POST /api/copy (reference §1.9, §1.11, §1.12).
// Delete unloads the model, removes the manifest (and directories left empty) and every blob no
// other manifest references, whatever OLLAMA_NOPRUNE says, as Ollama does.
import { Hono } from "hono";
import type { ListModel } from "../../api/types.js";
import { ggufModelInfo, readGgufInfo } from "../../registry/gguf.js";
import { ggufSource, ModelResolver } from "../../registry/model-spec.js";
import { displayName, parseModelName, sameName } from "../../registry/name.js";
import { parseBody } from "../body.js";
import type { Deps } from "../deps.js";
import { badRequest, notFound } from "../errors.js";
import { copySchema, deleteSchema, showSchema } from "../schemas.js";
import { jsonResponse } from "../stream.js";
import { detailsOf, localTime, remoteFields } from "./details.js";
import { showModelfile } from "../../registry/show-modelfile.js";
import { showParameters } from "./show-format.js";
import { DEFAULT_TEMPLATE } from "../prompt/render.js";

export function modelRoutes(deps: Deps): Hono {
  const app = new Hono();

  app.on(["GET", "HEAD"], "/api/tags", async (c) => {
    const models: ListModel[] = [];
    for (const m of await deps.store.listManifests()) {
      let spec;
      try {
        spec = await deps.models.fromManifest(m);
      } catch {
        continue; // a model whose weights are unreadable is not listed
      }
      models.push({
        name: displayName(m.name),
        model: displayName(m.name),
        modified_at: localTime(m.mtime),
        size: m.size,
        digest: m.digest,
        details: detailsOf(spec),
        ...remoteFields(spec),
      });
    }
    models.sort((a, b) => Date.parse(b.modified_at) - Date.parse(a.modified_at));
    return c.json({ models });
  });

  app.post("/api/show", async (c) => {
    const body = await parseBody(c, showSchema);
    const raw = body.model ?? body.name ?? "";
    if (raw === "") throw badRequest("model is required");
    const name = parseModelName(raw);
    if (!name) throw badRequest("invalid model name");
    const spec = await deps.models.resolve(raw);
    if (!spec) throw notFound(`model '${displayName(name)}' not found`);
    const system = body.system ?? spec.system;
    // `parameters` are the model's own; the request's options only go into the Modelfile (a model
    // to re-create with them), as Ollama does: the REPL lists its /set values apart.
    const params = spec.params;
    const src = ggufSource(spec);
    // a model with neither shows the default it runs with, as Ollama does
    const template = spec.template ?? src?.facts.chatTemplate ?? (src ? DEFAULT_TEMPLATE : undefined);
    return jsonResponse({
      ...(spec.licenses.length ? { license: spec.licenses.join("\n") } : {}),
      modelfile: showModelfile(spec, deps.store, system, { ...params, ...(body.options ?? {}) }),
      ...(Object.keys(params).length ? { parameters: showParameters(params) } : {}),
      ...(template ? { template } : {}),
      ...(system ? { system } : {}),
      details: detailsOf(spec),
      ...(spec.messages.length ? { messages: spec.messages } : {}),
      // The cached header has no long arrays (a slim read): verbose reads the file again.
      model_info: src ? ggufModelInfo(body.verbose === true ? await readGgufInfo(src.path, { arrays: "full" }) : src.gguf, body.verbose === true) : {},
      ...(body.verbose && src ? { tensors: src.gguf.tensors.map((t) => ({ name: t.name, type: t.typeName, shape: t.dims })) } : {}),
      capabilities: spec.capabilities,
      ...remoteFields(spec),
      modified_at: localTime(spec.manifest.mtime),
    });
  });

  app.delete("/api/delete", async (c) => {
    const body = await parseBody(c, deleteSchema);
    const raw = body.model ?? body.name ?? "";
    const name = parseModelName(raw);
    if (!name) throw badRequest(`name "${raw}" is invalid`);
    const stored = await deps.store.readManifest(name);
    if (!stored) throw notFound(`model '${raw}' not found`);
    const spec = await new ModelResolver(deps.store).fromManifest(stored).catch(() => null);
    if (spec) await deps.scheduler.expire(spec);
    await deps.store.deleteManifest(stored.name);
    await deps.store.pruneUnreferencedBlobs([stored.manifest.config, ...stored.manifest.layers].map((l) => l.digest));
    return c.body(null, 200);
  });

  app.post("/api/copy", async (c) => {
    const body = await parseBody(c, copySchema);
    const src = parseModelName(body.source);
    if (!src) throw badRequest(`source "${body.source}" is invalid`);
    const dst = parseModelName(body.destination);
    if (!dst) throw badRequest(`destination "${body.destination}" is invalid`);
    const stored = await deps.store.readManifest(src);
    if (!stored) throw notFound(`model "${body.source}" not found`);
    // Only the manifest is copied; the blobs are shared. Copying a model onto itself is a no-op.
    if (sameName(stored.name, dst)) return c.body(null, 200);
    await deps.store.writeManifestRaw(dst, stored.raw);
    return c.body(null, 200);
  });

  return app;
}

