// `ollamats stop MODEL`: unload a running model now (generate with keep_alive 0).
import type { CommandModule } from "yargs";
import { action, checkModelName, CliError, connectChecked, errorMessage } from "../connect.js";
import { loadOrUnload } from "../model-load.js";

interface StopArgs {
  model: string;
}

export const StopCommand: CommandModule<object, StopArgs> = {
  command: "stop <model>",
  describe: "Stop a running model",
  builder: (yargs) => yargs.positional("model", { type: "string", demandOption: true }),
  handler: action(async (argv: StopArgs) => {
    checkModelName(String(argv.model));
    const client = await connectChecked();
    try {
      await loadOrUnload(client, { model: String(argv.model), keepAlive: "0s" });
    } catch (err) {
      if (errorMessage(err).includes("not found")) throw new CliError(`couldn't find model "${argv.model}" to stop`);
      throw err;
    }
  }),
};
