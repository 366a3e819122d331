// Help text from the command table (the layout the CLI has always printed): the usage line, the
// description, the subcommands, the flags with their type and default, and the command's
// environment variables.

import { HELP_FLAG, NAME, type CommandSpec, type FlagSpec } from "./command-line.js";

function columns(rows: [string, string][], indent = "  ", gap = 2): string {
  const width = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `${indent}${b === "" ? a : a.padEnd(width + gap) + b}`.trimEnd() + "\n").join("");
}

function flagNotes(f: FlagSpec): string {
  const notes = [f.type === "bool" ? "[boolean]" : f.type === "strings" ? "[array]" : "[string]"];
  if (f.choices) notes.push(`[choices: ${f.choices.map((c) => JSON.stringify(c)).join(", ")}]`);
  if (f.default !== undefined) notes.push(`[default: ${String(f.default)}]`);
  return notes.join(" ");
}

function flagRows(flags: readonly FlagSpec[]): [string, string][] {
  return flags.map((f) => [`${f.short ? `-${f.short}, ` : "    "}--${f.name}`, `${f.describe}  ${flagNotes(f)}`]);
}

function commandRows(prefix: string, list: readonly CommandSpec[]): [string, string][] {
  return list.map((c) => {
    const aliases = c.aliases && c.aliases.length > 0 ? `  [aliases: ${c.aliases.join(", ")}]` : "";
    return [`${prefix} ${c.name}${c.usage ? ` ${c.usage}` : ""}`, c.describe + aliases];
  });
}

/** Help for the command at `path` (empty: the root). */
export function helpText(root: CommandSpec, path: CommandSpec[]): string {
  const spec = path[path.length - 1] ?? root;
  const prefix = [NAME, ...path.map((c) => c.name)].join(" ");
  let out = "";
  if (path.length === 0) out += `${root.describe}\n\nUsage: ${NAME} [command] [flags]\n\n`;
  else out += `${prefix}${spec.usage ? ` ${spec.usage}` : ""}\n\n${spec.describe}\n\n`;
  if (spec.subcommands && spec.subcommands.length > 0) {
    const extra: CommandSpec[] = path.length === 0 ? [{ name: "help", usage: "[command]", describe: "Help about any command" }] : [];
    out += `Commands:\n${columns(commandRows(prefix, [...spec.subcommands, ...extra]))}\n`;
  }
  out += `Options:\n${columns(flagRows([HELP_FLAG, ...(spec.flags ?? [])]))}`;
  if (spec.epilogue) out += `\n${spec.epilogue}\n`;
  return out;
}
