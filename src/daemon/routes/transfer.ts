// POST /api/pull and POST /api/push (reference §1.13, §4.4, §4.5): NDJSON progress, or with
// `stream: false` the last progress object (200) or the error with its status.
import { Hono, type Context } from "hono";
import { z } from "zod";
import type { ProgressResponse } from "../../api/types.js";
import { AsyncQueue } from "../../backends/async-queue.js";
import { parseModelName } from "../../registry/name.js";
import { pullModel, PullError } from "../../registry/pull.js";
import { pushModel, PushError } from "../../registry/push.js";
import { parseBody } from "../body.js";
import type { Deps } from "../deps.js";
import { ApiError, badRequest, errorMessage } from "../errors.js";
import { ofOne } from "../../backends/batches.js";
import { jsonResponse, ndjsonResponse } from "../stream.js";
import { requestSignal } from "../services/request.js";
import { meterTransfer } from "../metrics/transfer-meter.js";

const transferSchema = z.object({
  model: z.string().optional(),
  name: z.string().optional(),
  insecure: z.boolean().optional(),
  stream: z.boolean().nullish(),
  // accepted and ignored, as Ollama does
  username: z.string().optional(),
  password: z.string().optional(),
});

type Run = (progress: (p: ProgressResponse) => void, signal: AbortSignal) => Promise<void>;

function toApiError(err: unknown): Error {
  if (err instanceof PullError || err instanceof PushError) return new ApiError(err.status, err.message);
  if (err instanceof ApiError) return err;
  return new ApiError(500, errorMessage(err));
}

/**
 * Run a progress-reporting operation for a request. An error before the first progress line is
 * answered with its own status; after it, as a final `{"error"}` line (Ollama's streamResponse).
 */
export async function progressReply(c: Context, stream: boolean, run: Run): Promise<Response> {
  const ac = requestSignal(c.req.raw);
  const events = new AsyncQueue<ProgressResponse>();
  void run((p) => events.push(p), ac.signal).then(
    () => events.end(),
    (err: unknown) => events.fail(toApiError(err)),
  );
  if (!stream) {
    let last: ProgressResponse | undefined;
    for await (const p of events) last = p;
    return jsonResponse(last ?? { status: "success" });
  }
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
  return ndjsonResponse(c, ofOne(rest()), () => ac.abort());
}

/** Test and tuning knobs (not Ollama settings): part size and retry back-off of transfers. */
function transferTuning(): { minPartSize?: number; maxPartSize?: number; backoffMs?: number } {
  const num = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);
  const part = num(process.env.OLLAMATS_TRANSFER_PART_SIZE);
  const backoff = num(process.env.OLLAMATS_TRANSFER_BACKOFF_MS);
  return {
    ...(part ? { minPartSize: part, maxPartSize: Math.max(part, 1_000_000_000) } : {}),
    ...(backoff !== undefined ? { backoffMs: backoff } : {}),
  };
}

export function transferRoutes(deps: Deps): Hono {
  const app = new Hono();
  const logger = (level: "debug" | "info" | "warn", msg: string, fields?: Record<string, unknown>) => deps.log[level](msg, fields);
  const userAgent = `ollamats/${deps.version} (${process.arch} ${process.platform}) Node/${process.version}`;

  app.post("/api/pull", async (c) => {
    const body = await parseBody(c, transferSchema);
    const name = parseModelName(body.model || body.name || "");
    if (!name) throw badRequest("invalid model name");
    const t = transferTuning();
    return progressReply(c, body.stream !== false, (progress, signal) =>
      pullModel(
        deps.store,
        name,
        {
          insecure: body.insecure === true,
          noPrune: deps.config.noPrune,
          signal,
          userAgent,
          logger,
          ...(t.backoffMs !== undefined ? { backoffMs: t.backoffMs } : {}),
          tuning: { ...(t.minPartSize ? { minPartSize: t.minPartSize, maxPartSize: t.maxPartSize } : {}) },
        },
        meterTransfer(deps.metrics, "pull", progress),
      ),
    );
  });

  app.post("/api/push", async (c) => {
    const body = await parseBody(c, transferSchema);
    const raw = body.model || body.name || "";
    if (raw === "") throw badRequest("model is required");
    const name = parseModelName(raw);
    if (!name) throw badRequest("invalid model name");
    const t = transferTuning();
    return progressReply(c, body.stream !== false, (progress, signal) =>
      pushModel(deps.store, name, { insecure: body.insecure === true, signal, userAgent, logger, ...t }, meterTransfer(deps.metrics, "push", progress)),
    );
  });

  return app;
}
