// The `ollamats` command line, after main.ts. Start-up is kept to what the command needs: the
// most used command lines take the fast path (fast-path.ts), everything else is read by yargs
// (cli.ts), and each command's module is imported only when it runs.

import { fastRoute, runFast } from "./fast-path.js";
import { endQuietlyWhenOutputCloses } from "./stdio.js";

async function main(args: string[]): Promise<void> {
  endQuietlyWhenOutputCloses();
  const route = fastRoute(args);
  if (route) return runFast(route);
  const { runCli } = await import("./cli.js");
  await runCli(args);
}

main(process.argv.slice(2)).then(
  // Done is done: an idle keep-alive connection or a timer must not hold the prompt back (it
  // did, for 0.15-0.37 s after the output). stdout and stderr are written synchronously on Linux
  // terminals, files and pipes, so nothing written is lost; process.exitCode is kept.
  () => process.exit(),
  async (err: unknown) => {
    const { fail } = await import("./connect.js");
    await fail(err);
  },
);
