// What the systemd and launchd generators share: names, the marker that says a file is ours, and
// the checks on environment variables given to the service.

export const SERVICE_NAME = "ollamats";
/** The launchd job label (reverse-DNS, as launchd wants). */
export const LAUNCHD_LABEL = "com.ollamats.server";
/** The system account the system-wide systemd service runs as. */
export const SERVICE_USER = "ollamats";
/** Its home: the state directory systemd creates (StateDirectory=ollamats); models go under .ollama/. */
export const SERVICE_HOME = "/var/lib/ollamats";

/**
 * Every file `ollamats service install` writes starts with a comment holding this text; install
 * and uninstall refuse to touch a file without it.
 */
export const MARKER = "Managed by ollamats";

export type Platform = "linux" | "darwin";
export type Scope = "system" | "user";

export interface ServiceSpec {
  scope: Scope;
  /** The daemon's command line: [node, .../dist/cli/main.js, "serve"], or [/usr/bin/ollamats, "serve"]. */
  command: string[];
  /** Files shipped by a package instead of written by `ollamats service install`: no marker. */
  packaged?: boolean;
  /** Environment for the service, in order. */
  env: [string, string][];
  /** launchd system daemons: the account to run as. */
  runAs?: string;
  /** launchd: where stdout/stderr go. */
  logFile?: string;
}

/** True when a file's text carries our marker in its first lines. */
export function isOurs(text: string): boolean {
  return text.split("\n", 6).some((line) => line.includes(MARKER));
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export class ServiceError extends Error {
  override name = "ServiceError";
}

/**
 * Variables that hold keys. Unit files, drop-ins and plists are readable by every local user (and
 * `systemctl show` prints their environment), so these are refused in `--env`, and shown redacted
 * if a hand-edited file has them.
 */
const SECRET_ENV: Readonly<Record<string, string>> = {
  OLLAMA_API_KEYS:
    "service files are readable by every local user, so keys do not go there; put them in a file only the service's account can read (chmod 600) and pass --env OLLAMA_API_KEYS_FILE=/path/to/keys",
  OLLAMA_API_KEY: "the daemon does not use OLLAMA_API_KEY (the CLI sends it), and service files are readable by every local user",
};

/** An environment entry as printed: a secret's value is never shown. */
export function displayEnv(key: string, value: string): string {
  return `${key}=${Object.hasOwn(SECRET_ENV, key) ? "<redacted>" : value}`;
}

/**
 * One `--env` argument: `KEY=VALUE`, `KEY=` (remove KEY), or `KEY` (take the value from the
 * current environment). Returns [key, value], value undefined meaning "remove".
 */
export function parseEnvArg(arg: string, current: NodeJS.ProcessEnv): [string, string | undefined] {
  const eq = arg.indexOf("=");
  const key = eq < 0 ? arg : arg.slice(0, eq);
  if (!ENV_NAME.test(key)) throw new ServiceError(`invalid environment variable name ${JSON.stringify(key)} in --env ${arg}`);
  // Removing one (KEY=) is allowed; giving one is not, and the message does not repeat the value.
  if (Object.hasOwn(SECRET_ENV, key) && arg !== `${key}=`) throw new ServiceError(`--env ${key}: ${SECRET_ENV[key]}`);
  let value: string | undefined;
  if (eq < 0) {
    value = current[key];
    if (value === undefined) throw new ServiceError(`--env ${key}: ${key} is not set in this environment (use --env ${key}=VALUE)`);
  } else value = arg.slice(eq + 1);
  if (/[\n\r\0]/.test(value)) throw new ServiceError(`--env ${key}: the value may not contain newlines or NUL`);
  return [key, value === "" ? undefined : value];
}

/** Apply --env changes to an existing list (keeps order; a changed key stays where it was). */
export function mergeEnv(existing: [string, string][], changes: [string, string | undefined][]): [string, string][] {
  const out = existing.map(([k, v]) => [k, v] as [string, string]);
  for (const [key, value] of changes) {
    const i = out.findIndex(([k]) => k === key);
    if (value === undefined) {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = [key, value];
    else out.push([key, value]);
  }
  return out;
}
