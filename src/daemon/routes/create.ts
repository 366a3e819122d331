// POST /api/create (reference §4.8): NDJSON progress, or the last status with stream:false.
import { Hono } from "hono";
import type { ProgressResponse } from "../../api/types.js";
import { AsyncQueue } from "../../backends/async-queue.js";
import { CreateError, createModel } from "../../registry/create.js";
import { parseModelName } from "../../registry/name.js";
import { parseBody } from "../body.js";
import { goTemplate } from "../prompt/render.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest } from "../errors.js";
import { createSchema } from "../schemas.js";
import { jsonResponse, ndjsonResponse } from "../stream.js";

export function createRoutes(deps: Deps): Hono {
  const app = new Hono();
  app.post("/api/create", async (c) => {
    const body = await parseBody(c, createSchema);
    const name = parseModelName(body.model ?? body.name ?? "");
    if (!name) throw badRequest("invalid model name");
    if (body.quantize ?? body.quantization) throw badRequest("quantization is not supported yet by ollamats");
    if (body.template !== undefined) goTemplate(body.template); // a bad template is a 400 before anything is written
    const events = new AsyncQueue<ProgressResponse>();
    const done = createModel(
      deps.store,
      deps.models,
      { name, from: body.from, files: body.files, template: body.template, system: body.system, license: body.license, parameters: body.parameters, messages: body.messages },
      (p) => events.push(p),
    ).then(
      () => events.end(),
      (err: Error) => {
        events.fail(err instanceof CreateError ? new ApiError(err.status, err.message) : err);
      },
    );
    if (body.stream === false) {
      let last: ProgressResponse | undefined;
      for await (const p of events) last = p;
      await done;
      return jsonResponse(last ?? { status: "success" });
    }
    // Validation errors come before any progress: answer them with their real status.
    const it = events[Symbol.asyncIterator]();
    const first = await it.next();
    async function* rest(): AsyncIterable<ProgressResponse> {
      if (!first.done) yield first.value;
      for (;;) {
        const n = await it.next();
        if (n.done) return;
        yield n.value;
      }
    }
    return ndjsonResponse(rest(), () => undefined);
  });
  return app;
}
