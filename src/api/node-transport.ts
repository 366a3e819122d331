// The CLI's HTTP transport: node:http (or node:https for an https OLLAMA_HOST) with one
// keep-alive agent per client. node:http is part of Node's start-up snapshot, so a command pays
// ~15 ms less before its first request than with undici's modules (measured: a GET through
// node:http 15-20 ms over `node -e 0`, through undici's request API 30-35 ms). No timeouts: a
// model load can keep the headers waiting for minutes, and a stream can pause.
import http from "node:http";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { readBoundedText } from "../http/bounded-body.js";

/** An answer's body: read whole, thrown away, or iterated chunk by chunk. */
export interface AnswerBody extends AsyncIterable<Buffer> {
  /** The whole body as text; past `limit` bytes an error (the server at OLLAMA_HOST may be
   *  anything, and one that sends without end must not take the CLI's memory). */
  text(limit?: number): Promise<string>;
  dump(): Promise<void>;
}

/** The most a whole answer may take (a verbose `show` of a large vocabulary is tens of MB). */
export const ANSWER_LIMIT = 256 * 1024 * 1024;

export interface HttpAnswer {
  statusCode: number;
  body: AnswerBody;
}

export interface HttpCall {
  method: string;
  body?: string | Readable;
  headers: Record<string, string>;
  signal?: AbortSignal;
}

function answerBody(res: http.IncomingMessage): AnswerBody {
  return {
    [Symbol.asyncIterator]: () => res[Symbol.asyncIterator]() as AsyncIterator<Buffer>,
    text: (limit = ANSWER_LIMIT) => readBoundedText(res, limit, "the server's answer"),
    dump: () =>
      new Promise<void>((resolve) => {
        if (res.complete) return resolve();
        res.once("end", resolve).once("close", resolve).resume();
      }),
  };
}

export class NodeTransport {
  private agent: http.Agent | undefined;

  async send(url: URL, call: HttpCall): Promise<HttpAnswer> {
    const mod = url.protocol === "https:" ? await import("node:https") : http;
    this.agent ??= new mod.Agent({ keepAlive: true });
    const agent = this.agent;
    // A text body carries its length: Node frames a DELETE's body by neither length nor chunks.
    const headers = typeof call.body === "string" ? { ...call.headers, "content-length": String(Buffer.byteLength(call.body)) } : call.headers;
    return new Promise<HttpAnswer>((resolve, reject) => {
      const req = mod.request(url, { method: call.method, headers, agent, ...(call.signal ? { signal: call.signal } : {}) }, (res) => {
        resolve({ statusCode: res.statusCode ?? 0, body: answerBody(res) });
      });
      req.once("error", reject);
      if (call.body === undefined) req.end();
      else if (typeof call.body === "string") req.end(call.body);
      // A failing upload (a file that changed while read) destroys the request: its error rejects above.
      else pipeline(call.body, req).catch((err: unknown) => req.destroy(err as Error));
    });
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}
