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
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";

export interface LingerBounds {
  maxBytes: number;
  maxMs: number;
}

const defaults: LingerBounds = { maxBytes: 64 << 20, maxMs: 5_000 };

const CURRENT = Symbol("current request");
type TrackedSocket = Socket & { [CURRENT]?: IncomingMessage };

/** Every connection of `server` lingers when it closes with its request unread. */
export function lingerOnClose(server: Server, bounds: LingerBounds = defaults): void {
  server.on("request", (req: IncomingMessage) => {
    const socket = req.socket as TrackedSocket | null;
    if (!socket) return;
    if (!(CURRENT in socket)) install(socket, bounds);
    socket[CURRENT] = req;
  });
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
    const timer = setTimeout(() => this.destroy(), bounds.maxMs);
    timer.unref();
    this.once("close", () => clearTimeout(timer));
    let discarded = 0;
    req.on("data", (chunk: Buffer) => {
      discarded += chunk.byteLength;
      if (discarded > bounds.maxBytes) this.destroy();
    });
    req.on("error", () => undefined); // a reset ends the lingering; nothing to report
    req.once("end", close); // everything the client sent has been read: closing sends no RST
    this.once("end", close); // the client closed its side
    req.resume();
    if (this.writable) this.end();
  };
}
