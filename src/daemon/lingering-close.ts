// Closing a connection whose request body was refused, the way careful HTTP servers do.
//
// Destroying a socket that still has unread input makes the kernel send RST, and an RST can
// discard our 400 from the client's receive buffer before the client reads it: the client
// then sees "EPIPE"/"ECONNRESET" instead of the answer. So after the answer we half-close
// (FIN), keep reading and discarding what the client still sends, and close when it closes
// its side — bounded in bytes and time, so a client that never stops cannot hold the socket.
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

const LINGERING = Symbol("lingering");

export interface LingerBounds {
  maxBytes: number;
  maxMs: number;
}

const defaults: LingerBounds = { maxBytes: 64 << 20, maxMs: 5_000 };

export function lingerAfterRefusal(incoming: IncomingMessage, bounds: LingerBounds = defaults): void {
  const socket = incoming.socket as (Socket & { [LINGERING]?: true }) | null;
  if (!socket || socket.destroyed || socket[LINGERING]) return;
  socket[LINGERING] = true;
  let discarded = 0;
  const discard = (chunk: Buffer) => {
    discarded += chunk.byteLength;
    if (discarded > bounds.maxBytes) socket.destroy();
  };
  incoming.on("data", discard);
  incoming.on("error", () => undefined); // the client may reset; that ends the lingering
  incoming.resume();
  let timer: NodeJS.Timeout | undefined;
  // Node's HTTP server calls destroySoon() once a "Connection: close" answer is written;
  // this socket ends its writing side instead and waits for the client to finish.
  socket.destroySoon = function lingeringClose(this: Socket) {
    if (this.writable) this.end();
    if (timer) return;
    timer = setTimeout(() => this.destroy(), bounds.maxMs);
    timer.unref();
    this.once("end", () => this.destroy());
    this.once("close", () => clearTimeout(timer));
    this.resume();
  };
}
