// `ollamats run MODEL [PROMPT...]`: one answer for a prompt (arguments and/or piped stdin) via
// /api/generate, or an interactive chat session when both ends are a terminal and no prompt is given.
import type { Client } from "../../api/client.js";
import type { Format, KeepAlive, ShowResponse, ThinkValue } from "../../api/types.js";
import { parseParameterValue } from "../../registry/modelfile.js";
import { flagBool, flagString, type Invocation } from "../command-line.js";
import { checkModelName, CliError, cliConfig, connectChecked } from "../connect.js";
import { formatGoDuration, parseGoDurationStrict } from "../duration.js";
import { formatEmbedding } from "../format.js";
import { loadOrUnload } from "../model-load.js";
import { isMissingRoute, pullWithProgress } from "../pull-progress.js";
import { extractFileData } from "../images.js";
import { isMultiModal, type SessionState } from "../repl-input.js";
import { WrapWriter } from "../response-writer.js";
import { generateAnswer } from "../stream-answer.js";

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
    try {
      await pullWithProgress(client, model, insecure);
    } catch (pullErr) {
      if (isMissingRoute(pullErr)) throw err; // this daemon cannot pull: report the model as missing
      throw pullErr;
    }
    return client.show({ model });
  }
}

export async function run(inv: Invocation): Promise<void> {
  const [model = "", ...args] = inv.positionals;
  const thinkFlag = flagString(inv, "think");
  const thinkSet = thinkFlag !== undefined;
  const explicitThink = parseThinkFlag(thinkFlag);
  const keepAlive = parseKeepAliveFlag(flagString(inv, "keepalive"));
  const format = parseFormatFlag(flagString(inv, "format"));
  const dimensions = parseDimensionsFlag(flagString(inv, "dimensions"));
  const insecure = flagBool(inv, "insecure");
  const verbose = flagBool(inv, "verbose");
  const hideThinking = flagBool(inv, "hidethinking");
  const truncate = inv.given.has("truncate") ? flagBool(inv, "truncate") : undefined;
  checkModelName(model);

  let interactive = true;
  const prompts = [...args];
  if (!process.stdin.isTTY) {
    const piped = await readStdin();
    if (piped.length > 0) prompts.unshift(piped);
    interactive = false;
  }
  const prompt = prompts.join(" ");
  if (prompts.length > 0) interactive = false;
  if (!process.stdout.isTTY) interactive = false;
  // Ollama wraps even into pipes; we wrap only on a terminal so redirected output stays clean.
  const wordWrap = !flagBool(inv, "nowordwrap") && process.stdout.isTTY === true;

  const client = await connectChecked();
  const info = await showOrPull(client, model, insecure);
  const capabilities = info.capabilities ?? [];
  const think = inferThink(capabilities, explicitThink, thinkSet);

  if (capabilities.includes("embedding")) {
    if (prompt === "") throw new CliError(`embedding models require input text. Usage: ollamats run ${model} "your text here"`);
    const resp = await client.embed({
      model,
      input: prompt,
      ...(keepAlive !== undefined ? { keep_alive: keepAlive } : {}),
      ...(truncate !== undefined ? { truncate } : {}),
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
    hideThinking,
    verbose,
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

  await loadOrUnload(client, { model, ...(keepAlive !== undefined ? { keepAlive } : {}), ...(think !== undefined ? { think } : {}) });
  for (const msg of info.messages ?? []) {
    if (msg.role === "user") process.stdout.write(`>>> ${msg.content}\n`);
    else if (msg.role === "assistant") {
      new WrapWriter((s) => void process.stdout.write(s), () => process.stdout.columns ?? 80).display(msg.content, wordWrap);
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
    verbose,
    format: format ?? "",
    think,
    thinkExplicit: thinkSet,
    multiModal,
  };
  // the REPL (and its line editor) is loaded only for an interactive session
  const { runRepl } = await import("../repl.js");
  await runRepl(client, state, {
    hideThinking,
    ...(keepAlive !== undefined ? { keepAlive } : {}),
    noHistory: cliConfig().noHistory,
    editor: cliConfig().editor,
    parseParameter: parseParameterValue,
    inferThink: (caps, s) => inferThink(caps, s.think, s.thinkExplicit),
  });
}
