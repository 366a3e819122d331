// `ollamats list [PREFIX]` (alias `ls`): the local models as a table.
import type { Invocation } from "../command-line.js";
import { connectChecked } from "../connect.js";
import { formatListTable } from "../model-tables.js";

export async function list(inv: Invocation): Promise<void> {
  const client = await connectChecked();
  const { models } = await client.list();
  process.stdout.write(formatListTable(models, inv.positionals[0]));
}
