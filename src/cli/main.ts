#!/usr/bin/env node
// The `ollamats` command. Node 22 and newer keep V8's compiled code of the modules a command loads
// on disk between runs (module.enableCompileCache; the same for the daemon a `serve` becomes);
// switched on before anything else is imported, so that it covers them. Node 20 has no such cache.
import module from "node:module";

(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
await import("./start.js");
