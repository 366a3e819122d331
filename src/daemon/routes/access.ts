// Every path the daemon serves, with who may use it. One table, so a route cannot be added without
// deciding: `open` needs no key (the health check load balancers and `ollamats serve` readiness
// probe), `inference` runs or reads models (an inference-scoped key and OLLAMA_NO_MANAGEMENT allow
// it), `management` changes the store (pull, push, create, copy, delete, blobs). The paths are
// matched exactly as the router matches them (hono's c.req.path). test/unit/api-access.test.ts
// checks that every route the app registers is in the table.

export type RouteAccess = "open" | "inference" | "management";

const EXACT: Readonly<Record<string, RouteAccess>> = {
  "/": "open",
  "/api/version": "inference",
  "/api/status": "inference",
  "/api/tags": "inference",
  "/api/ps": "inference",
  "/api/show": "inference",
  "/api/generate": "inference",
  "/api/chat": "inference",
  "/api/embed": "inference",
  "/api/embeddings": "inference",
  "/api/rerank": "inference",
  "/api/tokenize": "inference",
  "/api/detokenize": "inference",
  "/v1/chat/completions": "inference",
  "/v1/completions": "inference",
  "/v1/embeddings": "inference",
  "/v1/rerank": "inference",
  "/v1/models": "inference",
  "/v1/responses": "inference",
  "/v1/messages": "inference",
  "/v1/messages/count_tokens": "inference",
  "/metrics": "inference",
  "/api/create": "management",
  "/api/delete": "management",
  "/api/copy": "management",
  "/api/pull": "management",
  "/api/push": "management",
};

const PREFIXES: readonly [string, RouteAccess, string][] = [
  ["/api/blobs/", "management", "/api/blobs/:digest"],
  ["/v1/models/", "inference", "/v1/models/:model"],
  // a stored response, its input items (GET), its removal (DELETE)
  ["/v1/responses/", "inference", "/v1/responses/:id"],
];

/** Who may use `path`; undefined for a path no route serves (it answers 404). */
export function routeAccess(path: string): RouteAccess | undefined {
  if (Object.hasOwn(EXACT, path)) return EXACT[path];
  return PREFIXES.find(([prefix]) => path.startsWith(prefix))?.[1];
}

/** The route serving `path` as a pattern ("/api/blobs/:digest"), "unmatched" for none: a bounded
 *  name for metrics, where raw paths would make a series per digest or per mistyped URL. */
export function routeName(path: string): string {
  if (Object.hasOwn(EXACT, path)) return path;
  return PREFIXES.find(([prefix]) => path.startsWith(prefix))?.[2] ?? "unmatched";
}
