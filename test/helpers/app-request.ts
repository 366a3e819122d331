// Requests to an in-process app (`createApp(...).request`), with an optional API key sent as
// `Authorization: Bearer`, as the real clients send it.
import type { Hono } from "hono";

export type KeyedInit = RequestInit & { key?: string };

export function keyedRequest(app: Hono): (path: string, init?: KeyedInit) => Response | Promise<Response> {
  return (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (init.key !== undefined) headers.set("authorization", `Bearer ${init.key}`);
    return app.request(path, { ...init, headers });
  };
}
