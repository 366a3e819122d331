// CORS with Ollama's allow-list (OLLAMA_ORIGINS + local origins, `*` wildcards). A disallowed
// browser origin gets an empty 403.
import type { MiddlewareHandler } from "hono";

const ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "User-Agent",
  "Accept",
  "X-Requested-With",
  "OpenAI-Beta",
  "X-Request-Id",
  "x-stainless-arch",
  "x-stainless-async",
  "x-stainless-custom-poll-interval",
  "x-stainless-helper-method",
  "x-stainless-lang",
  "x-stainless-os",
  "x-stainless-package-version",
  "x-stainless-poll-helper",
  "x-stainless-retry-count",
  "x-stainless-runtime",
  "x-stainless-runtime-version",
  "x-stainless-timeout",
].join(", ");

function toRegex(pattern: string): RegExp {
  const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*");
  return new RegExp(`^${escaped}$`, "i");
}

export function cors(origins: string[]): MiddlewareHandler {
  const patterns = origins.map(toRegex);
  const allowed = (o: string) =>
    /^(chrome|moz|safari-web)-extension:\/\//.test(o) || patterns.some((p) => p.test(o));
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (!origin) {
      await next();
      return;
    }
    if (!allowed(origin)) return c.body(null, 403);
    c.header("Access-Control-Allow-Origin", origin);
    c.header("Vary", "Origin");
    // A page may read the request id it was given (request-log.ts).
    c.header("Access-Control-Expose-Headers", "X-Request-Id");
    if (c.req.method === "OPTIONS") {
      c.header("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
      c.header("Access-Control-Allow-Headers", ALLOWED_HEADERS);
      c.header("Access-Control-Max-Age", "43200");
      return c.body(null, 204);
    }
    await next();
  };
}
