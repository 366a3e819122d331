// `ollamats stop MODEL`: unload a running model now (generate with keep_alive 0).
import type { Invocation } from "../command-line.js";
import { checkModelName, CliError, connectChecked, errorMessage } from "../connect.js";
import { loadOrUnload } from "../model-load.js";

export async function stop(inv: Invocation): Promise<void> {
  const model = inv.positionals[0] ?? "";
  checkModelName(model);
  const client = await connectChecked();
  try {
    await loadOrUnload(client, { model, keepAlive: "0s" });
  } catch (err) {
    if (errorMessage(err).includes("not found")) throw new CliError(`couldn't find model "${model}" to stop`);
    throw err;
  }
}
