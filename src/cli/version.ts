// The package version, read from the package.json at the repository root (two levels above both
// src/cli/version.ts and the built dist/cli/version.js).

import { readFileSync } from "node:fs";

let version: string | undefined;

export function cliVersion(): string {
  if (version === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
      version = typeof pkg.version === "string" ? pkg.version : "0.0.0";
    } catch {
      version = "0.0.0";
    }
  }
  return version;
}
