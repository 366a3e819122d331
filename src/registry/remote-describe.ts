// What a remote model is, asked of its upstream when the model is created, so `show`, `list` and
// the capability checks describe it as the upstream does (Ollama's /api/show: template, system,
// capabilities, details); an OpenAI-API upstream is asked whether it serves the model at all.
// An upstream that cannot be reached does not stop the create: the model may come up later.
import { request } from "undici";
import { readBoundedText } from "../http/bounded-body.js";
import { decodedBody } from "../http/content-encoding.js";
import { isObj } from "../backends/remote/dialect.js";
import { parseRemoteHosts } from "./remote-host.js";

export interface RemoteDescription {
  template?: string;
  system?: string;
  capabilities?: string[];
  family?: string;
  families?: string[];
  parameterSize?: string;
  quantizationLevel?: string;
  format?: string;
}

export class RemoteModelUnknownError extends Error {}

const TIMEOUT_MS = 10_000;
/** A model's description (Ollama's /api/show without verbose) or a model list: far below this. */
const ANSWER_LIMIT = 8 * 1024 * 1024;

async function fetchJson(url: string, key: string | undefined, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await request(url, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: body === undefined ? null : JSON.stringify(body),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  // Too large is as good as unreachable here: the create goes on without a description.
  const text = await readBoundedText(decodedBody(res.body, res.headers["content-encoding"]), ANSWER_LIMIT, `the answer of ${url}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, json };
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The first replica that answers describes the model; undefined when none answers. */
export async function describeRemote(host: string, model: string, keys: Readonly<Record<string, string>>): Promise<RemoteDescription | undefined> {
  for (const up of parseRemoteHosts(host)) {
    const key = keys[up.hostPort.toLowerCase()];
    let r: { status: number; json: unknown };
    try {
      r = up.api === "ollama" ? await fetchJson(`${up.base}/api/show`, key, { model }) : await fetchJson(`${up.base}/models`, key);
    } catch {
      continue; // unreachable: try the next replica
    }
    if (up.api === "ollama") {
      if (r.status === 404) throw new RemoteModelUnknownError(`upstream ${up.base} does not have model '${model}'`);
      if (r.status !== 200 || typeof r.json !== "object" || r.json === null) continue;
      const j = r.json as Record<string, unknown>;
      const d = (typeof j.details === "object" && j.details !== null ? j.details : {}) as Record<string, unknown>;
      return {
        template: str(j.template),
        system: str(j.system),
        capabilities: Array.isArray(j.capabilities) ? j.capabilities.filter((c): c is string => typeof c === "string") : undefined,
        family: str(d.family),
        families: Array.isArray(d.families) ? d.families.filter((c): c is string => typeof c === "string") : undefined,
        parameterSize: str(d.parameter_size),
        quantizationLevel: str(d.quantization_level),
        format: str(d.format),
      };
    }
    if (r.status !== 200) continue;
    const data = (r.json as { data?: unknown } | undefined)?.data;
    // An Ollama-like upstream lists tags in full (`tiny:latest` for `tiny`).
    const names = new Set([model, `${model}:latest`]);
    if (Array.isArray(data) && !data.some((m) => isObj(m) && names.has(m.id as string))) {
      const ids = data.map((m) => (isObj(m) ? m.id : undefined)).filter((id) => typeof id === "string");
      throw new RemoteModelUnknownError(`upstream ${up.base} does not serve model '${model}' (it serves: ${ids.join(", ") || "none"})`);
    }
    return {};
  }
  return undefined;
}
