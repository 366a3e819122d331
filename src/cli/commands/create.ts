// `ollamats create MODEL [-f Modelfile] [-q QUANT] [--draft-quantize QUANT]`: parse the Modelfile here, upload the local
// files it names as blobs, then ask the daemon to build the model, showing its progress.
import path from "node:path";
import type { CommandModule } from "yargs";
import { parseModelfile, parseParameterValue } from "../../registry/modelfile.js";
import { parseModelName } from "../../registry/name.js";
import type { Client } from "../../api/client.js";
import { readRegularFile } from "../../fs/regular-file.js";
import { action, CliError, connectChecked } from "../connect.js";
import { buildCreatePlan, type LocalBlob } from "../modelfile-request.js";
import { Progress, Spinner } from "../progress.js";
import { progressHandler, statusLabel } from "../pull-progress.js";

interface CreateArgs {
  model: string;
  file?: string;
  quantize?: string;
  "draft-quantize"?: string;
}

/** The Modelfile's text and directory: -f, else ./Modelfile, else `FROM .` in the current directory. */
async function readModelfile(file: string | undefined): Promise<{ text: string; dir: string }> {
  const name = path.resolve(file || "Modelfile");
  try {
    // A FIFO or a device named as the Modelfile is refused, never read until it ends.
    return { text: (await readRegularFile(name)).toString("utf8"), dir: path.dirname(name) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  if (file) throw new CliError(`specified Modelfile wasn't found: ${file}`);
  return { text: "FROM .\n", dir: process.cwd() };
}

/** Upload one blob with a `copying file sha256:<hex> N%` spinner. */
async function uploadBlob(client: Client, p: Progress, blob: LocalBlob): Promise<void> {
  const spinner = new Spinner(`copying file ${blob.digest} 0%`);
  p.add(spinner);
  let sent = 0;
  let total = 0;
  const tick = setInterval(() => spinner.setMessage(`copying file ${blob.digest} ${total ? Math.trunc((100 * sent) / total) : 0}%`), 60);
  try {
    await client.createBlob(blob.digest, blob.path, (n, t) => {
      sent = n;
      total = t;
    });
    spinner.setMessage(`copying file ${blob.digest} 100%`);
  } finally {
    clearInterval(tick);
    spinner.stop();
  }
}

export const CreateCommand: CommandModule<object, CreateArgs> = {
  command: "create <model>",
  describe: "Create a model",
  builder: (yargs) =>
    yargs
      .positional("model", { type: "string", demandOption: true })
      .option("file", { alias: "f", type: "string", requiresArg: true, describe: 'Name of the Modelfile (default "Modelfile")' })
      .option("quantize", { alias: "q", type: "string", requiresArg: true, describe: "Quantize model to this level (q4_K_M, q4_K_S, q8_0, f16, bf16 or q4_0, from an F32, F16 or BF16 model)" })
      .option("draft-quantize", { type: "string", requiresArg: true, describe: "Quantize draft model to this level (q4_K_M, q4_K_S, q8_0, f16, bf16 or q4_0, from an F32, F16 or BF16 draft)" })
      // Ollama's flag for its safetensors models; here a safetensors directory is converted to
      // GGUF with or without it, so scripts written for Ollama (`create m --experimental` in the
      // model's directory: `FROM .`) work as they are
      .option("experimental", { type: "boolean", describe: "Enable experimental safetensors model creation (safetensors are converted to GGUF either way)" }),
  handler: action(async (argv: CreateArgs) => {
    const model = String(argv.model);
    if (parseModelName(model) === null) throw new CliError(`invalid model name: ${model}`);
    const client = await connectChecked();
    const { text, dir } = await readModelfile(argv.file);
    const commands = parseModelfile(text, { onWarning: (m) => process.stdout.write(`${m}\n`) });

    const p = new Progress(process.stderr);
    try {
      const gathering = new Spinner("gathering model components");
      p.add(gathering);
      const plan = await buildCreatePlan(commands, dir, parseParameterValue);
      gathering.stop();
      for (const w of plan.warnings) process.stdout.write(`${w}\n`);

      const request = { ...plan.request, model };
      if (argv.quantize) request.quantize = argv.quantize;
      const draftQuantize = argv["draft-quantize"];
      if (draftQuantize) {
        if (!request.draft_files) throw new CliError("--draft-quantize requires a DRAFT model");
        request.draft_quantize = draftQuantize;
      }
      for (const blob of [...plan.files, ...plan.adapters, ...plan.drafts]) await uploadBlob(client, p, blob);

      await client.create(request, progressHandler(p, statusLabel("pulling"), false));
    } finally {
      p.stop();
    }
  }),
};
