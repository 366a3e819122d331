// HTTP to an upstream engine (undici): one keep-alive pool per remote model, the silence timeout
// on headers and between body chunks, and the bearer key. A streamed body is read as the consumer
// pulls (event-stream.ts; back-pressure: nothing is read ahead of what the client has taken).
import type { Readable } from "node:stream";
import { Agent, errors, request, type Dispatcher } from "undici";
import { BodyTooLargeError, readBoundedJson, readErrorText } from "../../http/bounded-body.js";
import { decodedBody, isDecodeError, UnknownEncodingError } from "../../http/content-encoding.js";
import { EngineError } from "../errors.js";
import { WarmConnector } from "./warm-connector.js";

/** The most a JSON answer (embeddings of a large batch, a tokenization) may take. */
export const ANSWER_LIMIT = 64 * 1024 * 1024;

/** A failure talking to one upstream; `retryable` ones may go to another replica. */
export class UpstreamFailure extends Error {
  constructor(
    message: string,
    readonly kind: "down" | "timeout" | "rejected" | "not_found" | "unauthorized",
    readonly retryable: boolean,
  ) {
    super(message);
  }

  /** The error a client sees once no replica is left to try. */
  toEngineError(): EngineError {
    switch (this.kind) {
      case "timeout":
        return new EngineError("upstream_timeout", this.message);
      case "rejected":
        return new EngineError("upstream_rejected", this.message);
      case "not_found":
        return new EngineError("upstream_model_not_found", this.message);
      default:
        return new EngineError("upstream_down", this.message);
    }
  }
}

export interface Upstream {
  /** Where requests go, without a trailing slash. */
  base: string;
  /** Shown in messages and logs: no credentials. */
  label: string;
  key?: string;
}

/** An upstream's answer, its body decoded (Content-Encoding). */
export interface UpstreamResponse {
  statusCode: number;
  headers: Dispatcher.ResponseData["headers"];
  body: Readable;
}

export interface UpstreamCall {
  method: "GET" | "POST";
  url: string;
  body?: unknown;
  signal: AbortSignal;
}

export class UpstreamHttp {
  readonly agent: Agent;
  private readonly warm = new WarmConnector();

  constructor(readonly timeoutMs: number) {
    this.agent = new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 30_000, connections: 256, connect: this.warm.connect });
    this.warm.attach(this.agent);
  }

  /** The response, once its status says success; anything else is an UpstreamFailure. */
  async call(up: Upstream, call: UpstreamCall): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { accept: "application/json, text/event-stream, application/x-ndjson" };
    if (call.body !== undefined) headers["content-type"] = "application/json";
    if (up.key) headers.authorization = `Bearer ${up.key}`;
    const payload = call.body === undefined ? null : JSON.stringify(call.body);
    let res: Dispatcher.ResponseData;
    for (let attempt = 1; ; attempt++) {
      try {
        res = await request(call.url, { method: call.method, headers, body: payload, signal: call.signal, dispatcher: this.agent });
        break;
      } catch (err) {
        // A kept-alive connection the upstream hung up on as the request went out: llama-server
        // says keep-alive and then closes after each streamed answer, and a request sent in that
        // instant meets a closed socket (2–4 in 96 requests of a plain undici client here).
        // Nothing was answered, and an inference request changes nothing upstream, so it goes
        // once more, on a new connection.
        if (attempt === 1 && !call.signal.aborted && hungUp(err)) continue;
        throw classify(err, up, call.signal);
      }
    }
    let body: Readable;
    try {
      body = decodedBody(res.body, res.headers["content-encoding"]);
    } catch (err) {
      if (!(err instanceof UnknownEncodingError)) throw err;
      throw new UpstreamFailure(`upstream ${up.label} answered ${err.message}`, "down", true);
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return { statusCode: res.statusCode, headers: res.headers, body };
    const text = await readErrorText(body).catch(() => "");
    throw statusFailure(res.statusCode, upstreamMessage(text), up);
  }

  close(): Promise<void> {
    this.warm.close();
    return this.agent.close();
  }
}

/** A JSON answer of at most `limit` bytes; anything else is the upstream's fault (a 502). */
export async function readAnswer(res: UpstreamResponse, up: Upstream, limit = ANSWER_LIMIT): Promise<unknown> {
  try {
    return await readBoundedJson(res.body, limit, `the answer of upstream ${up.label}`);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new EngineError("upstream_down", err.message);
    if (err instanceof SyntaxError) throw new EngineError("upstream_down", `upstream ${up.label} answered with invalid JSON: ${err.message}`);
    throw err;
  }
}

/** The error text an upstream put in its body: Ollama's {"error"}, OpenAI's {"error":{"message"}}, or plain. */
export function upstreamMessage(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    if (typeof j.error === "string") return j.error;
    if (j.error && typeof j.error === "object" && typeof (j.error as { message?: unknown }).message === "string") return (j.error as { message: string }).message;
    if (typeof j.message === "string") return j.message;
    if (typeof j.detail === "string") return j.detail;
  } catch {
    // not JSON
  }
  return /^\s*</.test(text) ? pageText(text) : text.trim().slice(0, 500);
}

/** What an HTML error page (a proxy's, a load balancer's) says: its title, or its text without markup. */
function pageText(html: string): string {
  const lower = html.toLowerCase();
  const open = lower.indexOf("<title");
  const start = open === -1 ? -1 : lower.indexOf(">", open) + 1;
  const end = start > 0 ? lower.indexOf("</title", start) : -1;
  const text = end > start ? html.slice(start, end) : html.replace(/<[^>]*>/g, " ");
  return text.replace(/\s+/g, " ").trim().slice(0, 500);
}

function statusFailure(status: number, message: string, up: Upstream): UpstreamFailure {
  const said = message ? `: ${message}` : "";
  if (status === 404) return new UpstreamFailure(message || `upstream ${up.label} does not know this model`, "not_found", false);
  if (status === 401 || status === 403) {
    return new UpstreamFailure(`upstream ${up.label} refused the request (${status})${said}; check its key in OLLAMATS_REMOTE_KEYS`, "unauthorized", false);
  }
  if (status === 429 || status >= 500) return new UpstreamFailure(`upstream ${up.label} failed (${status})${said}`, "down", true);
  return new UpstreamFailure(message || `upstream ${up.label} refused the request (${status})`, "rejected", false);
}

/** A transport error's code: undici's own, or the socket error it wraps. */
function errorCode(err: unknown): string | undefined {
  const e = err as { code?: string; cause?: { code?: string } };
  return e.cause?.code ?? e.code;
}

/** An answer undici cannot parse as HTTP/1.1 (llhttp's HPE_*, or its "bad response" for an
 *  unasked 100 Continue): the upstream got the request, so it is not sent again on this one. */
function malformed(err: unknown): boolean {
  const code = errorCode(err);
  return code?.startsWith("HPE_") === true || (code === "UND_ERR_SOCKET" && /^bad (response|upgrade)$/.test((err as Error).message));
}

/** The connection closed or was reset under a request before any answer came. */
function hungUp(err: unknown): boolean {
  const code = errorCode(err);
  return !malformed(err) && (code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "EPIPE");
}

/** A transport error: timeouts and refused or dropped connections. */
export function classify(err: unknown, up: Upstream, signal: AbortSignal): Error {
  if (signal.aborted) return new EngineError("runner_failed", "request canceled");
  if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError) {
    return new UpstreamFailure(`upstream ${up.label} did not answer in time`, "timeout", true);
  }
  if (malformed(err)) {
    const why = (err as Error).message.replace(/^Response does not match the HTTP\/1\.1 protocol \((.*)\)$/, "$1");
    return new UpstreamFailure(`upstream ${up.label} answered with HTTP this server cannot read (${why}); check that its URL is an HTTP/1.1 API and no proxy in between rewrites it`, "down", true);
  }
  if (isDecodeError(err)) {
    return new UpstreamFailure(`upstream ${up.label} sent a body that is not in the Content-Encoding it names (${errorCode(err)}); check the proxy in front of it`, "down", true);
  }
  const e = err as { message?: string; cause?: { message?: string } };
  const detail = errorCode(err) ?? e.cause?.message ?? e.message ?? String(err);
  return new UpstreamFailure(`upstream ${up.label} is unreachable (${detail})`, "down", true);
}
