// `ollamats service install|uninstall|status|print`: run the daemon under systemd (Linux) or
// launchd (macOS). The work is in src/service/; this file parses the flags and builds the context.
import { execFile } from "node:child_process";
import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Argv, CommandModule } from "yargs";
import { mergeEnv, parseEnvArg, type Platform, type Scope } from "../../service/common.js";
import { installService, serviceFiles, serviceStatus, uninstallService, type CommandResult, type ServiceContext } from "../../service/manage.js";
import { ResponseError } from "../../api/client.js";
import { action, CliError, cliConfig, connect } from "../connect.js";

interface ServiceArgs {
  user: boolean;
  root?: string;
  platform?: string;
  env?: string[];
  start: boolean;
  "run-as"?: string;
}

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

function context(argv: ServiceArgs): ServiceContext {
  const scope: Scope = argv.user ? "user" : "system";
  const root = argv.root === undefined ? undefined : path.resolve(argv.root);
  return {
    platform: platformOf(argv.platform),
    scope,
    ...(root !== undefined ? { root } : {}),
    home: process.env.HOME || os.homedir(),
    uid: typeof process.getuid === "function" ? process.getuid() : -1,
    env: process.env,
    node: process.execPath,
    script: entryScript(),
    ...(argv["run-as"] ? { runAs: argv["run-as"] } : {}),
    run: runCommand,
    print: (line) => void process.stdout.write(line + "\n"),
    probe: async (url) => {
      try {
        return await connect({ ...cliConfig(), host: { ...cliConfig().host, url } }).version(AbortSignal.timeout(3000));
      } catch (err) {
        // It answers, but wants an API key for anything past the health check.
        if (err instanceof ResponseError && err.status === 401) return "unknown: set OLLAMA_API_KEY to see it";
        return undefined;
      }
    },
  };
}

const common = (y: Argv<object>) =>
  y
    .option("user", { type: "boolean", default: false, describe: "The current user's service (systemd --user, or a LaunchAgent) instead of the system-wide one" })
    .option("root", { type: "string", requiresArg: true, describe: "Write the files under this directory and run no systemctl/launchctl (packaging, tests)" })
    .option("platform", { type: "string", requiresArg: true, choices: ["linux", "darwin"], describe: "Service manager to write for (default: this machine's)" });

const install: CommandModule<object, ServiceArgs> = {
  command: "install",
  describe: "Install and start the service",
  builder: (y) =>
    common(y)
      .option("env", { type: "string", requiresArg: true, array: true, describe: "Set KEY=VALUE in the service's environment (KEY= removes it, KEY copies it from here); repeatable" })
      .option("start", { type: "boolean", default: true, describe: "Start (or restart) the service after installing; --no-start to only enable it" })
      .option("run-as", { type: "string", requiresArg: true, describe: "macOS system-wide service: the account to run as (default: the sudo user)" }) as unknown as Argv<ServiceArgs>,
  handler: action(async (argv: ServiceArgs) => {
    await installService(context(argv), { env: (argv.env ?? []).map(String), start: argv.start });
  }),
};

const uninstall: CommandModule<object, ServiceArgs> = {
  command: "uninstall",
  describe: "Stop the service and remove its files",
  builder: (y) => common(y) as unknown as Argv<ServiceArgs>,
  handler: action(async (argv: ServiceArgs) => {
    await uninstallService(context(argv));
  }),
};

const status: CommandModule<object, ServiceArgs> = {
  command: "status",
  describe: "Show whether the service is installed and running (exit code 0 running, 3 stopped, 4 not installed)",
  builder: (y) => common(y) as unknown as Argv<ServiceArgs>,
  handler: action(async (argv: ServiceArgs) => {
    const code = await serviceStatus(context(argv), cliConfig().host.url);
    process.exitCode = code;
  }),
};

const print: CommandModule<object, ServiceArgs> = {
  command: "print",
  describe: "Print the files install would write",
  builder: (y) =>
    common(y).option("env", { type: "string", requiresArg: true, array: true, describe: "KEY=VALUE for the service's environment; repeatable" }) as unknown as Argv<ServiceArgs>,
  handler: action(async (argv: ServiceArgs) => {
    const ctx = context(argv);
    const env = mergeEnv([], (argv.env ?? []).map((a) => parseEnvArg(String(a), process.env)));
    for (const f of serviceFiles(ctx, env)) process.stdout.write(`# ${f.path}\n${f.text}\n`);
  }),
};

export const ServiceCommand: CommandModule<object, object> = {
  command: "service",
  describe: "Run ollamats as a system service (systemd, launchd)",
  builder: (y) => y.command([install, uninstall, status, print] as CommandModule<object, object>[]).demandCommand(1, "requires a subcommand: install, uninstall, status or print"),
  handler: () => {},
};
