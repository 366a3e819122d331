// `ollamats ps [PREFIX]`: the loaded models as a table.
import type { Invocation } from "../command-line.js";
import { connectChecked } from "../connect.js";
import { formatPsTable } from "../model-tables.js";

export async function ps(inv: Invocation): Promise<void> {
  const client = await connectChecked();
  const { models } = await client.ps();
  process.stdout.write(formatPsTable(models, inv.positionals[0]));
}
