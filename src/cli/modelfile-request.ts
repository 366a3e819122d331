// Modelfile commands → /api/create request, as Ollama's parser.Modelfile.CreateRequest does it on
// the client: FROM a path that exists becomes `files` (digests computed here, uploaded later),
// FROM anything else becomes `from`; ADAPTER and DRAFT paths become `adapters` and `draft_files`;
// PARAMETERs are typed; LICENSEs collect into an array.

import { createHash } from "node:crypto";
import { readdir, realpath, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { CreateRequest, Message } from "../api/types.js";
import { readChunks, withRegularFile } from "../fs/regular-file.js";
import { splitCommandArgs } from "../registry/modelfile.js";

export interface ModelfileCommand {
  name: string;
  args: string;
}

/** Types one PARAMETER (the registry's parseParameterValue); throws on an unknown key or bad value. */
export type ParameterParser = (key: string, raw: string[]) => unknown;

export type CreateRequestWire = CreateRequest & { requires?: string };

export interface LocalBlob {
  /** Absolute path of the file to upload. */
  path: string;
  /** "sha256:<hex>" */
  digest: string;
  /** Name the server sees (key in `files` / `adapters`). */
  name: string;
}

export interface CreatePlan {
  request: CreateRequestWire;
  files: LocalBlob[];
  adapters: LocalBlob[];
  /** The DRAFT model's file(s), uploaded like FROM files. */
  drafts: LocalBlob[];
  warnings: string[];
}

export const DEPRECATED_PARAMETERS = [
  "penalize_newline",
  "low_vram",
  "f16_kv",
  "logits_all",
  "vocab_only",
  "use_mlock",
  "mirostat",
  "mirostat_tau",
  "mirostat_eta",
];

const KNOWN_COMMANDS = new Set(["model", "from", "template", "system", "license", "adapter", "requires", "message", "parameter", "draft", "renderer", "parser"]);

/** Expand `~`/`~/x` and resolve a Modelfile path relative to the Modelfile's directory. */
export function expandPath(p: string, relativeDir: string, home: string = os.homedir()): string {
  if (path.isAbsolute(p) || p.startsWith("\\") || p.startsWith("/")) return path.resolve(p);
  if (p === "~" || p.startsWith("~/")) return path.resolve(path.join(home, p.slice(1)));
  if (p.startsWith("~")) {
    // ~user/...: only the current user is known without a passwd lookup
    const [user = "", rest = ""] = p.slice(1).split(/\/(.*)/s);
    if (user === os.userInfo().username) return path.resolve(path.join(home, rest));
    throw new Error(`failed to find user '${user}'`);
  }
  return path.resolve(path.join(relativeDir, p));
}

/** sha256 of a regular file, streamed: "sha256:<hex>" (fs/regular-file.ts refuses anything else). */
export async function fileDigest(file: string): Promise<string> {
  return withRegularFile(file, async (f) => {
    const hash = createHash("sha256");
    for await (const chunk of readChunks(f)) hash.update(chunk);
    return `sha256:${hash.digest("hex")}`;
  });
}

async function glob(dir: string, re: RegExp, nested = false): Promise<string[]> {
  const out: string[] = [];
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const full = path.join(dir, e.name);
    if (nested && e.isDirectory()) out.push(...(await glob(full, re)));
    else if (!nested && (e.isFile() || e.isSymbolicLink()) && re.test(e.name)) out.push(full);
  }
  return out;
}

/** The files of a model directory, in Ollama's order of preference (parser.filesForModel). */
async function filesForModel(dir: string): Promise<string[]> {
  const files: string[] = [];
  const choices: Array<[RegExp, boolean]> = [
    [/^model.*\.safetensors$/, true],
    // a LoRA adapter as PEFT or mlx-lm saves it (Ollama's own glob misses these names)
    [/^(adapter_model.*|adapters)\.safetensors$/, false],
    [/^consolidated.*\.safetensors$/, false],
    [/^pytorch_model.*\.bin$/, false],
    [/^consolidated.*\.pth$/, false],
    [/^.*\.gguf$/, false],
    [/^.*\.bin$/, false],
  ];
  for (const [re, withNested] of choices) {
    const found = await glob(dir, re);
    if (found.length > 0) {
      files.push(...found);
      if (withNested) files.push(...(await glob(dir, re, true)));
      break;
    }
  }
  if (files.length === 0) throw new Error("no Modelfile or safetensors files found");
  files.push(...(await glob(dir, /^.*\.json$/)), ...(await glob(dir, /^.*\.json$/, true)));
  files.push(...(await glob(dir, /^chat_template\.jinja$/)));
  const tk = await glob(dir, /^tokenizer\.model$/);
  files.push(...(tk.length > 0 ? tk : await glob(dir, /^tokenizer\.model$/, true)));
  return files;
}

/** Local files behind a path, or null when nothing exists there. */
async function localFiles(p: string): Promise<string[] | null> {
  let info;
  try {
    info = await stat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return null;
    throw err;
  }
  // A safetensors adapter file is useless without the config saved beside it (its scale).
  if (!info.isDirectory()) return /\.safetensors$/.test(p) ? [p, ...(await glob(path.dirname(p), /^adapter_config\.json$/))] : [p];
  const files = await filesForModel(p);
  return Promise.all(files.map((f) => realpath(f)));
}

/** Names the server sees: the base name, or the path below the files' common directory. */
export function requestFileNames(files: string[]): Map<string, string> {
  const names = new Map<string, string>();
  let root: string | undefined;
  if (files.length >= 2) {
    root = path.dirname(path.resolve(files[0]!));
    for (const f of files.slice(1)) {
      const dir = path.dirname(path.resolve(f));
      while (path.relative(root, dir).startsWith("..")) {
        const parent = path.dirname(root);
        if (parent === root) break;
        root = parent;
      }
    }
  }
  for (const f of files) {
    let name = path.basename(f);
    if (root !== undefined) {
      const rel = path.relative(root, path.resolve(f));
      if (rel !== "" && rel !== "." && !rel.startsWith("..")) name = rel;
    }
    names.set(f, path.posix.normalize(name.split(path.sep).join("/")));
  }
  return names;
}


function splitMessage(args: string): Message {
  const colon = /^(system|user|assistant): ([\s\S]*)$/.exec(args);
  if (colon) return { role: colon[1]!, content: colon[2]! };
  const space = /^(\S+)\s+([\s\S]*)$/.exec(args);
  if (space) return { role: space[1]!.replace(/:$/, ""), content: space[2]! };
  return { role: args.replace(/:$/, ""), content: "" };
}

async function blobs(p: string, digest: (f: string) => Promise<string>): Promise<LocalBlob[] | null> {
  const files = await localFiles(p);
  if (files === null) return null;
  return Promise.all(files.map(async (f) => ({ path: f, digest: await digest(f), name: path.basename(f) })));
}

function named(list: LocalBlob[]): LocalBlob[] {
  const names = requestFileNames(list.map((b) => b.path));
  return list.map((b) => ({ ...b, name: names.get(b.path) ?? b.name }));
}

/**
 * Build the create request for `commands` of a Modelfile that lives in `relativeDir`.
 * `digest` is injectable for tests; it defaults to a streamed sha256 of the file.
 */
export async function buildCreatePlan(
  commands: ModelfileCommand[],
  relativeDir: string,
  parseParameter: ParameterParser,
  digest: (file: string) => Promise<string> = fileDigest,
): Promise<CreatePlan> {
  const request: CreateRequestWire = {};
  const files: LocalBlob[] = [];
  const adapters: LocalBlob[] = [];
  const drafts: LocalBlob[] = [];
  const warnings: string[] = [];
  const messages: Message[] = [];
  const licenses: string[] = [];
  const params: Record<string, unknown> = {};

  const addParameter = (key: string, value: string) => {
    if (DEPRECATED_PARAMETERS.includes(key)) {
      warnings.push(`warning: parameter ${key} is deprecated`);
      return;
    }
    const typed = parseParameter(key, [value]);
    const prev = params[key];
    if (Array.isArray(prev) && Array.isArray(typed)) params[key] = [...prev, ...typed];
    else params[key] = typed;
  };

  for (const c of commands) {
    const name = c.name.toLowerCase();
    switch (name) {
      case "model":
      case "from": {
        const found = await blobs(expandPath(c.args, relativeDir), digest);
        if (found === null) request.from = c.args;
        else files.push(...found);
        break;
      }
      case "adapter":
      case "draft": {
        const p = expandPath(c.args, relativeDir);
        const found = await blobs(p, digest);
        if (found === null) throw new Error(`stat ${p}: no such file or directory`);
        const into = name === "adapter" ? adapters : drafts;
        into.splice(0, into.length, ...found);
        break;
      }
      case "template":
        request.template = c.args;
        break;
      case "system":
        request.system = c.args;
        break;
      case "license":
        licenses.push(c.args);
        break;
      case "requires": {
        const v = c.args.replace(/^v/, "");
        if (!/^\d+(\.\d+){0,2}(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(v)) {
          throw new Error("requires must be a valid semver (e.g. 0.14.0)");
        }
        request.requires = v;
        break;
      }
      case "message":
        messages.push(splitMessage(c.args));
        break;
      case "parameter": {
        const [key, value] = splitCommandArgs(c.args);
        addParameter(key, value);
        break;
      }
      default:
        if (KNOWN_COMMANDS.has(name)) {
          warnings.push(`warning: ${name.toUpperCase()} is not supported by ollamats and was ignored`);
        } else {
          // A parser that names PARAMETER commands by their key (as Ollama's does).
          addParameter(c.name, c.args);
        }
    }
  }

  const namedFiles = named(files);
  const namedAdapters = named(adapters);
  const namedDrafts = named(drafts);
  if (namedFiles.length > 0) request.files = Object.fromEntries(namedFiles.map((f) => [f.name, f.digest]));
  if (namedAdapters.length > 0) request.adapters = Object.fromEntries(namedAdapters.map((f) => [f.name, f.digest]));
  if (namedDrafts.length > 0) request.draft_files = Object.fromEntries(namedDrafts.map((f) => [f.name, f.digest]));
  if (Object.keys(params).length > 0) request.parameters = params;
  if (messages.length > 0) request.messages = messages;
  if (licenses.length > 0) request.license = licenses;
  return { request, files: namedFiles, adapters: namedAdapters, drafts: namedDrafts, warnings };
}
