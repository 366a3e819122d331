// Request bodies are parsed and validated here, at the edge; handlers receive typed data.
import type { Context } from "hono";
import { z } from "zod";
import { badRequest } from "./errors.js";

/** Reads at most `limit` bytes so a huge body cannot exhaust memory. */
async function readText(c: Context, limit: number): Promise<string> {
  const len = Number(c.req.header("content-length") ?? "0");
  if (len > limit) throw badRequest(`request body too large (limit ${limit} bytes)`);
  const body = c.req.raw.body;
  if (!body) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw badRequest(`request body too large (limit ${limit} bytes)`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
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
