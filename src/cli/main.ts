#!/usr/bin/env node
// The `ollamats` command line. Start-up is kept to what the command needs: the table and parser
// here are plain data and code; a command's module (the REST client, the REPL, the daemon) is
// imported only when that command runs. Usage errors are `Error: <message>` and exit code 1.

import { NAME, parseCommandLine } from "./command-line.js";
import { ROOT } from "./commands.js";
import { endQuietlyWhenOutputCloses } from "./stdio.js";

async function main(args: string[]): Promise<void> {
  endQuietlyWhenOutputCloses();
  const parsed = parseCommandLine(ROOT, args);
  if (parsed.kind === "error") {
    process.stderr.write(`Error: ${parsed.message}\n`);
    process.exitCode = 1;
    return;
  }
  if (parsed.kind === "help") {
    const { helpText } = await import("./help.js");
    process.stdout.write(helpText(ROOT, parsed.path));
    return;
  }
  const handler = await parsed.spec.load?.();
  if (!handler) throw new Error(`${NAME}: nothing to run`);
  await handler(parsed.inv);
}

main(process.argv.slice(2)).catch(async (err: unknown) => {
  const { fail } = await import("./fail.js");
  await fail(err);
});
