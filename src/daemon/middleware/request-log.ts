// One line per request: method, path, status, duration. Never the body (prompts stay private).
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../log.js";

export function requestLog(log: Logger): MiddlewareHandler {
  return async (c, next) => {
    const t0 = performance.now();
    await next();
    log.info("request", {
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      duration: `${(performance.now() - t0).toFixed(3)}ms`,
    });
  };
}
