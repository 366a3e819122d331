// An answer given before the request's body has arrived in full closes the connection.
//
// A route may answer without reading the whole body (refused early, a blob the store already
// has, an upload that fails half-way on a full disk). @hono/node-server then discards what still
// arrives for at most 500 ms and closes the socket: a keep-alive client that meanwhile sent its
// next request on it got "other side closed" (seen under load: an upload's 500 on a full disk,
// then the next request on the same connection). With "Connection: close" the client opens a
// new connection instead, and lingering-close.ts makes the answer arrive before the close.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { MiddlewareHandler } from "hono";

export function closeWhenBodyUnread(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    const incoming = env?.incoming;
    // A request without a body is complete once its headers are; a stream written straight to
    // the socket has sent its headers already (its body was read before it started).
    if (!incoming || incoming.complete || env?.outgoing?.headersSent) return;
    try {
      c.res.headers.set("Connection", "close");
    } catch {
      // immutable headers (a Response made elsewhere): the drain's close still applies
    }
  };
}
