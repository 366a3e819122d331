// Request bodies are parsed and validated here, at the edge; handlers receive typed data.
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";
import { z } from "zod";
import { parseJson } from "./bounded-json.js";
import { decodeBody, tooLarge } from "./content-encoding.js";
import { badRequest } from "./errors.js";

/** Reads the web body, refusing more than `limit` bytes in all (app.request in tests). */
async function readWeb(body: ReadableStream<Uint8Array>, limit: number): Promise<Buffer> {
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    parts.push(value);
  }
  return Buffer.concat(parts);
}

/**
 * Reads the Node request, refusing more than `limit` bytes in all. Past the limit it keeps
 * nothing more and answers at once; `onTooLarge` arranges the connection's close.
 */
function readNode(incoming: IncomingMessage, limit: number, onTooLarge: () => void): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let total = 0;
    const done = () => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.byteLength;
      if (total <= limit) {
        parts.push(chunk);
        return;
      }
      done();
      onTooLarge();
      reject(tooLarge(limit));
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(parts));
    };
    // A client that goes away mid-body is the request's fault, not an internal error.
    const onError = (err: Error) => {
      done();
      reject(badRequest(`request body not received: ${err.message}`));
    };
    const onClose = () => {
      done();
      reject(badRequest("the client closed the connection before sending the whole request body"));
    };
    incoming.on("data", onData);
    incoming.once("end", onEnd);
    incoming.once("error", onError);
    incoming.once("close", onClose);
  });
}

/** Reads at most `limit` bytes so a huge body cannot exhaust memory. */
async function readBytes(c: Context, limit: number): Promise<Buffer> {
  // Under @hono/node-server the Node request is read directly: the web stream hono would build
  // around it costs a few promise hops per chunk on every request (time to first token).
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  // A refused body is not kept: the answer closes the connection (lingering-close.ts sees that
  // the answer still reaches the client), and what else arrives is discarded as it comes.
  const refuse = () => {
    c.header("Connection", "close");
    incoming?.resume();
  };
  const len = Number(c.req.header("content-length") ?? "0");
  if (len > limit) {
    refuse();
    throw tooLarge(limit);
  }
  if (incoming && !incoming.readableDidRead && !incoming.readableEnded) return readNode(incoming, limit, refuse);
  const body = c.req.raw.body;
  return body ? readWeb(body, limit) : Buffer.alloc(0);
}

/** The body as text: read within `limit`, its Content-Encoding undone (within `limit` too). */
async function readText(c: Context, limit: number): Promise<string> {
  const bytes = await readBytes(c, limit);
  const encoding = c.req.header("content-encoding");
  return (encoding ? await decodeBody(bytes, encoding, limit) : bytes).toString("utf8");
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
    json = parseJson(text); // nesting bounded before any recursive code sees the value
  } catch (err) {
    throw badRequest(`invalid JSON in request body: ${(err as Error).message}`);
  }
  const result = schema.safeParse(json);
  if (!result.success) throw badRequest(result.error.issues.map(describeIssue).join("; "));
  return result.data;
}
