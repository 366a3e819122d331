// `ollamats show MODEL`: model details, or one field with --license/--modelfile/--parameters/
// --system/--template (mutually exclusive); -v adds metadata and tensors.
import type { CommandModule } from "yargs";
import { action, CliError, connectChecked } from "../connect.js";
import { formatShowInfo, type ShowInfo } from "../show-info.js";

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
    const client = await connectChecked();
    const resp = (await client.show({ model: String(argv.model), ...(argv.verbose ? { verbose: true } : {}) })) as ShowInfo;
    if (resp.capabilities?.includes("image")) throw new CliError("image generation models are not currently supported");
    const out = process.stdout;
    switch (chosen[0]) {
      case "license":
        out.write(`${resp.license ?? ""}\n`);
        return;
      case "modelfile":
        out.write(`${resp.modelfile ?? ""}\n`);
        return;
      case "parameters":
        out.write(`${resp.parameters ?? ""}\n`);
        return;
      case "system":
        out.write(resp.system ?? "");
        return;
      case "template":
        out.write(resp.template ?? "");
        return;
      default:
        out.write(formatShowInfo(resp, argv.verbose));
    }
  }),
};
