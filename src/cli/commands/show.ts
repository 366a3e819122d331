// `ollamats show MODEL`: model details, or one field with --license/--modelfile/--parameters/
// --system/--template (mutually exclusive); -v adds metadata and tensors.
import type { CommandModule } from "yargs";
import { action, checkModelName, CliError, connectChecked } from "../connect.js";
import { formatShowInfo, showField, type ShowInfo } from "../show-info.js";

interface ShowArgs {
  model: string;
  license: boolean;
  modelfile: boolean;
  parameters: boolean;
  system: boolean;
  template: boolean;
  verbose: boolean;
}

const FIELDS = ["license", "modelfile", "parameters", "system", "template"] as const;

export const ShowCommand: CommandModule<object, ShowArgs> = {
  command: "show <model>",
  describe: "Show information for a model",
  builder: (yargs) =>
    yargs
      .positional("model", { type: "string", demandOption: true })
      .option("license", { type: "boolean", default: false, describe: "Show license of a model" })
      .option("modelfile", { type: "boolean", default: false, describe: "Show Modelfile of a model" })
      .option("parameters", { type: "boolean", default: false, describe: "Show parameters of a model" })
      .option("template", { type: "boolean", default: false, describe: "Show template of a model" })
      .option("system", { type: "boolean", default: false, describe: "Show system message of a model" })
      .option("verbose", { alias: "v", type: "boolean", default: false, describe: "Show detailed model information" }),
  handler: action(async (argv: ShowArgs) => {
    const chosen = FIELDS.filter((f) => argv[f]);
    if (chosen.length > 1) {
      throw new CliError("only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified");
    }
    checkModelName(String(argv.model));
    const client = await connectChecked();
    const resp = (await client.show({ model: String(argv.model), ...(argv.verbose ? { verbose: true } : {}) })) as ShowInfo;
    if (resp.capabilities?.includes("image")) throw new CliError("image generation models are not currently supported");
    process.stdout.write(chosen[0] === undefined ? formatShowInfo(resp, argv.verbose) : showField(chosen[0], resp));
  }),
};
