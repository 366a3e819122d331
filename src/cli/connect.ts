// How every client command reaches the daemon: the Client is built from OLLAMA_HOST (via
// loadConfig, parsed exactly as the daemon parses it) and checked with a heartbeat first.

import { Client } from "../api/client.js";
import { parseModelName } from "../registry/name.js";
import { loadConfig, type Config } from "../config.js";
import { CliError } from "./fail.js";
import { cliVersion } from "./version.js";

export { CliError, errorMessage } from "./fail.js";

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

/** Names are checked before anything is sent, so a typo gets a clear message. */
export function checkModelName(model: string): void {
  if (parseModelName(model) === null) throw new CliError(`invalid model name: ${JSON.stringify(model)}`);
}
