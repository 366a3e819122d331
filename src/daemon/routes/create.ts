// POST /api/create (reference §4.8): the `from`/`files`/`adapters`/… form and the legacy
// `modelfile` form; NDJSON progress, or the last status with stream:false.
import { Hono } from "hono";
import { z } from "zod";
import { createInputFromModelfile, LegacyModelfileError } from "../../registry/create-modelfile.js";
import { CreateError, createModel, type CreateInput } from "../../registry/create.js";
import { parseModelName } from "../../registry/name.js";
import { pullModel } from "../../registry/pull.js";
import { parseBody } from "../body.js";
import { goTemplate } from "../prompt/render.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest } from "../errors.js";
import { createSchema } from "../schemas.js";
import { progressReply } from "./transfer.js";

const createBody = createSchema.extend({
  /** legacy form: the whole Modelfile */
  modelfile: z.string().optional(),
  path: z.string().optional(),
  requires: z.string().optional(),
  renderer: z.string().optional(),
  parser: z.string().optional(),
  draft_files: z.record(z.string(), z.string()).nullish(),
  draft_quantize: z.string().optional(),
  // A remote model (Ollama's remote stub): `from` names it upstream unless remote_model does.
  remote_host: z.string().optional(),
  remote_model: z.string().optional(),
});

export function createRoutes(deps: Deps): Hono {
  const app = new Hono();
  const logger = (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => deps.log[level](msg, fields);
  const userAgent = `ollamats/${deps.version} (${process.arch} ${process.platform}) Node/${process.version}`;

  app.post("/api/create", async (c) => {
    const body = await parseBody(c, createBody);
    const name = parseModelName(body.model ?? body.name ?? "");
    if (!name) throw badRequest("invalid model name");

    let legacy: Omit<CreateInput, "name"> = {};
    if (body.modelfile !== undefined && !body.from && !body.files) {
      try {
        legacy = createInputFromModelfile(body.modelfile);
      } catch (e) {
        if (e instanceof LegacyModelfileError || e instanceof Error) throw badRequest(e.message);
        throw e;
      }
    }
    const input: CreateInput = {
      ...legacy,
      name,
      ...(body.from !== undefined ? { from: body.from } : {}),
      ...(body.files !== undefined ? { files: body.files } : {}),
      ...(body.adapters !== undefined ? { adapters: body.adapters } : {}),
      ...(body.draft_files ? { draftFiles: body.draft_files } : {}),
      ...(body.draft_quantize ? { draftQuantize: body.draft_quantize } : {}),
      ...(body.template !== undefined ? { template: body.template } : {}),
      ...(body.system !== undefined ? { system: body.system } : {}),
      ...(body.license !== undefined ? { license: body.license } : {}),
      ...(body.parameters !== undefined ? { parameters: { ...legacy.parameters, ...body.parameters } } : {}),
      ...(body.messages !== undefined ? { messages: body.messages } : {}),
      ...(body.requires ? { requires: body.requires } : {}),
      ...(body.renderer ? { renderer: body.renderer } : {}),
      ...(body.parser ? { parser: body.parser } : {}),
      ...(body.remote_host !== undefined ? { remoteHost: body.remote_host } : {}),
      ...(body.remote_model !== undefined ? { remoteModel: body.remote_model } : {}),
    };
    const quantize = body.quantize || body.quantization;
    if (quantize) input.quantize = quantize;
    if (input.template !== undefined) goTemplate(input.template); // a bad template is a 400 before anything is written

    return progressReply(c, body.stream !== false, async (progress, signal) => {
      try {
        await createModel(deps.store, deps.models, input, progress, {
          noPrune: deps.config.noPrune,
          remoteKeys: deps.config.remote.keys,
          signal,
          pull: (from, p) => pullModel(deps.store, from, { noPrune: deps.config.noPrune, signal, userAgent, logger }, p),
        });
      } catch (err) {
        if (err instanceof CreateError) throw new ApiError(err.status, err.message);
        throw err;
      }
    });
  });
  return app;
}
