// The command line read as cobra/pflag (Ollama's CLI libraries) read it, without a framework: the
// command table is data (commands.ts), so `--help`, errors and suggestions need no command module
// loaded, and start-up stays cheap. Pure: no I/O.
//
// Rules (pflag): flags may come anywhere among the arguments; `--` ends them; `--name=value`,
// `--name value`, `-n value`, `-nvalue`, clustered booleans (`-vh`); a string flag with a
// `noOptDefault` takes no separate value (`--think` alone means `--think=true`).

import { suggestionsFor } from "./suggest.js";

export const NAME = "ollamats";

export type FlagType = "bool" | "string" | "strings";
export type FlagValue = boolean | string | string[];

export interface FlagSpec {
  name: string;
  short?: string;
  type: FlagType;
  describe: string;
  default?: boolean | string;
  /** pflag's NoOptDefVal: the value when the flag is given without `=value`. */
  noOptDefault?: string;
  choices?: readonly string[];
  /** `--no-<name>` sets a boolean flag to false. */
  negatable?: boolean;
}

export interface Invocation {
  /** The command names from the root down (`["service", "install"]`). */
  path: string[];
  positionals: string[];
  /** Every flag of the command: given, or its default. */
  flags: Record<string, FlagValue | undefined>;
  /** Flags given on the command line. */
  given: ReadonlySet<string>;
}

export type Handler = (inv: Invocation) => Promise<void>;

export interface CommandSpec {
  name: string;
  aliases?: readonly string[];
  /** The positionals as help shows them: `<model> [prompt..]`. */
  usage?: string;
  describe: string;
  /** How many positionals are accepted. */
  args?: { min: number; max: number };
  flags?: readonly FlagSpec[];
  epilogue?: string;
  subcommands?: readonly CommandSpec[];
  /** The error when a command made of subcommands is given none. */
  needsSubcommand?: string;
  load?: () => Promise<Handler>;
}

export type Parsed =
  | { kind: "run"; spec: CommandSpec; inv: Invocation }
  | { kind: "help"; path: CommandSpec[] }
  | { kind: "error"; message: string };

export const HELP_FLAG: FlagSpec = { name: "help", short: "h", type: "bool", describe: "Show help" };

class UsageError extends Error {}

const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** Go's strconv.ParseBool, with pflag's error text. */
function parseBool(value: string, flag: string): boolean {
  if (TRUE.has(value)) return true;
  if (FALSE.has(value)) return false;
  throw new UsageError(`invalid argument ${JSON.stringify(value)} for "${flag}" flag: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
}

function didYouMean(items: string[]): string {
  return items.length === 0 ? "" : `\n\nDid you mean this?\n${items.map((s) => `\t${s}\n`).join("")}`;
}

function commandNames(list: readonly CommandSpec[]): string[] {
  return list.map((c) => c.name);
}

function findCommand(list: readonly CommandSpec[], token: string): CommandSpec | undefined {
  return list.find((c) => c.name === token || (c.aliases ?? []).includes(token));
}

/** `ollamats service`: the command path as cobra's CommandPath prints it. */
function commandPath(path: CommandSpec[]): string {
  return [NAME, ...path.map((c) => c.name)].join(" ");
}

class FlagReader {
  readonly values: Record<string, FlagValue | undefined> = {};
  readonly given = new Set<string>();

  constructor(private readonly flags: readonly FlagSpec[]) {
    for (const f of flags) this.values[f.name] = f.type === "strings" ? [] : f.default;
  }

  private set(f: FlagSpec, value: string | boolean, shown: string): void {
    this.given.add(f.name);
    if (typeof value === "string" && f.choices && !f.choices.includes(value)) {
      throw new UsageError(`invalid argument ${JSON.stringify(value)} for "${shown}" flag: must be one of ${f.choices.join(", ")}`);
    }
    if (f.type === "strings") (this.values[f.name] as string[]).push(String(value));
    else this.values[f.name] = value;
  }

  /** `--name[=value]`; returns how many following tokens it consumed. */
  long(token: string, next: string | undefined): number {
    const eq = token.indexOf("=");
    const name = token.slice(2, eq < 0 ? undefined : eq);
    const inline = eq < 0 ? undefined : token.slice(eq + 1);
    let f = this.flags.find((x) => x.name === name);
    if (!f && name.startsWith("no-")) {
      const negated = this.flags.find((x) => x.name === name.slice(3) && x.negatable === true);
      if (negated && inline === undefined) {
        this.set(negated, false, `--${negated.name}`);
        return 0;
      }
    }
    if (!f) {
      const hint = suggestionsFor(name, this.flags.filter((x) => x !== HELP_FLAG).map((x) => x.name)).map((s) => `--${s}`);
      throw new UsageError(`unknown flag: --${name}${didYouMean(hint)}`);
    }
    const shown = `--${f.name}`;
    if (f.type === "bool") {
      this.set(f, inline === undefined ? true : parseBool(inline, shown), shown);
      return 0;
    }
    if (inline !== undefined) {
      this.set(f, inline, shown);
      return 0;
    }
    if (f.noOptDefault !== undefined) {
      this.set(f, f.noOptDefault, shown);
      return 0;
    }
    if (next === undefined) throw new UsageError(`flag needs an argument: ${shown}`);
    this.set(f, next, shown);
    return 1;
  }

  /** `-abc`, `-fvalue`, `-f value`, `-f=value`; returns how many following tokens it consumed. */
  short(token: string, next: string | undefined): number {
    for (let i = 1; i < token.length; i++) {
      const c = token[i]!;
      const f = this.flags.find((x) => x.short === c);
      if (!f) throw new UsageError(`unknown shorthand flag: '${c}' in ${token}`);
      const rest = token.slice(i + 1);
      const shown = `-${c}, --${f.name}`;
      if (f.type === "bool") {
        if (rest.startsWith("=")) {
          this.set(f, parseBool(rest.slice(1), shown), shown);
          return 0;
        }
        this.set(f, true, shown);
        continue;
      }
      if (rest !== "") {
        this.set(f, rest.startsWith("=") ? rest.slice(1) : rest, shown);
        return 0;
      }
      if (f.noOptDefault !== undefined) {
        this.set(f, f.noOptDefault, shown);
        return 0;
      }
      if (next === undefined) throw new UsageError(`flag needs an argument: '${c}' in ${token}`);
      this.set(f, next, shown);
      return 1;
    }
    return 0;
  }
}

function isFlag(token: string): boolean {
  return token.length > 1 && token.startsWith("-");
}

/**
 * Find the command: walk down the table by the first non-flag token at each level that has
 * subcommands. Returns the path and the tokens left for the command's own parsing.
 */
function locate(root: CommandSpec, args: string[]): { path: CommandSpec[]; rest: string[]; help: boolean } {
  const path: CommandSpec[] = [];
  let level = root;
  let rest = [...args];
  let help = false;
  // `help [command...]`: help for that command (cobra's help command)
  const first = rest.findIndex((t) => !isFlag(t));
  if (first >= 0 && rest[first] === "help" && rest.slice(0, first).every((t) => t !== "--")) {
    help = true;
    rest.splice(first, 1);
  }
  for (;;) {
    const subs = level.subcommands;
    if (!subs || subs.length === 0) break;
    const end = rest.indexOf("--");
    const i = rest.findIndex((t, k) => (end < 0 || k < end) && !isFlag(t));
    if (i < 0) break;
    const token = rest[i]!;
    const next = findCommand(subs, token);
    if (!next) {
      const where = commandPath(path);
      const names = [...commandNames(subs), ...(path.length === 0 ? ["help"] : [])];
      throw new UsageError(`unknown command ${JSON.stringify(token)} for ${JSON.stringify(where)}${didYouMean(suggestionsFor(token, names))}`);
    }
    path.push(next);
    rest.splice(i, 1);
    level = next;
  }
  if (help) rest = rest.filter((t) => t !== "-h" && t !== "--help");
  return { path, rest, help };
}

/** Parse `args` (process.argv without node and the script) against the command table. */
export function parseCommandLine(root: CommandSpec, args: string[]): Parsed {
  try {
    const { path, rest, help } = locate(root, args);
    if (help) return { kind: "help", path };
    const spec = path[path.length - 1] ?? root;
    const reader = new FlagReader([HELP_FLAG, ...(spec.flags ?? [])]);
    const positionals: string[] = [];
    for (let i = 0; i < rest.length; i++) {
      const t = rest[i]!;
      if (t === "--") {
        positionals.push(...rest.slice(i + 1));
        break;
      }
      if (t.startsWith("--")) i += reader.long(t, rest[i + 1]);
      else if (isFlag(t)) i += reader.short(t, rest[i + 1]);
      else positionals.push(t);
    }
    if (reader.values.help === true) return { kind: "help", path };
    delete reader.values.help;
    if (!spec.load) throw new UsageError(spec.needsSubcommand ?? "requires a subcommand");
    const { min, max } = spec.args ?? { min: 0, max: 0 };
    if (positionals.length < min) throw new UsageError(`requires at least ${min} arg(s), only received ${positionals.length}`);
    if (positionals.length > max) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[max])} for ${JSON.stringify(commandPath(path))}`);
    return { kind: "run", spec, inv: { path: path.map((c) => c.name), positionals, flags: reader.values, given: reader.given } };
  } catch (err) {
    if (err instanceof UsageError) return { kind: "error", message: err.message };
    throw err;
  }
}

// ---- typed access for handlers --------------------------------------------------------------

export function flagBool(inv: Invocation, name: string): boolean {
  return inv.flags[name] === true;
}

export function flagString(inv: Invocation, name: string): string | undefined {
  const v = inv.flags[name];
  return typeof v === "string" ? v : undefined;
}

export function flagStrings(inv: Invocation, name: string): string[] {
  const v = inv.flags[name];
  return Array.isArray(v) ? v : [];
}
