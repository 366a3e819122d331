// Closing a connection whose request was not read to its end, the way careful HTTP servers do.
//
// Destroying a socket that still has unread input makes the kernel send RST, and an RST can
// discard our answer from the client's receive buffer before the client reads it: the client
// sees EPIPE or ECONNRESET instead of the answer. This happens whenever a "Connection: close"
// answer is written before the body has arrived: a refused body (too large, unauthorized), or a
// body sent to a route that reads none (GET / with a body, from a client that asks to close).
// So such a socket half-closes (FIN), keeps reading and discarding, and closes once the request
// has arrived or the client has closed its side — bounded in bytes and time, so a client that
// never stops sending cannot hold it open.
//
// The same goes for bytes after a request that are no HTTP (a body longer than its
// Content-Length, garbage on a kept-alive connection): Node answers its parse error by destroying
// the socket at once, which could cut off the answer to the request before them. Here the answer
// in flight is finished first (or a bare 400 written when there is none), then the connection
// lingers as above.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

export interface LingerBounds {
  maxBytes: number;
  maxMs: number;
}

const defaults: LingerBounds = { maxBytes: 64 << 20, maxMs: 5_000 };

const CURRENT = Symbol("current request");
const ANSWER = Symbol("current answer");
const BROKEN = Symbol("no HTTP after this");
type TrackedSocket = Socket & { [CURRENT]?: IncomingMessage; [ANSWER]?: ServerResponse; [BROKEN]?: true };

/** Every connection of `server` lingers when it closes with its request unread, or with bytes
 *  after its last request that are no HTTP. */
export function lingerOnClose(server: Server, bounds: LingerBounds = defaults): void {
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket as TrackedSocket | null;
    if (!socket) return;
    if (!(CURRENT in socket)) install(socket, bounds);
    socket[CURRENT] = req;
    socket[ANSWER] = res;
  });
  server.on("clientError", (err: NodeJS.ErrnoException, raw: Socket) => {
    const socket = raw as TrackedSocket;
    if (socket[BROKEN]) return; // the parser reports every later chunk too
    socket[BROKEN] = true;
    if (err.code === "ECONNRESET" || socket.destroyed || !socket.writable) return socket.destroy();
    // Node's parser is done with this connection: what still comes is read here, and dropped.
    socket.removeAllListeners("data");
    const answer = socket[ANSWER];
    const answering = answer !== undefined && !answer.writableFinished;
    if (!answering) socket.write(`HTTP/1.1 ${PARSE_ERROR_STATUS[err.code ?? ""] ?? "400 Bad Request"}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    const linger = () => drainThenClose(socket, bounds);
    if (answering) answer.once("finish", linger).once("close", linger);
    else linger();
  });
}

/** The statuses Node's own parse-error answer gives (its default clientError handler). */
const PARSE_ERROR_STATUS: Readonly<Record<string, string>> = {
  HPE_HEADER_OVERFLOW: "431 Request Header Fields Too Large",
  HPE_CHUNK_EXTENSIONS_OVERFLOW: "413 Content Too Large",
  ERR_HTTP_REQUEST_TIMEOUT: "408 Request Timeout",
};

/** Half-closes once the written answer is flushed, reads and drops what the client still sends,
 *  and closes when it stops (its FIN) or the bounds are reached. */
function drainThenClose(socket: Socket, bounds: LingerBounds): void {
  if (socket.destroyed || socket.writableEnded) return;
  discardBounded(socket, socket, bounds);
  socket.once("end", () => socket.destroy());
  socket.end();
}

/** Reads and drops what `input` (the socket, or the request on it) still brings; the socket is
 *  destroyed past the bounds in bytes or time. */
function discardBounded(socket: Socket, input: NodeJS.ReadableStream, bounds: LingerBounds): void {
  const timer = setTimeout(() => socket.destroy(), bounds.maxMs);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  let discarded = 0;
  input.on("data", (chunk: Buffer) => {
    discarded += chunk.byteLength;
    if (discarded > bounds.maxBytes) socket.destroy();
  });
  input.resume();
}

function install(socket: TrackedSocket, bounds: LingerBounds): void {
  const destroySoon = socket.destroySoon.bind(socket);
  let lingering = false;
  // Node's HTTP server calls destroySoon() once a "Connection: close" answer is written.
  socket.destroySoon = function lingeringClose(this: TrackedSocket) {
    const req = this[CURRENT];
    if (lingering) return;
    if (!req || req.complete || this.destroyed) return destroySoon();
    lingering = true;
    // Destroy only after our answer has been flushed, as destroySoon would.
    const close = () => (this.writableFinished ? this.destroy() : this.once("finish", () => this.destroy()));
    req.on("error", () => undefined); // a reset ends the lingering; nothing to report
    discardBounded(this, req, bounds);
    req.once("end", close); // everything the client sent has been read: closing sends no RST
    this.once("end", close); // the client closed its side
    if (this.writable) this.end();
  };
}
