// How a command that failed ends: one `Error: <message>` line on stderr and exit code 1, never a
// stack trace. "Could not connect" says how to start the daemon: the installed service's start
// command, or `ollamats serve`.

import { existsSync } from "node:fs";
import os from "node:os";

/** An error the user caused or can fix; printed as is. */
export class CliError extends Error {
  override name = "CliError";
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** "could not connect": Ollama's hint to run `serve`, or the installed service's start command. */
export async function unreachableMessage(fallback: string): Promise<string> {
  let hint: string | undefined;
  try {
    const { serviceStartHint } = await import("../service/manage.js");
    hint = serviceStartHint(process.platform, process.env.HOME || os.homedir(), process.env, existsSync);
  } catch {
    hint = undefined;
  }
  if (hint === undefined) return fallback;
  return `could not connect to ollamats server, start the service with '${hint}' (or run 'ollamats serve')`;
}

/** Print `Error: <message>` and exit 1. */
export async function fail(err: unknown): Promise<never> {
  const { ServerUnreachableError } = await import("../api/client.js");
  const message = err instanceof ServerUnreachableError ? await unreachableMessage(err.message) : errorMessage(err);
  process.stderr.write(`Error: ${message}\n`);
  process.exit(1);
}
