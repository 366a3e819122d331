// `ollamats rm MODEL...`: unload each model if it is running, then delete it.
import type { Invocation } from "../command-line.js";
import { connectChecked, errorMessage } from "../connect.js";
import { loadOrUnload } from "../model-load.js";

export async function rm(inv: Invocation): Promise<void> {
  const client = await connectChecked();
  for (const model of inv.positionals) {
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
}
