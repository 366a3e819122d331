// undici's request API and its Agent, loaded from their own modules on the first request. undici's
// index also loads fetch, WebSocket, EventSource, the cache and the mocks, which the CLI never uses
// and which made importing it cost more than starting Node (measured on a loaded 2-core machine:
// the index 278-486 ms, these two modules 128-214 ms, `node -e 0` 164-535 ms). undici's version is
// pinned in package.json, and the client's unit tests run through here.
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";
import type { Agent, Dispatcher } from "undici";

type RequestFn = (this: Dispatcher, opts: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;

export interface UndiciCore {
  Agent: typeof Agent;
  /** undici's `request`, called on a dispatcher (the index binds it the same way). */
  request(dispatcher: Dispatcher, url: URL, opts: Omit<Dispatcher.RequestOptions, "origin" | "path">): Promise<Dispatcher.ResponseData>;
}

let core: UndiciCore | undefined;

export function undiciCore(): UndiciCore {
  if (!core) {
    // undici parses HTTP with llhttp compiled to WebAssembly. V8 compiles it twice, the second
    // time with TurboFan in the background, and exiting waits for that: 0.3-0.5 s after a command
    // had printed everything, on a busy machine. The baseline (Liftoff) code is plenty for the
    // few kilobytes a CLI parses. Only CLI processes load this module; the daemon does not.
    setFlagsFromString("--liftoff-only");
    const require = createRequire(import.meta.url);
    const request = require("undici/lib/api/api-request.js") as RequestFn;
    core = {
      Agent: require("undici/lib/dispatcher/agent.js") as typeof Agent,
      request: (dispatcher, url, opts) => request.call(dispatcher, { ...opts, origin: url.origin, path: url.pathname + url.search }),
    };
  }
  return core;
}
