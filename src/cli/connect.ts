// How every client command reaches the daemon and reports failure: the Client is built from
// OLLAMA_HOST (via loadConfig), and any error becomes one `Error: <message>` line on stderr with
// exit code 1 — never a stack trace. "Could not connect" says how to start the daemon: the installed
// service's start command, or `ollamats serve`.

import { existsSync } from "node:fs";
import os from "node:os";
import { Client, ResponseError, SERVER_UNREACHABLE_MESSAGE, ServerUnreachableError } from "../api/client.js";
import { parseModelName } from "../registry/name.js";
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
  return new Client(config.host.url, { userAgent: userAgent(), ...(config.apiKey !== "" ? { apiKey: config.apiKey } : {}) });
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

/** Names are checked before anything is sent, so a typo gets a clear message. */
export function checkModelName(model: string): void {
  if (parseModelName(model) === null) throw new CliError(`invalid model name: ${JSON.stringify(model)}`);
}

/** What to do about a 401: the server has API keys and wants one of them in OLLAMA_API_KEY. */
export function apiKeyHint(): string {
  let given = false;
  try {
    given = cliConfig().apiKey !== "";
  } catch {
    // a bad OLLAMA_API_KEY was reported already, or is by the next command
  }
  return given
    ? "the server did not accept the API key in OLLAMA_API_KEY; set OLLAMA_API_KEY to one of the keys it was given (OLLAMA_API_KEYS)"
    : "the server requires an API key; set OLLAMA_API_KEY to one of its keys";
}

export function errorMessage(err: unknown): string {
  if (err instanceof ResponseError && err.status === 401) return apiKeyHint();
  if (err instanceof Error) return err.message;
  return String(err);
}

/** "could not connect": Ollama's hint to run `serve`, or the installed service's start command. */
export async function unreachableMessage(): Promise<string> {
  let hint: string | undefined;
  try {
    // the service code is loaded only to word this message
    const { serviceStartHint } = await import("../service/manage.js");
    hint = serviceStartHint(process.platform, process.env.HOME || os.homedir(), process.env, existsSync);
  } catch {
    hint = undefined;
  }
  if (hint === undefined) return SERVER_UNREACHABLE_MESSAGE;
  return `could not connect to ollamats server, start the service with '${hint}' (or run 'ollamats serve')`;
}

/** Print `Error: <message>` and exit 1. */
export async function fail(err: unknown): Promise<never> {
  const message = err instanceof ServerUnreachableError ? await unreachableMessage() : errorMessage(err);
  process.stderr.write(`Error: ${message}\n`);
  process.exit(1);
}

/** Wrap a yargs handler so any failure is reported as one line. */
export function action<A>(fn: (argv: A) => Promise<void>): (argv: A) => Promise<void> {
  return async (argv: A) => {
    try {
      await fn(argv);
    } catch (err) {
      await fail(err);
    }
  };
}
