// Request bodies are parsed and validated here, at the edge; handlers receive typed data.
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { z } from "zod";
import { badRequest } from "./errors.js";

const tooLarge = (limit: number) => badRequest(`request body too large (limit ${limit} bytes)`);

/** Collects chunks, refusing more than `limit` bytes in all. */
async function collect(chunks: AsyncIterable<Uint8Array>, limit: number, stop: () => void): Promise<string> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const value of chunks) {
    total += value.byteLength;
    if (total > limit) {
      stop();
      throw tooLarge(limit);
    }
    parts.push(value);
  }
  return Buffer.concat(parts).toString("utf8");
}

async function* webChunks(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncIterable<Uint8Array> {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

/** Reads at most `limit` bytes so a huge body cannot exhaust memory. */
async function readText(c: Context, limit: number): Promise<string> {
  const len = Number(c.req.header("content-length") ?? "0");
  if (len > limit) throw tooLarge(limit);
  // Under @hono/node-server the Node request is read directly: the web stream hono would build
  // around it costs a few promise hops per chunk on every request (time to first token).
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming && !incoming.readableDidRead && !incoming.readableEnded) {
    return collect(incoming, limit, () => incoming.destroy());
  }
  const body = c.req.raw.body;
  if (!body) return "";
  const reader = body.getReader();
  return collect(webChunks(reader), limit, () => void reader.cancel().catch(() => undefined));
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String).join(".");
  return path ? `invalid value for "${path}": ${issue.message}` : issue.message;
}

export async function parseBody<T extends z.ZodType>(c: Context, schema: T, limit = 64 << 20): Promise<z.infer<T>> {
  const text = await readText(c, limit);
  if (text.trim() === "") throw badRequest("missing request body");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw badRequest(`invalid JSON in request body: ${(err as Error).message}`);
  }
  const result = schema.safeParse(json);
  if (!result.success) throw badRequest(result.error.issues.map(describeIssue).join("; "));
  return result.data;
}
