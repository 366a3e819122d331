// `ollamats rm MODEL...`: unload each model if it is running, then delete it.
import type { CommandModule } from "yargs";
import { action, connectChecked, errorMessage } from "../connect.js";
import { loadOrUnload } from "../model-load.js";

interface RmArgs {
  models: string[];
}

export const RmCommand: CommandModule<object, RmArgs> = {
  command: "rm <models..>",
  describe: "Remove a model",
  builder: (yargs) => yargs.positional("models", { type: "string", array: true, demandOption: true }),
  handler: action(async (argv: RmArgs) => {
    const client = await connectChecked();
    for (const model of argv.models.map(String)) {
      try {
        await loadOrUnload(client, { model, keepAlive: "0s" });
      } catch (err) {
        if (!errorMessage(err).toLowerCase().includes("not found")) {
          process.stderr.write(`Warning: unable to stop model '${model}'\n`);
        }
      }
      await client.delete({ model });
      process.stdout.write(`deleted '${model}'\n`);
    }
  }),
};
