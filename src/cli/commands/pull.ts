// `ollamats pull MODEL`: download a model from a registry, with progress bars.
import type { CommandModule } from "yargs";
import { action, connectChecked } from "../connect.js";
import { pullWithProgress } from "../pull-progress.js";

interface PullArgs {
  model: string;
  insecure: boolean;
}

export const PullCommand: CommandModule<object, PullArgs> = {
  command: "pull <model>",
  describe: "Pull a model from a registry",
  builder: (yargs) =>
    yargs
      .positional("model", { type: "string", demandOption: true })
      .option("insecure", { type: "boolean", default: false, describe: "Use an insecure registry" }),
  handler: action(async (argv: PullArgs) => {
    const client = await connectChecked();
    await pullWithProgress(client, String(argv.model), argv.insecure);
  }),
};
