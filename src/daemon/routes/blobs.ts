// HEAD/POST /api/blobs/:digest (reference §1.14): the CLI uploads local files here before create.
import { Hono } from "hono";
import { parseDigest } from "../../registry/name.js";
import { DigestMismatchError } from "../../registry/store.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest } from "../errors.js";

function digestParam(raw: string): string {
  const d = parseDigest(raw);
  if (!d) throw badRequest("invalid digest format");
  return d;
}

async function* bodyChunks(body: ReadableStream<Uint8Array> | null): AsyncIterable<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

export function blobRoutes(deps: Deps): Hono {
  const app = new Hono();
  // Hono answers HEAD through the GET route (and drops the body), so HEAD is served here.
  app.get("/api/blobs/:digest", async (c) => {
    const digest = digestParam(c.req.param("digest"));
    if (await deps.store.hasBlob(digest)) return c.body(null, 200);
    return c.json({ error: `blob "${c.req.param("digest")}" not found` }, 404);
  });
  app.post("/api/blobs/:digest", async (c) => {
    const digest = digestParam(c.req.param("digest"));
    try {
      const { created } = await deps.store.writeBlobStream(digest, bodyChunks(c.req.raw.body));
      if (created) return c.body(null, 201);
      // A blob the store already has is answered before its body is read. The server then drops
      // the connection, so tell the client not to send its next request on it (a keep-alive client
      // that did would see "other side closed").
      return c.body(null, 200, { Connection: "close" });
    } catch (err) {
      if (err instanceof DigestMismatchError) throw new ApiError(400, err.message);
      throw err;
    }
  });
  return app;
}
