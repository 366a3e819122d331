// Worker thread of format-compiler.ts: compiles JSON Schemas to GBNF off the daemon's event loop.
import { parentPort } from "node:worker_threads";
import type { StructuredOutput } from "../backend.js";
import { compileLlamaFormat } from "./json-schema.js";

export interface FormatRequest {
  id: number;
  format: StructuredOutput;
}

export type FormatReply = { id: number; grammar: string } | { id: number; error: { message: string; invalidSchema: boolean } };

parentPort?.on("message", (req: FormatRequest) => {
  let reply: FormatReply;
  try {
    const spec = compileLlamaFormat(req.format);
    reply = { id: req.id, grammar: spec.kind === "gbnf" ? spec.grammar : "" };
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    reply = { id: req.id, error: { message: String(e.message ?? err), invalidSchema: e.code === "invalid_schema" } };
  }
  parentPort?.postMessage(reply);
});
