// `ollamats create MODEL [-f Modelfile] [-q QUANT]`: parse the Modelfile here, upload the local
// files it names as blobs, then ask the daemon to build the model, showing its progress.
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { parseModelfile, parseParameterValue } from "../../registry/modelfile.js";
import { parseModelName } from "../../registry/name.js";
import type { Client } from "../../api/client.js";
import { flagString, type Invocation } from "../command-line.js";
import { CliError, connectChecked } from "../connect.js";
import { buildCreatePlan, type LocalBlob } from "../modelfile-request.js";
import { Progress, Spinner } from "../progress.js";
import { progressHandler, statusLabel } from "../pull-progress.js";

/** The Modelfile's text and directory: -f, else ./Modelfile, else `FROM .` in the current directory. */
async function readModelfile(file: string | undefined): Promise<{ text: string; dir: string }> {
  const name = path.resolve(file || "Modelfile");
  try {
    if ((await stat(name)).isFile()) return { text: await readFile(name, "utf8"), dir: path.dirname(name) };
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

export async function create(inv: Invocation): Promise<void> {
  const model = inv.positionals[0] ?? "";
  const file = flagString(inv, "file");
  const quantize = flagString(inv, "quantize");
  if (parseModelName(model) === null) throw new CliError(`invalid model name: ${model}`);
  const client = await connectChecked();
  const { text, dir } = await readModelfile(file);
  const commands = parseModelfile(text, { onWarning: (m) => process.stdout.write(`${m}\n`) });

  const p = new Progress(process.stderr);
  try {
    const gathering = new Spinner("gathering model components");
    p.add(gathering);
    const plan = await buildCreatePlan(commands, dir, parseParameterValue);
    gathering.stop();
    for (const w of plan.warnings) process.stdout.write(`${w}\n`);

    const request = { ...plan.request, model };
    if (quantize) request.quantize = quantize;
    for (const blob of [...plan.files, ...plan.adapters]) await uploadBlob(client, p, blob);

    await client.create(request, progressHandler(p, statusLabel("pulling"), false));
  } finally {
    p.stop();
  }
}
