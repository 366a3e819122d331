// The legacy /api/create form: `{"model", "modelfile": "FROM …\nSYSTEM …"}` (Ollama before the
// `from`/`files` fields). The Modelfile is parsed on the server and turned into the newer fields.
// FROM / ADAPTER / DRAFT may name a model or a blob the client uploaded (`@sha256:<hex>`, which is what
// old clients substituted for local paths); a path on the server's file system is refused, so a
// request can never make the daemon read arbitrary files.
import { parseModelfile, parseParameterValue, splitCommandArgs, ModelfileError } from "./modelfile.js";
import { parseDigest } from "./name.js";
import type { CreateInput } from "./create.js";

export class LegacyModelfileError extends Error {
  override name = "LegacyModelfileError";
}

const BLOB_REF = /^@(sha256[:-][0-9a-fA-F]{64})$/;
const looksLikePath = (s: string) => /^(\/|\.{1,2}\/|~|[A-Za-z]:[\\/])/.test(s) || /\.(gguf|bin|safetensors)$/i.test(s);


export type LegacyFields = Omit<CreateInput, "name">;

export function createInputFromModelfile(text: string): LegacyFields {
  let commands;
  try {
    commands = parseModelfile(text, { onWarning: () => undefined });
  } catch (e) {
    throw new LegacyModelfileError((e as ModelfileError).message);
  }
  const out: LegacyFields = {};
  const params: Record<string, unknown> = {};
  const licenses: string[] = [];
  const messages: Array<{ role: string; content: string }> = [];
  for (const c of commands) {
    switch (c.name) {
      case "model": {
        if (BLOB_REF.test(c.args)) {
          out.from = `@${parseDigest((BLOB_REF.exec(c.args) as RegExpExecArray)[1] as string)}`;
        } else if (looksLikePath(c.args)) {
          throw new LegacyModelfileError(`FROM ${c.args}: file paths are not read by the server; upload the file with POST /api/blobs/<digest> and use "FROM @sha256:<hex>" or the "files" field`);
        } else {
          out.from = c.args;
        }
        break;
      }
      case "adapter": {
        const m = BLOB_REF.exec(c.args);
        if (!m) throw new LegacyModelfileError(`ADAPTER ${c.args}: upload the adapter with POST /api/blobs/<digest> and use "ADAPTER @sha256:<hex>" or the "adapters" field`);
        out.adapters = { "adapter.gguf": parseDigest(m[1] as string) as string };
        break;
      }
      case "draft": {
        const m = BLOB_REF.exec(c.args);
        if (!m) throw new LegacyModelfileError(`DRAFT ${c.args}: upload the draft model with POST /api/blobs/<digest> and use "DRAFT @sha256:<hex>" or the "draft_files" field`);
        out.draftFiles = { "draft.gguf": parseDigest(m[1] as string) as string };
        break;
      }
      case "template":
        out.template = c.args;
        break;
      case "system":
        out.system = c.args;
        break;
      case "license":
        licenses.push(c.args);
        break;
      case "requires":
        out.requires = c.args.replace(/^v/, "");
        break;
      case "renderer":
        out.renderer = c.args;
        break;
      case "parser":
        out.parser = c.args;
        break;
      case "message": {
        const [role, content] = splitCommandArgs(c.args);
        messages.push({ role, content });
        break;
      }
      case "parameter": {
        const [key, value] = splitCommandArgs(c.args);
        const typed = parseParameterValue(key, [value]);
        const prev = params[key];
        params[key] = Array.isArray(prev) && Array.isArray(typed) ? [...prev, ...typed] : typed;
        break;
      }
    }
  }
  if (Object.keys(params).length > 0) out.parameters = params;
  if (licenses.length > 0) out.license = licenses;
  if (messages.length > 0) out.messages = messages;
  return out;
}
