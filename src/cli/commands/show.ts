// `ollamats show MODEL`: model details, or one field with --license/--modelfile/--parameters/
// --system/--template (mutually exclusive); -v adds metadata and tensors.
import { flagBool, type Invocation } from "../command-line.js";
import { checkModelName, CliError, connectChecked } from "../connect.js";
import { formatShowInfo, showField, type ShowInfo } from "../show-info.js";

const FIELDS = ["license", "modelfile", "parameters", "system", "template"] as const;

export async function show(inv: Invocation): Promise<void> {
  const chosen = FIELDS.filter((f) => flagBool(inv, f));
  if (chosen.length > 1) {
    throw new CliError("only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified");
  }
  const model = inv.positionals[0] ?? "";
  const verbose = flagBool(inv, "verbose");
  checkModelName(model);
  const client = await connectChecked();
  const resp = (await client.show({ model, ...(verbose ? { verbose: true } : {}) })) as ShowInfo;
  if (resp.capabilities?.includes("image")) throw new CliError("image generation models are not currently supported");
  process.stdout.write(chosen[0] === undefined ? formatShowInfo(resp, verbose) : showField(chosen[0], resp));
}
