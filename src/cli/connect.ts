// How every client command reaches the daemon and reports failure: the Client is built from
// OLLAMA_HOST (via loadConfig), and any error becomes one `Error: <message>` line on stderr with
// exit code 1 — never a stack trace.

import { Client } from "../api/client.js";
import { loadConfig, type Config } from "../config.js";
import { cliVersion } from "./version.js";

export function userAgent(): string {
  return `ollamats/${cliVersion()} (${process.arch} ${process.platform}) Node/${process.version}`;
}

/** The configuration, parsed once per process. */
let cached: Config | undefined;
export function cliConfig(): Config {
  cached ??= loadConfig();
  return cached;
}

export function connect(config: Config = cliConfig()): Client {
  return new Client(config.host.url, { userAgent: userAgent() });
}

/** Build a client and check the server answers (Ollama's checkServerHeartbeat, Linux flavour). */
export async function connectChecked(): Promise<Client> {
  const client = connect();
  await client.heartbeat();
  return client;
}

/** An error the user caused or can fix; printed as is. */
export class CliError extends Error {
  override name = "CliError";
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/** Print `Error: <message>` and exit 1. */
export function fail(err: unknown): never {
  process.stderr.write(`Error: ${errorMessage(err)}\n`);
  process.exit(1);
}

/** Wrap a yargs handler so any failure is reported as one line. */
export function action<A>(fn: (argv: A) => Promise<void>): (argv: A) => Promise<void> {
  return async (argv: A) => {
    try {
      await fn(argv);
    } catch (err) {
      fail(err);
    }
  };
}
