// `ollamats cp SOURCE DESTINATION`
import type { CommandModule } from "yargs";
import { action, connectChecked } from "../connect.js";

interface CopyArgs {
  source: string;
  destination: string;
}

export const CopyCommand: CommandModule<object, CopyArgs> = {
  command: "cp <source> <destination>",
  describe: "Copy a model",
  builder: (yargs) =>
    yargs
      .positional("source", { type: "string", demandOption: true })
      .positional("destination", { type: "string", demandOption: true }),
  handler: action(async (argv: CopyArgs) => {
    const client = await connectChecked();
    await client.copy({ source: argv.source, destination: argv.destination });
    process.stdout.write(`copied '${argv.source}' to '${argv.destination}'\n`);
  }),
};
