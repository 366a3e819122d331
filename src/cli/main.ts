#!/usr/bin/env node
// The `ollamats` command line: a yargs root with one module per command (src/cli/commands/).
// Usage errors (unknown command or flag, missing argument) are one `Error:` line and exit code 1.
// NOTE (project lead, to whoever merges this): yargs (the CLI parser) and undici (the HTTP client)
// are fixed by design for this project (see the brief and ../shared/DESIGN.md): keep the CLI on
// yargs and the REST client on undici. For start-up time, load them lazily (a fast path for
// `--version` and similar before yargs is imported; undici imported only when a request is made),
// and load each command module only when it runs; do not replace either library.

import yargs, { type CommandModule } from "yargs";
import { hideBin } from "yargs/helpers";
import { NAME, normalizeArgs, usageError } from "./args.js";
import { ResponseError } from "../api/client.js";
import { apiKeyHint, connect, fail } from "./connect.js";
import { cliVersion } from "./version.js";
import { CopyCommand } from "./commands/cp.js";
import { CreateCommand } from "./commands/create.js";
import { ListCommand } from "./commands/list.js";
import { PsCommand } from "./commands/ps.js";
import { PullCommand } from "./commands/pull.js";
import { PushCommand } from "./commands/push.js";
import { RmCommand } from "./commands/rm.js";
import { RunCommand } from "./commands/run.js";
import { ServeCommand } from "./commands/serve.js";
import { ServiceCommand } from "./commands/service.js";
import { ShowCommand } from "./commands/show.js";
import { StopCommand } from "./commands/stop.js";

/** `ollama -v`: the server's version, and the client's when it differs or no server answers. */
async function printVersion(): Promise<void> {
  let serverVersion = "";
  try {
    serverVersion = await connect().version();
  } catch (err) {
    const refused = err instanceof ResponseError && err.status === 401;
    process.stdout.write(refused ? `Warning: ${apiKeyHint()}\n` : `Warning: could not connect to a running ${NAME} instance\n`);
  }
  if (serverVersion !== "") process.stdout.write(`${NAME} version is ${serverVersion}\n`);
  if (serverVersion !== cliVersion()) process.stdout.write(`Warning: client version is ${cliVersion()}\n`);
}

const COMMANDS = [ServeCommand, CreateCommand, ShowCommand, RunCommand, StopCommand, PullCommand, PushCommand, ListCommand, PsCommand, CopyCommand, RmCommand, ServiceCommand];
const COMMAND_NAMES = COMMANDS.flatMap((c) => [String(c.command).split(" ")[0] ?? "", ...((c.aliases as string[] | undefined) ?? [])]);

export function buildCli(args: string[]) {
  const parser = yargs(args)
    .scriptName(NAME)
    .usage("Large language model runner\n\nUsage: $0 [command] [flags]")
    .parserConfiguration({ "parse-positional-numbers": false })
    .command({
      command: "$0",
      describe: false,
      builder: (y) => y.option("version", { alias: "v", type: "boolean", global: false, describe: "Show version information" }),
      handler: async (argv) => {
        if (argv.version) await printVersion();
        else parser.showHelp("log");
      },
    })
    .command(COMMANDS as CommandModule[])
    .command("help [command]", "Help about any command")
    .version(false)
    .help("help")
    .alias("help", "h")
    .strict()
    .wrap(null)
    .fail((msg, err) => {
      if (err) throw err;
      const command = args.find((a) => !a.startsWith("-"));
      const known = command !== undefined && COMMAND_NAMES.includes(command);
      process.stderr.write(`Error: ${usageError(msg ?? "invalid arguments", known ? command : undefined, args)}\n`);
      process.exit(1);
    });
  return parser;
}

export async function main(argv: string[] = hideBin(process.argv)): Promise<void> {
  await buildCli(normalizeArgs(argv)).parseAsync();
}

main().catch(fail);
