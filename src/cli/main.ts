#!/usr/bin/env node
// The `ollamats` command. Node 22 and newer keep V8's compiled code of the modules a command loads
// on disk between runs (module.enableCompileCache; the same for the daemon a `serve` becomes),
// switched on before anything else is imported so that it covers them. The cache lives in the
// user's own cache directory, never Node's default under the shared /tmp: compiled code read from
// a directory another user can write would run as this one. Node 20 has no such cache.
import module from "node:module";
import { MIN_NODE, nodeTooOld } from "./node-version.js";

if (nodeTooOld(process.versions.node)) {
  process.stderr.write(`Error: ollamats needs Node.js ${MIN_NODE} or newer, and this is Node.js ${process.version}; install a current Node.js (https://nodejs.org) and run it again\n`);
  process.exit(1);
}

const enableCompileCache = (module as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache;
// NODE_COMPILE_CACHE set: Node turned the cache on at start, where the user chose
if (enableCompileCache && process.env.NODE_COMPILE_CACHE === undefined && process.env.NODE_DISABLE_COMPILE_CACHE === undefined) {
  const [{ mkdirSync }, path, { default: envPaths }] = await Promise.all([import("node:fs"), import("node:path"), import("env-paths")]);
  try {
    const dir = path.join(envPaths("ollamats", { suffix: "" }).cache, "node-compile-cache");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    enableCompileCache(dir);
  } catch {
    // no home, or a read-only one (a service without a home): no cache, nothing else changes
  }
}
await import("./start.js");
