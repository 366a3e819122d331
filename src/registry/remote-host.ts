// `remote_host` of a remote model (Ollama's remote stub), read one way everywhere: one upstream
// URL or several replicas separated by commas. A URL whose path ends in /v1 speaks OpenAI's API
// (vLLM, SGLang, llama-server, TGI, LM Studio); any other speaks Ollama's /api. Without a scheme
// it is http://, and without a port too, Ollama's 11434. Credentials never live in it: an API
// key comes from OLLAMATS_REMOTE_KEYS, so nothing secret reaches the store, `show` or a push.

export type UpstreamApi = "ollama" | "openai";

export interface UpstreamAddress {
  /** Base URL without a trailing slash: `http://h:8000/v1` or `http://h:11434`. */
  base: string;
  api: UpstreamApi;
  /** host:port, as OLLAMATS_REMOTE_KEYS names it. */
  hostPort: string;
  hostname: string;
}

export class RemoteHostError extends Error {}

function parseOne(raw: string): UpstreamAddress {
  const text = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new RemoteHostError(`invalid remote host ${JSON.stringify(text)}: expected a URL such as http://host:8000/v1`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new RemoteHostError(`invalid remote host ${JSON.stringify(text)}: only http and https are supported`);
  if (u.username || u.password) {
    throw new RemoteHostError("remote host must not contain credentials: set the API key in OLLAMATS_REMOTE_KEYS (host:port=key) on the daemon instead");
  }
  if (u.search || u.hash) throw new RemoteHostError(`invalid remote host ${JSON.stringify(text)}: no query or fragment allowed`);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && u.port === "") u.port = "11434";
  const path = u.pathname.replace(/\/+$/, "");
  const api: UpstreamApi = /\/v1$/.test(path) ? "openai" : "ollama";
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return { base: `${u.protocol}//${u.host}${path}`, api, hostPort: `${u.hostname}:${port}`, hostname: u.hostname.replace(/^\[|\]$/g, "") };
}

/** Every replica of a remote_host value; throws RemoteHostError with what to fix. */
export function parseRemoteHosts(raw: string): UpstreamAddress[] {
  const parts = raw.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (parts.length === 0) throw new RemoteHostError("remote host is empty");
  const seen = new Set<string>();
  const out: UpstreamAddress[] = [];
  for (const p of parts) {
    const a = parseOne(p);
    if (seen.has(a.base)) throw new RemoteHostError(`remote host lists ${a.base} twice`);
    seen.add(a.base);
    out.push(a);
  }
  return out;
}
