// The `ollamats` command line as yargs reads it: the root with one module per command
// (src/cli/commands/). main.ts comes here for everything its fast path does not take (help, flags,
// the other commands, every mistake). Usage errors (unknown command or flag, missing argument) are
// one `Error:` line (cobra's wording, with "Did you mean this?" for a near miss) and exit code 1.
// yargs (the CLI parser) and undici (the HTTP client) are fixed by design for this project
// (../shared/DESIGN.md): start-up is won by loading them, and each command's work, lazily.

import yargs, { type CommandModule } from "yargs";
import { NAME, normalizeArgs, usageError } from "./args.js";
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

const COMMANDS = [ServeCommand, CreateCommand, ShowCommand, RunCommand, StopCommand, PullCommand, PushCommand, ListCommand, PsCommand, CopyCommand, RmCommand, ServiceCommand];
const NAMES = COMMANDS.map((c) => String(c.command).split(" ")[0] ?? "");
const COMMAND_NAMES = [...NAMES, ...COMMANDS.flatMap((c) => (c.aliases as string[] | undefined) ?? [])];

/** The long flags `command` takes, read from its builder (only on the error path). */
function flagsOf(command: string): string[] {
  const module = COMMANDS.find((c) => (String(c.command).split(" ")[0] ?? "") === command || ((c.aliases as string[] | undefined) ?? []).includes(command));
  if (!module || typeof module.builder !== "function") return [];
  const probe = yargs([]);
  (module.builder as (y: typeof probe) => unknown)(probe);
  // getOptions is yargs API, missing from its type definitions
  const keys = Object.keys((probe as unknown as { getOptions(): { key: Record<string, unknown> } }).getOptions().key);
  return keys.filter((k) => k.length > 1 && k !== "help" && k !== "version" && !/[A-Z]/.test(k));
}

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
        if (!argv.version) return void parser.showHelp("log");
        const { printVersion } = await import("./print-version.js");
        await printVersion();
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
      // yargs reports some usage errors (a flag without its value) as a thrown YError
      if (err && err.name !== "YError") throw err;
      msg ||= err?.message ?? "";
      const command = args.find((a) => !a.startsWith("-"));
      const known = command !== undefined && COMMAND_NAMES.includes(command);
      // suggestions as cobra makes them: command names (not aliases) and `help`; the command's flags
      const candidates = { commands: [...NAMES, "help"], flags: known ? flagsOf(command) : [] };
      process.stderr.write(`Error: ${usageError(msg ?? "invalid arguments", known ? command : undefined, args, candidates)}\n`);
      process.exit(1);
    });
  return parser;
}

export async function runCli(args: string[]): Promise<void> {
  await buildCli(normalizeArgs(args)).parseAsync();
}
