// `ollamats service install|uninstall|status`: where the files go, the checks before writing
// anything, the systemctl/launchctl calls. All I/O on the service manager goes through the
// context's `run`, and with `root` set only files are written (under that directory), which is how
// the tests and packagers use it.
import { DAEMON_NODE_FLAGS } from "../daemon/node-flags.js";
import { makeDirs } from "../fs/make-dirs.js";
import { readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { ConfigError, loadConfig } from "../config.js";
import {
  displayEnv,
  isOurs,
  LAUNCHD_LABEL,
  mergeEnv,
  parseEnvArg,
  SERVICE_HOME,
  SERVICE_NAME,
  SERVICE_USER,
  ServiceError,
  type Platform,
  type Scope,
  type ServiceSpec,
} from "./common.js";
import { launchdPlist, parsePlistEnvironment } from "./launchd.js";
import { parseEnvironmentDropIn, systemdEnvironmentDropIn, systemdUnit, sysusersEntry } from "./systemd.js";

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ServiceContext {
  platform: Platform;
  scope: Scope;
  /** Write files under this directory and run no commands. Undefined: the real system. */
  root?: string;
  /** Run systemctl/launchctl even with `root` set (tests, with a fake `run`). Default: root unset. */
  runCommands?: boolean;
  /** Whether systemd runs here (default: /run/systemd/system exists). */
  systemdRunning?: () => Promise<boolean>;
  /** The invoking user's home (per-user services). */
  home: string;
  uid: number;
  /** The environment of this process (for `--env KEY`, SUDO_USER, XDG_CONFIG_HOME). */
  env: NodeJS.ProcessEnv;
  /** What ExecStart / ProgramArguments run. */
  node: string;
  script: string;
  /** launchd system daemons: the account to run as (default: SUDO_USER). */
  runAs?: string;
  run: (cmd: string, args: string[]) => Promise<CommandResult>;
  print: (line: string) => void;
  /** Asks a server URL for its version; undefined when nothing answers. */
  probe?: (url: string) => Promise<string | undefined>;
}

/** Where each file of the service goes, as paths on the target system (before `root`). */
export interface ServiceLayout {
  /** The unit file or the plist. */
  main: string;
  /** systemd: the environment drop-in. */
  dropIn?: string;
  /** systemd system services: the sysusers.d entry. */
  sysusers?: string;
  /** launchd: the directory of the log file, and the file. */
  logDir?: string;
  logFile?: string;
  /** Units shipped by a package, which a unit in /etc would silently override. */
  packaged: string[];
}

export function serviceLayout(ctx: Pick<ServiceContext, "platform" | "scope" | "home" | "env">): ServiceLayout {
  if (ctx.platform === "darwin") {
    const system = ctx.scope === "system";
    const logDir = system ? "/Library/Logs/ollamats" : path.join(ctx.home, "Library/Logs/ollamats");
    return {
      main: system ? `/Library/LaunchDaemons/${LAUNCHD_LABEL}.plist` : path.join(ctx.home, "Library/LaunchAgents", `${LAUNCHD_LABEL}.plist`),
      logDir,
      logFile: path.join(logDir, "server.log"),
      packaged: [],
    };
  }
  if (ctx.scope === "system") {
    const dir = "/etc/systemd/system";
    return {
      main: `${dir}/${SERVICE_NAME}.service`,
      dropIn: `${dir}/${SERVICE_NAME}.service.d/environment.conf`,
      sysusers: `/etc/sysusers.d/${SERVICE_NAME}.conf`,
      packaged: [`/usr/lib/systemd/system/${SERVICE_NAME}.service`, `/lib/systemd/system/${SERVICE_NAME}.service`],
    };
  }
  const config = ctx.env.XDG_CONFIG_HOME && path.isAbsolute(ctx.env.XDG_CONFIG_HOME) ? ctx.env.XDG_CONFIG_HOME : path.join(ctx.home, ".config");
  const dir = path.join(config, "systemd/user");
  return {
    main: path.join(dir, `${SERVICE_NAME}.service`),
    dropIn: path.join(dir, `${SERVICE_NAME}.service.d/environment.conf`),
    packaged: [`/usr/lib/systemd/user/${SERVICE_NAME}.service`],
  };
}

/** The path of a target-system file on this machine. */
function onDisk(ctx: ServiceContext, p: string): string {
  return ctx.root === undefined ? p : path.join(ctx.root, p);
}

async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw err;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

async function writeAtomic(file: string, text: string): Promise<void> {
  await makeDirs(path.dirname(file));
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, text, { mode: 0o644 });
  await rename(tmp, file);
}

function fsError(err: unknown, file: string): ServiceError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EACCES" || code === "EPERM" || code === "EROFS") return new ServiceError(`cannot write ${file}: permission denied`);
  return new ServiceError(`cannot write ${file}: ${(err as Error).message}`);
}

function managerArgs(ctx: ServiceContext): string[] {
  return ctx.scope === "user" ? ["--user"] : [];
}

function launchdDomain(ctx: ServiceContext): string {
  return ctx.scope === "system" ? "system" : `gui/${ctx.uid}`;
}

/** Refuse early, before anything is written, when this cannot work. */
function commandsOn(ctx: ServiceContext): boolean {
  return ctx.runCommands ?? ctx.root === undefined;
}

async function checkPrivileges(ctx: ServiceContext, verb: "install" | "uninstall"): Promise<void> {
  if (!commandsOn(ctx)) return; // files only; a write error says the rest
  if (ctx.scope === "system" && ctx.uid !== 0) {
    throw new ServiceError(
      `${verb === "install" ? "installing" : "removing"} the system-wide service needs root: run 'sudo ollamats service ${verb}'` +
        (verb === "install" ? ", or 'ollamats service install --user' for a service of your own" : ""),
    );
  }
  if (ctx.scope === "user" && ctx.uid === 0) {
    throw new ServiceError(`--user is for the current user's own service manager: run 'ollamats service ${verb} --user' as that user, without sudo`);
  }
  if (ctx.platform === "linux" && !(await (ctx.systemdRunning ?? (() => exists("/run/systemd/system")))())) {
    throw new ServiceError("systemd is not running on this machine (no /run/systemd/system); to only write the files, add --root DIR");
  }
}

/** Warn when the program's path will not last (npx cache) or the service account could not reach it (node under /root/.nvm). */
async function checkReachable(ctx: ServiceContext): Promise<void> {
  if (ctx.script.includes(`${path.sep}_npx${path.sep}`)) {
    ctx.print(`Warning: ${ctx.script} is in npx's cache, which can be cleaned at any time; install ollamats (npm install -g ollamats) and install the service from there`);
  }
  if (ctx.platform !== "linux" || ctx.scope !== "system") return;
  for (const file of [ctx.node, ctx.script]) {
    let dir = path.dirname(file);
    const blocked: string[] = [];
    for (;;) {
      try {
        const s = await stat(dir);
        if ((s.mode & 0o001) === 0) blocked.push(dir);
      } catch {
        break;
      }
      const up = path.dirname(dir);
      if (up === dir) break;
      dir = up;
    }
    if (blocked.length > 0) {
      ctx.print(
        `Warning: the ${SERVICE_USER} account may not be able to reach ${file} (${blocked[blocked.length - 1]} is not searchable by others); ` +
          "install ollamats and node system-wide, or use --user",
      );
    }
  }
}

async function runChecked(ctx: ServiceContext, cmd: string, args: string[]): Promise<CommandResult> {
  const r = await ctx.run(cmd, args);
  if (r.code !== 0) {
    const detail = (r.stderr.trim() || r.stdout.trim()).split("\n")[0] ?? "";
    throw new ServiceError(`${[cmd, ...args].join(" ")} failed${detail ? `: ${detail}` : ` (exit code ${r.code})`}`);
  }
  return r;
}

/** The service's environment as written in our drop-in / plist (empty when none). */
async function installedEnv(ctx: ServiceContext, layout: ServiceLayout): Promise<[string, string][]> {
  const file = layout.dropIn ?? layout.main;
  const text = await readIfExists(onDisk(ctx, file));
  if (text === undefined || !isOurs(text)) return [];
  return ctx.platform === "darwin" ? parsePlistEnvironment(text) : parseEnvironmentDropIn(text);
}

export interface InstallOptions {
  /** `--env` arguments: KEY=VALUE, KEY= (remove), KEY (from this environment). */
  env: string[];
  /** Start (or restart) the service after writing it. */
  start: boolean;
}

/** The files install would write, given the environment to put in them. */
export function serviceFiles(ctx: ServiceContext, env: [string, string][]): { path: string; text: string }[] {
  const layout = serviceLayout(ctx);
  const spec: ServiceSpec = {
    scope: ctx.scope,
    command: [ctx.node, ...DAEMON_NODE_FLAGS, ctx.script, "serve"],
    env,
    ...(ctx.runAs ? { runAs: ctx.runAs } : {}),
    ...(layout.logFile ? { logFile: layout.logFile } : {}),
  };
  if (ctx.platform === "darwin") return [{ path: layout.main, text: launchdPlist(spec) }];
  const files = [
    { path: layout.main, text: systemdUnit(spec) },
    { path: layout.dropIn!, text: systemdEnvironmentDropIn(env) },
  ];
  if (layout.sysusers) files.unshift({ path: layout.sysusers, text: sysusersEntry() });
  return files;
}

export async function installService(ctx: ServiceContext, opts: InstallOptions): Promise<void> {
  await checkPrivileges(ctx, "install");
  if (ctx.platform === "darwin" && ctx.scope === "system") {
    ctx.runAs ??= ctx.env.SUDO_USER;
    if (!ctx.runAs || ctx.runAs === "root") {
      throw new ServiceError("a system-wide LaunchDaemon needs an account to run as: add --run-as USER (or use --user for a LaunchAgent)");
    }
  }
  const layout = serviceLayout(ctx);

  for (const p of layout.packaged) {
    if (await exists(onDisk(ctx, p))) {
      throw new ServiceError(`a packaged unit is installed at ${p}; manage it with systemctl (environment: 'systemctl edit ${SERVICE_NAME}')`);
    }
  }
  const files = serviceFiles(ctx, []);
  for (const f of files) {
    const text = await readIfExists(onDisk(ctx, f.path));
    if (text !== undefined && !isOurs(text)) {
      throw new ServiceError(`${onDisk(ctx, f.path)} exists and was not written by ollamats; not overwriting it`);
    }
  }

  const changes = opts.env.map((arg) => parseEnvArg(arg, ctx.env));
  const env = mergeEnv(await installedEnv(ctx, layout), changes);
  try {
    loadConfig(Object.fromEntries(env));
  } catch (err) {
    if (err instanceof ConfigError) throw new ServiceError(`--env: ${err.message}`);
    throw err;
  }
  await checkReachable(ctx);

  for (const f of serviceFiles(ctx, env)) {
    const file = onDisk(ctx, f.path);
    try {
      await writeAtomic(file, f.text);
    } catch (err) {
      throw fsError(err, file);
    }
    ctx.print(`Wrote ${file}`);
  }
  if (layout.logDir) {
    const dir = onDisk(ctx, layout.logDir);
    try {
      await makeDirs(dir);
    } catch (err) {
      throw fsError(err, dir);
    }
  }

  const lines = env.map(([k, v]) => `  ${displayEnv(k, v)}`);
  if (lines.length > 0) ctx.print(`Environment:\n${lines.join("\n")}`);

  if (!commandsOn(ctx)) {
    ctx.print(`Files only (--root): on the target system, run: ${activationHint(ctx)}`);
    return;
  }
  await activate(ctx, layout, opts.start);
}

function activationHint(ctx: ServiceContext): string {
  if (ctx.platform === "darwin") {
    const layout = serviceLayout(ctx);
    return `launchctl bootstrap ${ctx.scope === "system" ? "system" : "gui/$(id -u)"} ${layout.main}`;
  }
  const user = ctx.scope === "user" ? " --user" : "";
  const sysusers = ctx.scope === "system" ? `systemd-sysusers && ` : "";
  return `${sysusers}systemctl${user} daemon-reload && systemctl${user} enable --now ${SERVICE_NAME}`;
}

async function activate(ctx: ServiceContext, layout: ServiceLayout, start: boolean): Promise<void> {
  if (ctx.platform === "darwin") {
    if (ctx.scope === "system" && layout.logDir && ctx.runAs) await runChecked(ctx, "chown", [ctx.runAs, layout.logDir]);
    await ctx.run("launchctl", ["bootout", `${launchdDomain(ctx)}/${LAUNCHD_LABEL}`]); // not loaded yet is fine
    if (!start) {
      ctx.print(`Installed; it starts at the next ${ctx.scope === "system" ? "boot" : "login"} (or: ${activationHint(ctx)})`);
      return;
    }
    await runChecked(ctx, "launchctl", ["bootstrap", launchdDomain(ctx), layout.main]);
    ctx.print(`Started ${LAUNCHD_LABEL}; log: ${layout.logFile}`);
    return;
  }
  const user = managerArgs(ctx);
  if (layout.sysusers) await runChecked(ctx, "systemd-sysusers", [layout.sysusers]);
  await runChecked(ctx, "systemctl", [...user, "daemon-reload"]);
  await runChecked(ctx, "systemctl", [...user, "enable", SERVICE_NAME]);
  const logs = `journalctl${ctx.scope === "user" ? " --user" : ""} -u ${SERVICE_NAME} -f`;
  if (!start) {
    ctx.print(`Installed and enabled; start it with: systemctl${ctx.scope === "user" ? " --user" : ""} start ${SERVICE_NAME}`);
    return;
  }
  // restart: starts it, or applies a changed unit/environment to a running one. With Type=notify
  // this returns once the daemon listens (or fails).
  await runChecked(ctx, "systemctl", [...user, "restart", SERVICE_NAME]);
  ctx.print(`Started ${SERVICE_NAME}; logs: ${logs}`);
  if (ctx.scope === "user") {
    ctx.print(`Note: user services stop when you log out unless lingering is on: loginctl enable-linger ${ctx.env.USER ?? "$USER"}`);
  }
}

export async function uninstallService(ctx: ServiceContext): Promise<void> {
  await checkPrivileges(ctx, "uninstall");
  const layout = serviceLayout(ctx);
  const mainFile = onDisk(ctx, layout.main);
  const text = await readIfExists(mainFile);
  if (text === undefined) {
    ctx.print(`The ${SERVICE_NAME} service is not installed (no ${mainFile})`);
    return;
  }
  if (!isOurs(text)) throw new ServiceError(`${mainFile} was not written by ollamats; not removing it`);

  if (commandsOn(ctx)) {
    if (ctx.platform === "darwin") await ctx.run("launchctl", ["bootout", `${launchdDomain(ctx)}/${LAUNCHD_LABEL}`]);
    else await ctx.run("systemctl", [...managerArgs(ctx), "disable", "--now", SERVICE_NAME]);
  }

  for (const p of [layout.main, layout.dropIn, layout.sysusers]) {
    if (p === undefined) continue;
    const file = onDisk(ctx, p);
    const content = await readIfExists(file);
    if (content === undefined) continue;
    if (!isOurs(content)) {
      ctx.print(`Left ${file} alone (not written by ollamats)`);
      continue;
    }
    try {
      await rm(file);
    } catch (err) {
      throw fsError(err, file);
    }
    ctx.print(`Removed ${file}`);
  }
  if (layout.dropIn) await rmdir(path.dirname(onDisk(ctx, layout.dropIn))).catch(() => {}); // only when empty

  if (commandsOn(ctx) && ctx.platform === "linux") await ctx.run("systemctl", [...managerArgs(ctx), "daemon-reload"]);
  if (ctx.platform === "linux" && ctx.scope === "system") {
    ctx.print(`Kept the ${SERVICE_USER} account and ${SERVICE_HOME} (its models); remove them with: userdel ${SERVICE_USER} && rm -r ${SERVICE_HOME}`);
  }
}

/** Exit codes as LSB init scripts use them for status. */
export const STATUS_RUNNING = 0;
export const STATUS_NOT_RUNNING = 3;
export const STATUS_NOT_INSTALLED = 4;

export async function serviceStatus(ctx: ServiceContext, defaultUrl: string): Promise<number> {
  const layout = serviceLayout(ctx);
  const mainFile = onDisk(ctx, layout.main);
  const text = await readIfExists(mainFile);
  const packaged = (await Promise.all(layout.packaged.map(async (p) => ((await exists(onDisk(ctx, p))) ? p : undefined)))).filter(
    (p): p is string => p !== undefined,
  );
  const label = (s: string) => `${s}:`.padEnd(13);

  if (text === undefined && packaged.length === 0) {
    ctx.print(`${label("Service")}not installed (no ${mainFile})`);
  } else if (text === undefined) {
    ctx.print(`${label("Service")}${packaged[0]} (installed by a package)`);
  } else {
    ctx.print(`${label("Service")}${mainFile}${isOurs(text) ? "" : " (not written by ollamats)"}`);
  }
  const env = text !== undefined && isOurs(text) ? await installedEnv(ctx, layout) : [];
  if (layout.dropIn && text !== undefined) ctx.print(`${label("Environment")}${onDisk(ctx, layout.dropIn)}`);
  for (const [k, v] of env) ctx.print(`${"".padEnd(13)}${displayEnv(k, v)}`);

  if (commandsOn(ctx) && (text !== undefined || packaged.length > 0)) {
    if (ctx.platform === "darwin") {
      const r = await ctx.run("launchctl", ["print", `${launchdDomain(ctx)}/${LAUNCHD_LABEL}`]);
      const state = /^\s*state = (.*)$/m.exec(r.stdout)?.[1];
      ctx.print(`${label("State")}${r.code === 0 ? `loaded${state ? ` (${state})` : ""}` : "not loaded"}`);
      if (layout.logFile) ctx.print(`${label("Log")}${layout.logFile}`);
    } else {
      const active = await ctx.run("systemctl", [...managerArgs(ctx), "is-active", SERVICE_NAME]);
      const enabled = await ctx.run("systemctl", [...managerArgs(ctx), "is-enabled", SERVICE_NAME]);
      ctx.print(`${label("State")}${active.stdout.trim() || "unknown"}, ${enabled.stdout.trim() || "unknown"}`);
      ctx.print(`${label("Log")}journalctl${ctx.scope === "user" ? " --user" : ""} -u ${SERVICE_NAME}`);
    }
  }

  let url = defaultUrl;
  const host = env.find(([k]) => k === "OLLAMA_HOST")?.[1];
  if (host !== undefined) {
    try {
      url = loadConfig({ OLLAMA_HOST: host }).host.url;
    } catch {
      // the install check keeps bad values out; fall back to the default
    }
  }
  const version = ctx.probe ? await ctx.probe(url) : undefined;
  ctx.print(`${label("API")}${version !== undefined ? `answering at ${url} (version ${version})` : `not answering at ${url}`}`);
  if (text === undefined && packaged.length === 0) return STATUS_NOT_INSTALLED;
  return version !== undefined ? STATUS_RUNNING : STATUS_NOT_RUNNING;
}

/**
 * How to start the daemon, for "could not connect": the installed service's start command when
 * there is one (system-wide unit, per-user unit, or launchd job), else undefined.
 */
export function serviceStartHint(platform: string, home: string, env: NodeJS.ProcessEnv, fileExists: (p: string) => boolean): string | undefined {
  if (platform !== "linux" && platform !== "darwin") return undefined;
  for (const scope of ["system", "user"] as const) {
    const layout = serviceLayout({ platform, scope, home, env });
    if (![layout.main, ...layout.packaged].some(fileExists)) continue;
    if (platform === "darwin") {
      return scope === "system" ? `sudo launchctl kickstart system/${LAUNCHD_LABEL}` : `launchctl kickstart gui/$(id -u)/${LAUNCHD_LABEL}`;
    }
    return scope === "system" ? `sudo systemctl start ${SERVICE_NAME}` : `systemctl --user start ${SERVICE_NAME}`;
  }
  return undefined;
}
