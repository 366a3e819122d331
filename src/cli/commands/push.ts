// `ollamats push MODEL`: upload a model to its registry (the host in its name), with progress bars.
import type { CommandModule } from "yargs";
import { parseModelName } from "../../registry/name.js";
import { action, CliError, connectChecked } from "../connect.js";
import { Progress } from "../progress.js";
import { progressHandler, statusLabel } from "../pull-progress.js";

interface PushArgs {
  model: string;
  insecure: boolean;
}

/** Where the pushed model can be found (Ollama's PushHandler). */
export function pushDestination(model: string): string {
  const n = parseModelName(model);
  if (!n) return model;
  if (/\.ollama\.(ai|com)$/.test(n.host)) {
    const short = n.namespace === "library" ? `${n.model}:${n.tag}` : `${n.namespace}/${n.model}:${n.tag}`;
    return `https://ollama.com/${short.replace(/:latest$/, "")}`;
  }
  return `${n.host}/${n.namespace}/${n.model}:${n.tag}`;
}

export const PushCommand: CommandModule<object, PushArgs> = {
  command: "push <model>",
  describe: "Push a model to a registry",
  builder: (yargs) =>
    yargs
      .positional("model", { type: "string", demandOption: true })
      .option("insecure", { type: "boolean", default: false, describe: "Use an insecure registry" }),
  handler: action(async (argv: PushArgs) => {
    const model = String(argv.model);
    const client = await connectChecked();
    const p = new Progress(process.stderr);
    try {
      await client.push({ model, ...(argv.insecure ? { insecure: true } : {}) }, progressHandler(p, statusLabel("pushing"), false));
    } catch (err) {
      p.stop();
      const text = String((err as Error).message).toLowerCase();
      if (text.includes("access denied") || text.includes("unauthorized")) {
        throw new CliError("you are not authorized to push to this namespace, create the model under a namespace you own");
      }
      throw err;
    }
    p.stop();
    process.stdout.write(`\nYou can find your model at:\n\n\t${pushDestination(model)}\n`);
  }),
};
