// The REST client the CLI uses to talk to a running daemon (Ollama's api/client.go, in TypeScript).
// Non-streamed calls decode one JSON body; streamed calls read NDJSON line by line, and a line that
// carries `error` ends the stream with that message.

import { STATUS_CODES } from "node:http";
import { Readable } from "node:stream";
import { checkUnchanged, openRegularFile, readChunks } from "../fs/regular-file.js";
import { LineSplitter } from "../http/lines.js";
import { NodeTransport, type HttpAnswer } from "./node-transport.js";
import type {
  ChatRequest,
  ChatResponse,
  CreateRequest,
  GenerateRequest,
  GenerateResponse,
  ListResponse,
  ProcessResponse,
  ProgressResponse,
  ShowRequest,
  ShowResponse,
  VersionResponse,
} from "./types.js";

export interface DeleteRequest {
  model: string;
}
export interface CopyRequest {
  source: string;
  destination: string;
}
export interface PullRequest {
  model: string;
  insecure?: boolean;
  stream?: boolean;
}
export type PushRequest = PullRequest;
export interface EmbedRequest {
  model: string;
  input: string | string[];
  truncate?: boolean;
  dimensions?: number;
  keep_alive?: number | string;
  options?: Record<string, unknown>;
}
export interface EmbedResponse {
  model: string;
  embeddings: number[][];
  total_duration?: number;
  load_duration?: number;
  prompt_eval_count?: number;
}

/** The server answered with HTTP >= 400 (or a stream ended with an `error` line). */
export class ResponseError extends Error {
  /** HTTP status; 0 when the error arrived as a line inside a 200 stream. */
  readonly status: number;
  /** The server's own message (the `error` field, or the raw body when it is not JSON). */
  readonly error: string;
  constructor(status: number, error: string, statusLine?: string) {
    super(statusLine ? `${statusLine}: ${error}` : error || "something went wrong, please see the ollamats server logs for details");
    this.name = "ResponseError";
    this.status = status;
    this.error = error;
  }
}

export const SERVER_UNREACHABLE_MESSAGE = "could not connect to ollamats server, run 'ollamats serve' to start it";

/** Nothing listens at the configured host (connection refused). */
export class ServerUnreachableError extends Error {
  constructor(readonly url: string, options?: { cause?: unknown }) {
    super(SERVER_UNREACHABLE_MESSAGE, options);
    this.name = "ServerUnreachableError";
  }
}

export interface ClientOptions {
  userAgent?: string;
  /** Sent as `Authorization: Bearer <key>` on every request (OLLAMA_API_KEY; a server with API keys wants it). */
  apiKey?: string;
}

/** Most bytes an error answer or a blob upload's answer may hold. */
const ERROR_TEXT_LIMIT = 1024 * 1024;

/** Most bytes one NDJSON line may hold (Ollama's client uses 8 MB). */
export const MAX_LINE_BYTES = 8 * 1000 * 1000;

type Method = "GET" | "HEAD" | "POST" | "DELETE";

export class Client {
  readonly baseUrl: string;
  private readonly userAgent: string;
  private readonly authorization: Record<string, string>;
  private readonly transport = new NodeTransport();

  constructor(baseUrl: string, options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.userAgent = options.userAgent ?? `ollamats (${process.arch} ${process.platform}) Node/${process.version}`;
    this.authorization = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  }

  /** HEAD / — resolves when the server answers. */
  async heartbeat(signal?: AbortSignal): Promise<void> {
    await this.json("HEAD", "/", undefined, signal);
  }

  /** The server's own version: ollamats answers it beside the Ollama API version it serves. */
  async version(signal?: AbortSignal): Promise<string> {
    const res = await this.json<VersionResponse>("GET", "/api/version", undefined, signal);
    return res?.ollamats_version ?? res?.version ?? "";
  }

  async list(signal?: AbortSignal): Promise<ListResponse> {
    return (await this.json<ListResponse>("GET", "/api/tags", undefined, signal)) ?? { models: [] };
  }

  async ps(signal?: AbortSignal): Promise<ProcessResponse> {
    return (await this.json<ProcessResponse>("GET", "/api/ps", undefined, signal)) ?? { models: [] };
  }

  async show(req: ShowRequest, signal?: AbortSignal): Promise<ShowResponse> {
    const res = await this.json<ShowResponse>("POST", "/api/show", req, signal);
    if (!res) throw new ResponseError(500, "empty response from /api/show");
    return res;
  }

  async delete(req: DeleteRequest, signal?: AbortSignal): Promise<void> {
    await this.json("DELETE", "/api/delete", req, signal);
  }

  async copy(req: CopyRequest, signal?: AbortSignal): Promise<void> {
    await this.json("POST", "/api/copy", req, signal);
  }

  async embed(req: EmbedRequest, signal?: AbortSignal): Promise<EmbedResponse> {
    const res = await this.json<EmbedResponse>("POST", "/api/embed", req, signal);
    if (!res) throw new ResponseError(500, "empty response from /api/embed");
    return res;
  }

  generate(req: GenerateRequest, onChunk: (chunk: GenerateResponse) => void, signal?: AbortSignal): Promise<void> {
    return this.stream("/api/generate", req, onChunk, signal);
  }

  chat(req: ChatRequest, onChunk: (chunk: ChatResponse) => void, signal?: AbortSignal): Promise<void> {
    return this.stream("/api/chat", req, onChunk, signal);
  }

  create(req: CreateRequest, onProgress: (p: ProgressResponse) => void, signal?: AbortSignal): Promise<void> {
    return this.stream("/api/create", req, onProgress, signal);
  }

  pull(req: PullRequest, onProgress: (p: ProgressResponse) => void, signal?: AbortSignal): Promise<void> {
    return this.stream("/api/pull", req, onProgress, signal);
  }

  push(req: PushRequest, onProgress: (p: ProgressResponse) => void, signal?: AbortSignal): Promise<void> {
    return this.stream("/api/push", req, onProgress, signal);
  }

  /** True when the server already holds the blob (HEAD /api/blobs/:digest answers 200). */
  async hasBlob(digest: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.json("HEAD", `/api/blobs/${digest}`, undefined, signal);
      return true;
    } catch (err) {
      // 404: missing; 405: a server without HEAD on this route (the POST then tells)
      if (err instanceof ResponseError && (err.status === 404 || err.status === 405)) return false;
      // A HEAD answer has no body to say why; a refusal (a server that does not take blobs, a key
      // that may not upload) is asked again with GET, whose 403 carries the server's reason.
      if (err instanceof ResponseError && err.status === 403) {
        await this.json("GET", `/api/blobs/${digest}`, undefined, signal);
        return true;
      }
      throw err;
    }
  }

  /**
   * Upload a local file as blob `digest` ("sha256:<hex>") unless the server has it already.
   * onProgress receives (bytes sent, file size); it is called once with (size, size) when done.
   */
  async createBlob(
    digest: string,
    filePath: string,
    onProgress?: (sent: number, total: number) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    // Opened before anything is sent: a FIFO or a device is refused at once, and exactly the
    // bytes the file had when opened are sent (fs/regular-file.ts).
    const file = await openRegularFile(filePath);
    try {
      const { size } = file;
      if (await this.hasBlob(digest, signal)) {
        onProgress?.(size, size);
        return;
      }
      let sent = 0;
      let readError: unknown;
      const counted = async function* (): AsyncGenerator<Buffer> {
        try {
          for await (const chunk of readChunks(file)) {
            sent += chunk.length;
            onProgress?.(sent, size);
            yield chunk;
          }
        } catch (err) {
          readError = err;
          throw err;
        }
      };
      let res: HttpAnswer;
      try {
        res = await this.send("POST", `/api/blobs/${digest}`, {
          body: Readable.from(counted()),
          headers: { "content-type": "application/octet-stream", "content-length": String(size) },
          signal,
        });
      } catch (err) {
        throw readError ?? err; // the file changed under the upload: say that, not "request aborted"
      }
      const text = await res.body.text(ERROR_TEXT_LIMIT);
      if (readError) throw readError;
      // The server may answer once it has `size` bytes, before the reader's own last check ran.
      // (What it stored is safe either way: it verifies the bytes against the digest.)
      await checkUnchanged(file);
      if (res.statusCode >= 400) throw errorFromBody(res.statusCode, text, false);
      onProgress?.(size, size);
    } finally {
      await file.handle.close();
    }
  }

  /** Close idle connections (the process can exit without waiting for keep-alive timers). */
  async close(): Promise<void> {
    this.transport.close();
  }

  // ---- plumbing ----------------------------------------------------------------------------

  private url(path: string): string {
    return this.baseUrl + path;
  }

  private async send(
    method: Method,
    path: string,
    opts: { body?: string | NodeJS.ReadableStream; headers?: Record<string, string>; signal?: AbortSignal },
  ): Promise<HttpAnswer> {
    const url = this.url(path);
    try {
      return await this.transport.send(new URL(url), {
        method,
        ...(opts.body !== undefined ? { body: opts.body as string | Readable } : {}),
        headers: { "user-agent": this.userAgent, ...this.authorization, ...opts.headers },
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
    } catch (err) {
      if (isConnectionRefused(err)) throw new ServerUnreachableError(url, { cause: err });
      throw err;
    }
  }

  private async json<T>(method: Method, path: string, data: unknown, signal?: AbortSignal): Promise<T | undefined> {
    const res = await this.send(method, path, {
      body: data === undefined ? undefined : JSON.stringify(data),
      headers: { "content-type": "application/json", accept: "application/json" },
      signal,
    });
    const text = method === "HEAD" ? (await res.body.dump(), "") : await res.body.text();
    if (res.statusCode >= 400) throw errorFromBody(res.statusCode, text, false);
    if (text.trim() === "") return undefined;
    return JSON.parse(text) as T;
  }

  private async stream<T>(path: string, data: unknown, onChunk: (chunk: T) => void, signal?: AbortSignal): Promise<void> {
    const res = await this.send("POST", path, {
      body: JSON.stringify(data),
      headers: { "content-type": "application/json", accept: "application/x-ndjson" },
      signal,
    });
    if (res.statusCode >= 400) {
      const text = await res.body.text(ERROR_TEXT_LIMIT);
      const firstLine = text.split("\n").find((l) => l.trim() !== "") ?? "";
      throw errorFromBody(res.statusCode, firstLine, true);
    }
    for await (const line of readLines(res.body as AsyncIterable<Buffer>)) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new ResponseError(0, line);
      }
      if (parsed !== null && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string") {
        const message = (parsed as { error: string }).error;
        if (message !== "") throw new ResponseError(0, message);
      }
      onChunk(parsed as T);
    }
  }
}

/** Split a byte stream into non-empty text lines (NDJSON); a line longer than `maxLine` without
 *  its end is an error (LineTooLongError). */
export async function* readLines(body: AsyncIterable<Buffer | Uint8Array | string>, maxLine = MAX_LINE_BYTES): AsyncGenerator<string> {
  const splitter = new LineSplitter(maxLine);
  for await (const chunk of body) yield* splitter.push(chunk);
  yield* splitter.end();
}

function errorFromBody(status: number, text: string, withStatusLine: boolean): ResponseError {
  let message = text;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string") {
      message = (parsed as { error: string }).error;
    }
  } catch {
    // not JSON: the raw body is the message, as Ollama's client does
  }
  message = message.trim();
  const statusLine = `${status} ${STATUS_CODES[status] ?? ""}`.trim();
  if (message === "") return new ResponseError(status, statusLine);
  return new ResponseError(status, message, withStatusLine ? statusLine : undefined);
}

function isConnectionRefused(err: unknown, depth = 0): boolean {
  if (err === null || typeof err !== "object" || depth > 4) return false;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (e.code === "ECONNREFUSED") return true;
  if (Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every((x) => isConnectionRefused(x, depth + 1))) return true;
  return isConnectionRefused(e.cause, depth + 1);
}
