// `ollamats list [PREFIX]` (alias `ls`): the local models as a table.
import type { CommandModule } from "yargs";
import { action, connectChecked } from "../connect.js";
import { formatListTable } from "../model-tables.js";

interface ListArgs {
  prefix?: string;
}

/** The command's work (also main.ts's fast path, which passes no flags). */
export const listModels = action(async (argv: ListArgs) => {
  const client = await connectChecked();
  const { models } = await client.list();
  process.stdout.write(formatListTable(models, argv.prefix));
});

export const ListCommand: CommandModule<object, ListArgs> = {
  command: "list [prefix]",
  aliases: ["ls"],
  describe: "List models",
  builder: (yargs) => yargs.positional("prefix", { type: "string", describe: "Only models whose name starts with this" }),
  handler: listModels,
};
