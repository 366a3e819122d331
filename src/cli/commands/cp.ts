// `ollamats cp SOURCE DESTINATION`
import type { Invocation } from "../command-line.js";
import { connectChecked } from "../connect.js";

export async function cp(inv: Invocation): Promise<void> {
  const [source = "", destination = ""] = inv.positionals;
  const client = await connectChecked();
  await client.copy({ source, destination });
  process.stdout.write(`copied '${source}' to '${destination}'\n`);
}
