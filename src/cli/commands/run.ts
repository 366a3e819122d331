// `ollamats run MODEL [PROMPT...]`: one answer for a prompt (arguments and/or piped stdin) via
// /api/generate, or an interactive chat session when both ends are a terminal and no prompt is given.
import type { CommandModule } from "yargs";
import type { Client } from "../../api/client.js";
import type { Format, KeepAlive, ShowResponse, ThinkValue } from "../../api/types.js";
import { action, checkModelName, CliError, cliConfig, connect } from "../connect.js";
import { formatGoDuration, parseGoDurationStrict } from "../duration.js";
import { formatEmbedding } from "../format.js";
import { extractFileData, isMultiModal } from "../images.js";
import type { SessionState } from "../repl-input.js";
import { WrapWriter } from "../response-writer.js";
import { terminalSafe } from "../terminal-text.js";
import { generateAnswer } from "../stream-answer.js";

/** run's arguments; a flag not given is absent (main.ts's fast path passes none). */
export interface RunArgs {
  model: string;
  prompt?: (string | number)[];
  verbose?: boolean;
  format?: string;
  keepalive?: string;
  nowordwrap?: boolean;
  think?: string;
  hidethinking?: boolean;
  insecure?: boolean;
  truncate?: boolean;
  dimensions?: string;
}

/** --dimensions N (cobra's int flag, with its error text). */
export function parseDimensionsFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[+-]?\d+$/.test(value)) {
    throw new CliError(`invalid argument ${JSON.stringify(value)} for "--dimensions" flag: strconv.ParseInt: parsing ${JSON.stringify(value)}: invalid syntax`);
  }
  return Number(value);
}

/** --think[=VALUE]: true/false or a level; undefined when the flag is absent. */
export function parseThinkFlag(value: string | undefined): ThinkValue | undefined {
  if (value === undefined) return undefined;
  switch (value) {
    case "":
    case "true":
      return true;
    case "false":
      return false;
    case "high":
    case "medium":
    case "low":
    case "max":
      return value;
    default:
      throw new CliError(`invalid value for --think: ${JSON.stringify(value)} (must be true, false, high, medium, low, or max)`);
  }
}

/** --keepalive in Go duration syntax, sent as Ollama's client sends it: -1 if negative, else its String(). */
export function parseKeepAliveFlag(value: string | undefined): KeepAlive | undefined {
  if (value === undefined || value === "") return undefined;
  const ns = parseGoDurationStrict(value);
  return ns < 0 ? -1 : formatGoDuration(ns);
}

/** --format: "json", or a JSON schema object given as JSON text. */
export function parseFormatFlag(value: string | undefined): Format | undefined {
  if (value === undefined || value === "") return undefined;
  if (value === "json") return "json";
  try {
    const parsed: unknown = JSON.parse(value);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new CliError(`invalid format ${JSON.stringify(value)}: expected "json" or a JSON schema object`);
}

/** Thinking on by default for models that can think, unless the user chose (inferThinkingOption). */
export function inferThink(capabilities: string[], explicit: ThinkValue | undefined, explicitlySet: boolean): ThinkValue | undefined {
  if (explicitlySet) return explicit;
  return capabilities.includes("thinking") ? true : undefined;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** /api/show, pulling the model first if the daemon does not have it. */
async function showOrPull(client: Client, model: string, insecure: boolean): Promise<ShowResponse> {
  try {
    return await client.show({ model });
  } catch (err) {
    if (!(err instanceof Error && "status" in err && (err as { status: number }).status === 404)) throw err;
    const { isMissingRoute, pullWithProgress } = await import("../pull-progress.js");
    try {
      await pullWithProgress(client, model, insecure);
    } catch (pullErr) {
      if (isMissingRoute(pullErr)) throw err; // this daemon cannot pull: report the model as missing
      throw pullErr;
    }
    return client.show({ model });
  }
}

/** The command's work (also main.ts's fast path for `run MODEL [PROMPT...]` without flags). */
export const runModel = action(async (argv: RunArgs) => {
  const model = String(argv.model);
  const thinkSet = argv.think !== undefined;
  const explicitThink = parseThinkFlag(argv.think);
  const keepAlive = parseKeepAliveFlag(argv.keepalive);
  const format = parseFormatFlag(argv.format);
  const dimensions = parseDimensionsFlag(argv.dimensions);
  checkModelName(model);

  let interactive = true;
  const prompts = (argv.prompt ?? []).map(String);
  if (!process.stdin.isTTY) {
    const piped = await readStdin();
    if (piped.length > 0) prompts.unshift(piped);
    interactive = false;
  }
  const prompt = prompts.join(" ");
  if (prompts.length > 0) interactive = false;
  if (!process.stdout.isTTY) interactive = false;
  // Ollama wraps even into pipes; we wrap only on a terminal so redirected output stays clean.
  const wordWrap = !argv.nowordwrap && process.stdout.isTTY === true;

  // No heartbeat first (Ollama's run sends one): /api/show fails the same way, with the same
  // message, when no daemon listens, and the answer comes one round trip sooner.
  const client = connect();
  const info = await showOrPull(client, model, argv.insecure === true);
  const capabilities = info.capabilities ?? [];
  const think = inferThink(capabilities, explicitThink, thinkSet);

  if (capabilities.includes("embedding")) {
    if (prompt === "") throw new CliError(`embedding models require input text. Usage: ollamats run ${model} "your text here"`);
    const resp = await client.embed({
      model,
      input: prompt,
      ...(keepAlive !== undefined ? { keep_alive: keepAlive } : {}),
      ...(argv.truncate !== undefined ? { truncate: argv.truncate } : {}),
      ...(dimensions !== undefined && dimensions > 0 ? { dimensions } : {}),
    });
    const first = resp.embeddings?.[0];
    if (!first) throw new CliError("no embeddings returned");
    process.stdout.write(formatEmbedding(first) + "\n");
    return;
  }
  if (capabilities.includes("image")) throw new CliError("image generation models are not currently supported");
  const multiModal = isMultiModal(info);

  const common = {
    model,
    ...(format !== undefined ? { format } : {}),
    ...(keepAlive !== undefined ? { keepAlive } : {}),
    ...(think !== undefined ? { think } : {}),
    hideThinking: argv.hidethinking === true,
    verbose: argv.verbose === true,
  };

  if (!interactive) {
    const controller = new AbortController();
    const onSigint = () => controller.abort();
    process.once("SIGINT", onSigint);
    try {
      const { text, images } = multiModal ? await extractFileData(prompt) : { text: prompt, images: [] };
      await generateAnswer(client, { ...common, prompt: text, ...(images.length > 0 ? { images } : {}), wordWrap }, controller.signal);
    } finally {
      process.off("SIGINT", onSigint);
    }
    return;
  }

  // what only an interactive session needs is loaded here, off the one-answer path
  const [{ loadOrUnload }, { parseParameterValue }, { runRepl }] = await Promise.all([
    import("../model-load.js"),
    import("../../registry/modelfile.js"),
    import("../repl.js"),
  ]);
  await loadOrUnload(client, { model, ...(keepAlive !== undefined ? { keepAlive } : {}), ...(think !== undefined ? { think } : {}) });
  for (const msg of info.messages ?? []) {
    if (msg.role === "user") process.stdout.write(`>>> ${terminalSafe(msg.content)}\n`);
    else if (msg.role === "assistant") {
      new WrapWriter((s) => void process.stdout.write(s), () => process.stdout.columns ?? 80).display(terminalSafe(msg.content), wordWrap);
      process.stdout.write("\n\n");
    }
  }
  const state: SessionState = {
    model,
    parentModel: info.details?.parent_model ?? "",
    loadedMessages: [...(info.messages ?? [])],
    messages: [],
    system: "",
    options: {},
    wordWrap,
    verbose: argv.verbose === true,
    format: format ?? "",
    think,
    thinkExplicit: thinkSet,
    multiModal,
  };
  await runRepl(client, state, {
    hideThinking: argv.hidethinking === true,
    ...(keepAlive !== undefined ? { keepAlive } : {}),
    noHistory: cliConfig().noHistory,
    editor: cliConfig().editor,
    parseParameter: parseParameterValue,
    inferThink: (caps, s) => inferThink(caps, s.think, s.thinkExplicit),
  });
});

export const RunCommand: CommandModule<object, RunArgs> = {
  command: "run <model> [prompt..]",
  describe: "Run a model",
  builder: (yargs) =>
    yargs
      .positional("model", { type: "string", demandOption: true })
      .positional("prompt", { type: "string", array: true })
      .option("keepalive", { type: "string", requiresArg: true, describe: "Duration to keep a model loaded (e.g. 5m)" })
      .option("verbose", { type: "boolean", default: false, describe: "Show timings for response" })
      .option("insecure", { type: "boolean", default: false, describe: "Use an insecure registry" })
      .option("nowordwrap", { type: "boolean", default: false, describe: "Don't wrap words to the next line automatically" })
      .option("format", { type: "string", requiresArg: true, describe: "Response format (e.g. json)" })
      .option("think", { type: "string", describe: "Enable thinking mode: true/false or high/medium/low for supported models" })
      .option("hidethinking", { type: "boolean", default: false, describe: "Hide thinking output (if provided)" })
      .option("truncate", { type: "boolean", describe: "For embedding models: truncate inputs exceeding context length (default: true)" })
      .option("dimensions", { type: "string", requiresArg: true, describe: "Truncate output embeddings to specified dimension (embedding models only)" })
      .epilogue(
        "Environment Variables:\n" +
          "      OLLAMA_EDITOR                 Path to editor for interactive prompt editing (Ctrl+G)\n" +
          "      OLLAMA_HOST                   IP Address for the ollama server (default 127.0.0.1:11434)\n" +
          "      OLLAMA_NOHISTORY              Do not preserve readline history",
      ),
  handler: runModel,
};
