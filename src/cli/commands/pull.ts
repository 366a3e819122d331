// `ollamats pull MODEL`: download a model from a registry, with progress bars.
import { flagBool, type Invocation } from "../command-line.js";
import { connectChecked } from "../connect.js";
import { pullWithProgress } from "../pull-progress.js";

export async function pull(inv: Invocation): Promise<void> {
  const client = await connectChecked();
  await pullWithProgress(client, inv.positionals[0] ?? "", flagBool(inv, "insecure"));
}
