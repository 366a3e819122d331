// `ollamats serve`: build the daemon from the config, listen, and drain on SIGINT/SIGTERM.
import { serve as listen, type ServerType } from "@hono/node-server";
import { readFileSync } from "node:fs";
import { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ApiKey } from "../api-keys.js";
import type { Config } from "../config.js";
import { notifyReady } from "../service/notify.js";
import { pruneAtStartup } from "../registry/prune.js";
import { createBackends } from "../backends/index.js";
import { sweepAtStartup } from "../registry/store-sweep.js";
import { ModelResolver } from "../registry/model-spec.js";
import { Store } from "../registry/store.js";
import type { Deps } from "./deps.js";
import { createLogger } from "./log.js";
import { createStateDir } from "./state-dir.js";
import type { StateStore } from "../backends/backend.js";
import { Scheduler } from "./scheduler/scheduler.js";
import { loadApiKeys } from "./keys-file.js";
import { logAccessPolicy } from "./middleware/api-access.js";
import { lingerOnClose } from "./lingering-close.js";
import { createApp } from "./server.js";
import { PrometheusMetrics } from "./metrics/prometheus.js";
import { requestLogFields } from "./request-context.js";

export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

export function buildDeps(config: Config, states?: StateStore, keys: readonly ApiKey[] = config.apiKeys): Deps {
  const log = createLogger(config.debug, undefined, { format: config.logFormat, context: requestLogFields });
  const store = new Store(config.models);
  const version = packageVersion();
  const metrics = new PrometheusMetrics(version);
  const backends = createBackends({
    config,
    ...(states ? { states } : {}),
    warn: (m) => log.warn(m),
    log: (level, msg, fields) => log[level](msg, fields),
    onUpstream: (r) => metrics.upstream(r),
  });
  const scheduler = new Scheduler({ backends, config, log, observer: metrics });
  metrics.watch(scheduler);
  return {
    config,
    store,
    models: new ModelResolver(store),
    scheduler,
    log,
    metrics,
    version,
    keys,
  };
}

/** How long an idle keep-alive connection is kept: longer than the clients' own idle timeouts
 *  (undici 4 s, Go's transport 90 s), bounded so abandoned connections are closed in the end. */
const KEEP_ALIVE_IDLE_MS = 10 * 60_000;

/** How long running generations may take to finish after SIGTERM/SIGINT before they are cut. */
export const SHUTDOWN_GRACE_MS = 5_000;

export interface RunningServer {
  url: string;
  port: number;
  deps: Deps;
  /** Stops accepting, lets running generations finish within graceMs, unloads every runner. */
  close(graceMs?: number): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const keys = await loadApiKeys(config); // a bad keys file stops the start, before anything is made
  const stateDir = createStateDir();
  const deps = buildDeps(config, stateDir.store, keys);
  logAccessPolicy(deps.log, config, keys);
  await sweepAtStartup(deps.store.blobsDir, deps.log); // never throws; what killed writes left
  await pruneAtStartup(deps.store, config, deps.log); // never throws; skipped with OLLAMA_NOPRUNE
  const app = createApp(deps);
  const hostname = config.host.host === "" ? "0.0.0.0" : config.host.host;
  const server: ServerType = await new Promise<ServerType>((resolve, reject) => {
    const s = listen({ fetch: app.fetch, hostname, port: config.host.port }, () => resolve(s));
    if (s instanceof HttpServer) lingerOnClose(s);
    s.once("error", reject);
  }).catch((err: unknown) => {
    stateDir.remove();
    throw err;
  });
  // Streams may stay silent for minutes while a model loads or thinks.
  if ("requestTimeout" in server) server.requestTimeout = 0;
  // Idle keep-alive connections stay open as on Ollama's Go server (no idle timeout there): with
  // Node's default of 5 s, a client that keeps idle sockets without a timeout of its own (Node's
  // http.Agent) got "socket hang up" whenever it reused one just as the daemon closed it.
  if ("keepAliveTimeout" in server) server.keepAliveTimeout = KEEP_ALIVE_IDLE_MS;
  const port = (server.address() as AddressInfo).port;
  deps.log.info(`Listening on ${hostname}:${port} (version ${deps.version})`, { models: config.models });
  deps.scheduler.warmUp();
  return {
    url: `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`,
    port,
    deps,
    close: async (graceMs = 0) => {
      // Stop accepting connections (idle keep-alive ones close now); requests that still arrive
      // on open connections get 503 from the scheduler. Running generations get graceMs to end,
      // then every runner is unloaded (a generation still running ends with an error line) and
      // the remaining connections are dropped.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if ("closeIdleConnections" in server) server.closeIdleConnections();
      await deps.scheduler.shutdown(graceMs);
      stateDir.remove();
      if ("closeAllConnections" in server) server.closeAllConnections();
      await closed;
    },
  };
}

export async function serveForever(config: Config): Promise<void> {
  const running = await startServer(config);
  // Under systemd Type=notify, readiness is signalled only once the listener is up.
  notifyReady({ status: `Listening on ${running.url}`, onError: (m) => running.deps.log.warn(m) });
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      running.deps.log.info(`received ${sig}, shutting down`);
      // The grace period plus time to end the runners; past that, give up.
      const force = setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS + 10_000);
      force.unref();
      void running.close(SHUTDOWN_GRACE_MS).then(() => {
        running.deps.log.info("shutdown complete");
        resolve();
      });
      // A second signal means "now".
      process.once(sig as NodeJS.Signals, () => process.exit(1));
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  });
}
