// `ollamats service install|uninstall|status|print`: run the daemon under systemd (Linux) or
// launchd (macOS). The work is in src/service/; this file parses the flags and builds the context.
import { execFile } from "node:child_process";
import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { mergeEnv, parseEnvArg, type Platform, type Scope } from "../../service/common.js";
import { installService, serviceFiles, serviceStatus, uninstallService, type CommandResult, type ServiceContext } from "../../service/manage.js";
import { flagBool, flagString, flagStrings, type Invocation } from "../command-line.js";
import { CliError, cliConfig, connect } from "../connect.js";

function platformOf(value: string | undefined): Platform {
  const p = value ?? process.platform;
  if (p === "linux" || p === "darwin") return p;
  throw new CliError(`services are supported on Linux (systemd) and macOS (launchd), not on ${p}`);
}

/** The script this process runs (the npm bin link resolved), for ExecStart / ProgramArguments. */
function entryScript(): string {
  const arg = process.argv[1];
  if (!arg) throw new CliError("cannot tell where the ollamats program is");
  try {
    return realpathSync(arg);
  } catch {
    return path.resolve(arg);
  }
}

function runCommand(cmd: string, args: string[]): Promise<CommandResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 180_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : 127) : 0;
      resolve({ code, stdout, stderr: stderr || (err && code === 127 ? err.message : "") });
    });
  });
}

function context(inv: Invocation): ServiceContext {
  const scope: Scope = flagBool(inv, "user") ? "user" : "system";
  const rootFlag = flagString(inv, "root");
  const root = rootFlag === undefined ? undefined : path.resolve(rootFlag);
  const runAs = flagString(inv, "run-as");
  return {
    platform: platformOf(flagString(inv, "platform")),
    scope,
    ...(root !== undefined ? { root } : {}),
    home: process.env.HOME || os.homedir(),
    uid: typeof process.getuid === "function" ? process.getuid() : -1,
    env: process.env,
    node: process.execPath,
    script: entryScript(),
    ...(runAs ? { runAs } : {}),
    run: runCommand,
    print: (line) => void process.stdout.write(line + "\n"),
    probe: async (url) => {
      try {
        return await connect({ ...cliConfig(), host: { ...cliConfig().host, url } }).version(AbortSignal.timeout(3000));
      } catch {
        return undefined;
      }
    },
  };
}

export async function install(inv: Invocation): Promise<void> {
  await installService(context(inv), { env: flagStrings(inv, "env"), start: flagBool(inv, "start") });
}

export async function uninstall(inv: Invocation): Promise<void> {
  await uninstallService(context(inv));
}

export async function status(inv: Invocation): Promise<void> {
  process.exitCode = await serviceStatus(context(inv), cliConfig().host.url);
}

export async function print(inv: Invocation): Promise<void> {
  const ctx = context(inv);
  const env = mergeEnv([], flagStrings(inv, "env").map((a) => parseEnvArg(a, process.env)));
  for (const f of serviceFiles(ctx, env)) process.stdout.write(`# ${f.path}\n${f.text}\n`);
}
