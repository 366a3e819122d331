// `ollamats ps [PREFIX]`: the loaded models as a table.
import type { CommandModule } from "yargs";
import { action, connectChecked } from "../connect.js";
import { formatPsTable } from "../model-tables.js";

interface PsArgs {
  prefix?: string;
}

/** The command's work (also main.ts's fast path, which passes no flags). */
export const listRunning = action(async (argv: PsArgs) => {
  const client = await connectChecked();
  const { models } = await client.ps();
  process.stdout.write(formatPsTable(models, argv.prefix));
});

export const PsCommand: CommandModule<object, PsArgs> = {
  command: "ps [prefix]",
  describe: "List running models",
  builder: (yargs) => yargs.positional("prefix", { type: "string", describe: "Only models whose name starts with this" }),
  handler: listRunning,
};
